package capture

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestFrame builds a request the way a client does: header v1 (key, version, correlation id,
// client id) or v2 (plus an empty tagged-field section) for flexible versions, then the body.
func requestFrame(req kmsg.Request, clientID string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, 42)
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

func batch(codec int16, producerID int64, n int32) []byte {
	rb := kmsg.RecordBatch{Magic: 2, Attributes: codec, ProducerID: producerID, NumRecords: n, LastOffsetDelta: n - 1,
		FirstSequence: -1, Records: []byte{}}
	raw := rb.AppendTo(nil)
	// AppendTo leaves Length as given; fix it to the bytes after the length field.
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	return raw
}

func TestParseRequest(t *testing.T) {
	produce := func(version int16, acks int16, batches ...[]byte) kmsg.Request {
		r := kmsg.NewPtrProduceRequest()
		r.SetVersion(version)
		r.Acks = acks
		r.TimeoutMillis = 1000
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "t"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition = 2
		for _, b := range batches {
			pp.Records = append(pp.Records, b...)
		}
		tp.Partitions = append(tp.Partitions, pp)
		r.Topics = append(r.Topics, tp)
		return r
	}
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	apiVersions.SetVersion(3)
	apiVersions.ClientSoftwareName = "x"
	apiVersions.ClientSoftwareVersion = "1"
	tests := []struct {
		name        string
		req         kmsg.Request
		wantAPI     string
		wantBatches []BatchInfo
		wantAcks    int16
	}{
		{name: "ApiVersions v3 (flexible header)", req: apiVersions, wantAPI: "ApiVersions"},
		{name: "Produce v7 two batches", req: produce(7, -1, batch(1, -1, 3), batch(4, 9, 1)), wantAPI: "Produce", wantAcks: -1,
			wantBatches: []BatchInfo{{Topic: "t", Partition: 2, Magic: 2, Codec: "gzip", ProducerID: -1, Records: 3},
				{Topic: "t", Partition: 2, Magic: 2, Codec: "zstd", ProducerID: 9, Records: 1}}},
		{name: "Produce v10 flexible acks 0", req: produce(10, 0, batch(2, 5, 2)), wantAPI: "Produce", wantAcks: 0,
			wantBatches: []BatchInfo{{Topic: "t", Partition: 2, Magic: 2, Codec: "snappy", ProducerID: 5, Records: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRequest(requestFrame(tt.req, "cid"))
			if err != nil {
				t.Fatal(err)
			}
			if got.API != tt.wantAPI || got.Version != tt.req.GetVersion() || got.ClientID != "cid" {
				t.Fatalf("got %+v", got)
			}
			if tt.wantAPI != "Produce" {
				if got.Produce != nil {
					t.Fatalf("non-produce request has produce info %+v", got.Produce)
				}
				return
			}
			if got.Produce == nil || got.Produce.Acks != tt.wantAcks {
				t.Fatalf("produce info %+v, want acks %d", got.Produce, tt.wantAcks)
			}
			if len(got.Produce.Batches) != len(tt.wantBatches) {
				t.Fatalf("batches %+v, want %+v", got.Produce.Batches, tt.wantBatches)
			}
			for i := range tt.wantBatches {
				if got.Produce.Batches[i] != tt.wantBatches[i] {
					t.Errorf("batch %d: %+v, want %+v", i, got.Produce.Batches[i], tt.wantBatches[i])
				}
			}
		})
	}
	if _, err := parseRequest([]byte{0, 1, 2}); err == nil {
		t.Error("a 3-byte request was accepted")
	}
}

func TestRewriteMetadata(t *testing.T) {
	p := &Proxy{host: "127.0.0.9", port: 4242}
	for _, version := range []int16{1, 8, 12, 13} {
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(version)
		for id := int32(1); id <= 2; id++ {
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = id, "broker.internal", 9092
			resp.Brokers = append(resp.Brokers, b)
		}
		frame := binary.BigEndian.AppendUint32(nil, 7) // correlation id
		if resp.IsFlexible() {
			frame = append(frame, 0)
		}
		frame = resp.AppendTo(frame)
		out, err := p.rewrite(frame, pendingResp{key: 3, version: version})
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if binary.BigEndian.Uint32(out) != 7 {
			t.Fatalf("v%d: correlation id lost", version)
		}
		hdr := 4
		if resp.IsFlexible() {
			hdr = 5
		}
		back := kmsg.NewPtrMetadataResponse()
		back.SetVersion(version)
		if err := back.ReadFrom(out[hdr:]); err != nil {
			t.Fatalf("v%d: rewritten response does not parse: %v", version, err)
		}
		for _, b := range back.Brokers {
			if b.Host != "127.0.0.9" || b.Port != 4242 {
				t.Fatalf("v%d: broker %d still at %s:%d", version, b.NodeID, b.Host, b.Port)
			}
		}
	}
}

func BenchmarkParseProduceRequest(b *testing.B) {
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(9)
	r.Acks = -1
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "t"
	for p := int32(0); p < 8; p++ {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition = p
		pp.Records = batch(4, 1, 100)
		tp.Partitions = append(tp.Partitions, pp)
	}
	r.Topics = append(r.Topics, tp)
	frame := requestFrame(r, "bench")
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := parseRequest(frame); err != nil {
			b.Fatal(err)
		}
	}
}
