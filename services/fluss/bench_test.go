package fluss

import (
	"bufio"
	"bytes"
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

func produceRequest(records []byte, buckets int) *flussrpc.ProduceLogRequest {
	req := &flussrpc.ProduceLogRequest{Acks: proto.Int32(-1), TableId: proto.Int64(42), TimeoutMs: proto.Int32(30000)}
	for b := 0; b < buckets; b++ {
		req.BucketsReq = append(req.BucketsReq, &flussrpc.ProduceLogRequestBucket{BucketId: proto.Int32(int32(b)), Records: records})
	}
	return req
}

// BenchmarkEncodeProduceFrame measures building one ProduceLog request frame
// (4 buckets of 64 KiB) into a reused buffer, as the client does.
func BenchmarkEncodeProduceFrame(b *testing.B) {
	req := produceRequest(make([]byte, 64<<10), 4)
	buf := make([]byte, 0, 300<<10)
	b.ReportAllocs()
	b.SetBytes(4 * 64 << 10)
	for b.Loop() {
		var err error
		buf, err = appendRequestFrame(buf[:0], APIProduceLog, 0, 7, req)
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeProduceResponseFrame measures reading, splitting and
// decoding one ProduceLog response frame.
func BenchmarkDecodeProduceResponseFrame(b *testing.B) {
	resp := &flussrpc.ProduceLogResponse{}
	for i := 0; i < 4; i++ {
		resp.BucketsResp = append(resp.BucketsResp, &flussrpc.ProduceLogResponseBucket{
			BucketId: proto.Int32(int32(i)), BaseOffset: proto.Int64(int64(i) * 1000)})
	}
	body, _ := proto.Marshal(resp)
	frame := responseFrame(respSuccess, 7, body)
	rd := bytes.NewReader(frame)
	br := bufio.NewReader(rd)
	buf := make([]byte, 0, 1024)
	var out flussrpc.ProduceLogResponse
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		rd.Reset(frame)
		br.Reset(rd)
		payload, err := readFrame(br, buf, DefaultMaxFrameSize)
		if err != nil {
			b.Fatal(err)
		}
		r, err := parseResponse(payload)
		if err != nil {
			b.Fatal(err)
		}
		out.Reset()
		if err := proto.Unmarshal(r.body, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTripPipelined measures request/response round trips over one
// loopback connection to the fake server, many callers at once.
func BenchmarkRoundTripPipelined(b *testing.B) {
	s := newFakeServer(b, func(fc *fakeConn, req fakeRequest) { listDBs(fc, req, "a") })
	c, err := Dial(context.Background(), s.addr(), WithLogger(quietLogger()))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.ListDatabases(context.Background()); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkProduceLog measures a whole ProduceLog call (routing, encoding,
// round trip over loopback, result mapping) for 2 buckets of 16 KiB against
// the fake cluster.
func BenchmarkProduceLog(b *testing.B) {
	cl := newFakeCluster(b, func(req *flussrpc.ProduceLogRequest) *flussrpc.ProduceLogResponse {
		resp := &flussrpc.ProduceLogResponse{}
		for _, br := range req.GetBucketsReq() {
			resp.BucketsResp = append(resp.BucketsResp, &flussrpc.ProduceLogResponseBucket{BucketId: br.BucketId, BaseOffset: proto.Int64(1)})
		}
		return resp
	})
	c, err := Dial(context.Background(), cl.addr(), WithLogger(quietLogger()))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.GetTableInfo(ctx, TablePath{"db", "t"}); err != nil {
		b.Fatal(err)
	}
	batches := []BucketBatch{{Bucket: 0, Records: make([]byte, 16<<10)}, {Bucket: 1, Records: make([]byte, 16<<10)}}
	b.ReportAllocs()
	b.SetBytes(32 << 10)
	for b.Loop() {
		res, err := c.ProduceLog(ctx, 77, AcksAll, time.Second, batches)
		if err != nil || res[0].Err != nil || res[1].Err != nil {
			b.Fatal(err, res)
		}
	}
}
