package fluss

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

func TestPutKvRoutesAndMapsResults(t *testing.T) {
	cl := newFakeCluster(t, nil)
	cl.kvAnswer = func(req *flussrpc.PutKvRequest) *flussrpc.PutKvResponse {
		return &flussrpc.PutKvResponse{BucketsResp: []*flussrpc.PutKvResponseBucket{
			{BucketId: proto.Int32(1), ErrorCode: proto.Int32(int32(CodeNonPrimaryKeyTable)), ErrorMessage: proto.String("log table")},
			{BucketId: proto.Int32(0), LogEndOffset: proto.Int64(12)},
		}}
	}
	c := dialFake(t, cl.fakeServer)
	ctx := shortCtx(t)
	if _, err := c.PutKv(ctx, 77, AcksAll, time.Second, []BucketBatch{{Bucket: 0, Records: []byte{1}}}); !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("before GetTableInfo: err = %v, want ErrUnknownTable", err)
	}
	if _, err := c.GetTableInfo(ctx, TablePath{"db", "t"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]BucketBatch{
		{{Bucket: 0, Records: []byte{1}}, {Bucket: 0, Records: []byte{2}}},
		{{Bucket: 0}},
	} {
		if _, err := c.PutKv(ctx, 77, AcksAll, time.Second, bad); err == nil {
			t.Errorf("batches %v accepted", bad)
		}
	}
	if _, err := c.PutKv(ctx, 77, Acks(2), time.Second, []BucketBatch{{Bucket: 0, Records: []byte{1}}}); err == nil {
		t.Error("acks 2 accepted")
	}
	res, err := c.PutKv(ctx, 77, AcksLeader, 2*time.Second, []BucketBatch{
		{Bucket: 0, Records: []byte("kv-0")},
		{Bucket: 1, Records: []byte("kv-1")},
		{Bucket: 2, Records: []byte("kv-2")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].LogEndOffset != 12 || res[0].Err != nil {
		t.Errorf("bucket 0: %+v", res[0])
	}
	if CodeOf(res[1].Err) != CodeNonPrimaryKeyTable || res[1].LogEndOffset != -1 {
		t.Errorf("bucket 1: %+v", res[1])
	}
	if !errors.Is(res[2].Err, ErrNoLeader) {
		t.Errorf("bucket 2 (no leader): %+v", res[2])
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if len(cl.putKv) != 1 || len(cl.produced) != 0 {
		t.Fatalf("%d put kv and %d produce requests, want 1 and 0", len(cl.putKv), len(cl.produced))
	}
	r := cl.putKv[0]
	if r.GetAcks() != 1 || r.GetTableId() != 77 || r.GetTimeoutMs() != 2000 || len(r.GetTargetColumns()) != 0 ||
		r.AggMode == nil || r.GetAggMode() != 0 || len(r.GetBucketsReq()) != 2 {
		t.Errorf("request %v", r)
	}
}

func TestPutKvMissingBucketOrOffsetIsProtocolError(t *testing.T) {
	cl := newFakeCluster(t, nil)
	cl.kvAnswer = func(req *flussrpc.PutKvRequest) *flussrpc.PutKvResponse {
		// Bucket 1 answered without an offset; bucket 0 not at all.
		return &flussrpc.PutKvResponse{BucketsResp: []*flussrpc.PutKvResponseBucket{{BucketId: proto.Int32(1)}}}
	}
	c := dialFake(t, cl.fakeServer)
	ctx := shortCtx(t)
	if _, err := c.GetTableInfo(ctx, TablePath{"db", "t"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.PutKv(ctx, 77, AcksAll, time.Second, []BucketBatch{{Bucket: 0, Records: []byte{1}}, {Bucket: 1, Records: []byte{2}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !errors.Is(r.Err, ErrProtocol) {
			t.Errorf("bucket %d: %+v, want ErrProtocol", r.Bucket, r)
		}
	}
}
