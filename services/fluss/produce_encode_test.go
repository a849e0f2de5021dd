package fluss

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

// TestProduceEncoderMatchesProtoMarshal checks the hand-rolled, copy-free
// ProduceLogRequest and PutKvRequest encodings byte for byte against the
// generated code.
func TestProduceEncoderMatchesProtoMarshal(t *testing.T) {
	pid := func(v int64) *int64 { return &v }
	big := bytes.Repeat([]byte{0xAB}, 300) // length needs a 2-byte varint
	tests := []struct {
		name    string
		acks    Acks
		tableID int64
		timeout int32
		batches []BucketBatch
	}{
		{"acks all, one bucket", AcksAll, 42, 30000, []BucketBatch{{Bucket: 0, Records: []byte{1, 2, 3}}}},
		{"acks none, no buckets", AcksNone, 1, 1, nil},
		{"acks leader, partitions", AcksLeader, 1 << 40, 1 << 30, []BucketBatch{
			{PartitionID: pid(0), Bucket: 3, Records: big},
			{PartitionID: pid(1 << 50), Bucket: 1 << 20, Records: []byte{9}},
			{Bucket: 127, Records: big[:128]},
		}},
		{"records in parts", AcksAll, 7, 100, []BucketBatch{
			{Bucket: 0, Parts: [][]byte{{1, 2}, big, nil, {3}}},
			{PartitionID: pid(5), Bucket: 1, Records: []byte{4}},
			{Bucket: 2, Parts: [][]byte{big[:100], big[:100]}},
		}},
	}
	recordsOf := func(b BucketBatch) []byte {
		if b.Parts == nil {
			return b.Records
		}
		return bytes.Join(b.Parts, nil)
	}
	var e produceEncoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idxs := make([]int, len(tt.batches))
			req := &flussrpc.ProduceLogRequest{Acks: proto.Int32(int32(tt.acks)), TableId: proto.Int64(tt.tableID), TimeoutMs: proto.Int32(tt.timeout)}
			for i, b := range tt.batches {
				idxs[i] = i
				req.BucketsReq = append(req.BucketsReq, &flussrpc.ProduceLogRequestBucket{PartitionId: b.PartitionID, BucketId: proto.Int32(b.Bucket), Records: recordsOf(b)})
			}
			want, err := marshalOpts.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			got := bytes.Join(e.encode(tt.acks, tt.tableID, tt.timeout, tt.batches, idxs), nil)
			if !bytes.Equal(got, want) {
				t.Errorf("encoding differs\n got %x\nwant %x", got, want)
			}

			kv := &flussrpc.PutKvRequest{Acks: req.Acks, TableId: req.TableId, TimeoutMs: req.TimeoutMs, AggMode: proto.Int32(0)}
			for _, b := range tt.batches {
				kv.BucketsReq = append(kv.BucketsReq, &flussrpc.PutKvRequestBucket{PartitionId: b.PartitionID, BucketId: proto.Int32(b.Bucket), Records: recordsOf(b)})
			}
			if want, err = marshalOpts.Marshal(kv); err != nil {
				t.Fatal(err)
			}
			if got := bytes.Join(e.encodePutKv(tt.acks, tt.tableID, tt.timeout, tt.batches, idxs), nil); !bytes.Equal(got, want) {
				t.Errorf("PutKv encoding differs\n got %x\nwant %x", got, want)
			}
		})
	}
	// Records and parts are referenced, not copied.
	recs, head, tail := []byte("records"), []byte("head"), []byte("tail")
	parts := e.encode(AcksAll, 1, 1, []BucketBatch{{Bucket: 0, Records: recs}, {Bucket: 1, Parts: [][]byte{head, tail}}}, []int{0, 1})
	for _, want := range [][]byte{recs, head, tail} {
		found := false
		for _, p := range parts {
			found = found || (len(p) > 0 && &p[0] == &want[0])
		}
		if !found {
			t.Errorf("%q was copied into the encoding", want)
		}
	}
}

func BenchmarkProduceEncoder(b *testing.B) {
	batches := []BucketBatch{{Bucket: 0, Records: make([]byte, 1<<20)}, {Bucket: 1, Records: make([]byte, 1<<20)}}
	var e produceEncoder
	b.ReportAllocs()
	for b.Loop() {
		_ = e.encode(AcksAll, 42, 30000, batches, []int{0, 1})
	}
}
