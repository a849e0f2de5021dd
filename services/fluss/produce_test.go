package fluss

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

// fakeCluster is a fake server playing coordinator and tablet server 5 for
// table 77 (db.t), with three buckets; bucket 2 has no leader.
type fakeCluster struct {
	*fakeServer
	mu          sync.Mutex
	metadataReq int
	produced    []*flussrpc.ProduceLogRequest
	answer      func(req *flussrpc.ProduceLogRequest) *flussrpc.ProduceLogResponse
	// putKv and kvAnswer are PutKv's: requests seen, and how to answer.
	putKv    []*flussrpc.PutKvRequest
	kvAnswer func(req *flussrpc.PutKvRequest) *flussrpc.PutKvResponse
}

// newFakeCluster starts the fake; answer (nil when the test produces
// nothing) builds each ProduceLog response.
func newFakeCluster(t testing.TB, answer func(req *flussrpc.ProduceLogRequest) *flussrpc.ProduceLogResponse) *fakeCluster {
	cl := &fakeCluster{answer: answer}
	cl.fakeServer = newFakeServer(t, cl.handle)
	return cl
}

func (cl *fakeCluster) handle(fc *fakeConn, req fakeRequest) {
	host, portStr, _ := net.SplitHostPort(fc.srv.addr())
	port, _ := strconv.Atoi(portStr)
	switch req.key {
	case APIGetTableInfo:
		tableJSON := []byte(`{"version":1,"schema":{"version":1,"columns":[{"name":"v","data_type":{"type":"BIGINT"},"id":0}],"highest_field_id":0},"partition_key":[],"bucket_key":[],"bucket_count":3,"properties":{},"custom_properties":{}}`)
		fc.success(req.id, &flussrpc.GetTableInfoResponse{TableId: proto.Int64(77), SchemaId: proto.Int32(1),
			TableJson: tableJSON, CreatedTime: proto.Int64(1), ModifiedTime: proto.Int64(2)})
	case APIGetMetadata:
		cl.mu.Lock()
		cl.metadataReq++
		cl.mu.Unlock()
		fc.success(req.id, &flussrpc.GetMetadataResponse{
			CoordinatorServer: &flussrpc.ServerNode{NodeId: proto.Int32(0), Host: proto.String(host), Port: proto.Int32(int32(port))},
			TabletServers:     []*flussrpc.ServerNode{{NodeId: proto.Int32(5), Host: proto.String(host), Port: proto.Int32(int32(port))}},
			TableMetadata: []*flussrpc.TableMetadata{{
				TablePath: TablePath{"db", "t"}.pb(), TableId: proto.Int64(77), SchemaId: proto.Int32(1),
				TableJson: []byte("{}"), CreatedTime: proto.Int64(1), ModifiedTime: proto.Int64(2),
				BucketMetadata: []*flussrpc.BucketMetadata{
					{BucketId: proto.Int32(2), ReplicaId: []int32{5}},
					{BucketId: proto.Int32(0), LeaderId: proto.Int32(5), ReplicaId: []int32{5}},
					{BucketId: proto.Int32(1), LeaderId: proto.Int32(5), ReplicaId: []int32{5}},
				},
			}},
		})
	case APIProduceLog:
		var in flussrpc.ProduceLogRequest
		if err := proto.Unmarshal(req.body, &in); err != nil {
			fc.srv.t.Errorf("produce request: %v", err)
		}
		cl.mu.Lock()
		cl.produced = append(cl.produced, &in)
		cl.mu.Unlock()
		fc.success(req.id, cl.answer(&in))
	case APIPutKv:
		var in flussrpc.PutKvRequest
		if err := proto.Unmarshal(req.body, &in); err != nil {
			fc.srv.t.Errorf("put kv request: %v", err)
		}
		cl.mu.Lock()
		cl.putKv = append(cl.putKv, &in)
		cl.mu.Unlock()
		fc.success(req.id, cl.kvAnswer(&in))
	default:
		fc.errorResp(req.id, CodeUnsupportedVersion, "not in this fake")
	}
}

func (cl *fakeCluster) metadataRequests() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.metadataReq
}

func TestProduceLogRoutesAndMapsResults(t *testing.T) {
	cl := newFakeCluster(t, func(req *flussrpc.ProduceLogRequest) *flussrpc.ProduceLogResponse {
		// Answer in a different order than asked, one bucket failing.
		return &flussrpc.ProduceLogResponse{BucketsResp: []*flussrpc.ProduceLogResponseBucket{
			{BucketId: proto.Int32(1), ErrorCode: proto.Int32(int32(CodeNotLeaderOrFollower)), ErrorMessage: proto.String("moved")},
			{BucketId: proto.Int32(0), BaseOffset: proto.Int64(10)},
		}}
	})
	c := dialFake(t, cl.fakeServer)
	ctx := shortCtx(t)

	if _, err := c.ProduceLog(ctx, 77, AcksAll, time.Second, []BucketBatch{{Bucket: 0, Records: []byte{1}}}); !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("before GetTableInfo: err = %v, want ErrUnknownTable", err)
	}
	info, err := c.GetTableInfo(ctx, TablePath{"db", "t"})
	if err != nil || info.TableID != 77 || info.NumBuckets != 3 {
		t.Fatalf("GetTableInfo = %+v, %v", info, err)
	}
	res, err := c.ProduceLog(ctx, 77, AcksAll, 1500*time.Millisecond, []BucketBatch{
		{Bucket: 0, Records: []byte("batch-0")},
		{Bucket: 1, Records: []byte("batch-1")},
		{Bucket: 2, Records: []byte("batch-2")},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Three cache misses (and a leaderless bucket) cost one refresh.
	if n := cl.metadataRequests(); n != 1 {
		t.Errorf("%d metadata requests for one ProduceLog, want 1", n)
	}
	if res[0].Bucket != 0 || res[0].BaseOffset != 10 || res[0].Err != nil {
		t.Errorf("bucket 0: %+v", res[0])
	}
	var fe *Error
	if !errors.As(res[1].Err, &fe) || fe.Code != CodeNotLeaderOrFollower || !fe.StaleMetadata() || res[1].BaseOffset != -1 {
		t.Errorf("bucket 1: %+v", res[1])
	}
	// No leader is Fluss's LEADER_NOT_AVAILABLE: worth retrying.
	if !errors.Is(res[2].Err, ErrNoLeader) || CodeOf(res[2].Err) != CodeLeaderNotAvailable || !IsRetriable(res[2].Err) {
		t.Errorf("bucket 2: %+v", res[2])
	}

	// One request went to the leader, carrying buckets 0 and 1 as given.
	cl.mu.Lock()
	if len(cl.produced) != 1 {
		cl.mu.Unlock()
		t.Fatalf("%d produce requests, want 1", len(cl.produced))
	}
	p := cl.produced[0]
	if p.GetAcks() != -1 || p.GetTableId() != 77 || p.GetTimeoutMs() != 1500 || len(p.GetBucketsReq()) != 2 {
		t.Errorf("request %v", p)
	}
	for _, br := range p.GetBucketsReq() {
		if want := "batch-" + strconv.Itoa(int(br.GetBucketId())); !bytes.Equal(br.GetRecords(), []byte(want)) || br.PartitionId != nil {
			t.Errorf("bucket %d records %q", br.GetBucketId(), br.GetRecords())
		}
	}

	cl.mu.Unlock()
	// The stale-metadata answer dropped the cached placement: the next
	// lookup asks the cluster again.
	before := cl.metadataRequests()
	if _, err := c.BucketLeader(ctx, 77, nil, 0); err != nil {
		t.Fatal(err)
	}
	if cl.metadataRequests() != before+1 {
		t.Errorf("metadata requests %d -> %d, want a refresh", before, cl.metadataRequests())
	}
	if _, err := c.BucketLeader(ctx, 77, nil, 0); err != nil || cl.metadataRequests() != before+1 {
		t.Errorf("second lookup should hit the cache: %v, %d requests", err, cl.metadataRequests())
	}
}

func TestProduceLogMissingOrEmptyResults(t *testing.T) {
	cl := newFakeCluster(t, func(req *flussrpc.ProduceLogRequest) *flussrpc.ProduceLogResponse {
		return &flussrpc.ProduceLogResponse{BucketsResp: []*flussrpc.ProduceLogResponseBucket{
			{BucketId: proto.Int32(0), BaseOffset: proto.Int64(-1)}, // nothing appended
		}}
	})
	c := dialFake(t, cl.fakeServer)
	ctx := shortCtx(t)
	if _, err := c.GetTableInfo(ctx, TablePath{"db", "t"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.ProduceLog(ctx, 77, AcksLeader, time.Second, []BucketBatch{
		{Bucket: 0, Records: []byte("x")}, {Bucket: 1, Records: []byte("y")}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, ErrInvalidRecords) {
		t.Errorf("bucket 0: %v, want ErrInvalidRecords", res[0].Err)
	}
	if !errors.Is(res[1].Err, ErrProtocol) {
		t.Errorf("bucket 1 (absent from the response): %v, want ErrProtocol", res[1].Err)
	}
}

func TestProduceLogArgumentErrors(t *testing.T) {
	cl := newFakeCluster(t, nil)
	c := dialFake(t, cl.fakeServer)
	ctx := shortCtx(t)
	if _, err := c.GetTableInfo(ctx, TablePath{"db", "t"}); err != nil {
		t.Fatal(err)
	}
	one := []BucketBatch{{Bucket: 0, Records: []byte{1}}}
	tests := []struct {
		name    string
		acks    Acks
		timeout time.Duration
		batches []BucketBatch
	}{
		{"acks 2", 2, time.Second, one},
		{"zero timeout", AcksAll, 0, one},
		{"huge timeout", AcksAll, 1 << 62, one},
		{"repeated bucket", AcksAll, time.Second, append(one, one...)},
		{"empty records", AcksAll, time.Second, []BucketBatch{{Bucket: 0}}},
		{"empty parts", AcksAll, time.Second, []BucketBatch{{Bucket: 0, Parts: [][]byte{nil, {}}}}},
		{"records and parts", AcksAll, time.Second, []BucketBatch{{Bucket: 0, Records: []byte{1}, Parts: [][]byte{{2}}}}},
	}
	for _, tt := range tests {
		if _, err := c.ProduceLog(ctx, 77, tt.acks, tt.timeout, tt.batches); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if len(cl.produced) != 0 {
		t.Errorf("bad calls reached the server: %d", len(cl.produced))
	}
}
