package fluss

import (
	"net"
	"strconv"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// partitionCoordinator is a fake coordinator holding one partitioned table's
// partitions. Names in racing are created by "another writer" the moment
// this client asks to create them: the client's CreatePartition then fails
// with PARTITION_ALREADY_EXISTS, as when ignoreIfExists loses a race.
type partitionCoordinator struct {
	mu       sync.Mutex
	parts    map[string]int64 // name -> id
	racing   map[string]bool
	created  []map[string]string
	metaIDs  [][]int64
	requests map[APIKey]int
}

func (pc *partitionCoordinator) handle(t *testing.T, host string, port int32) func(fc *fakeConn, req fakeRequest) {
	return func(fc *fakeConn, req fakeRequest) {
		pc.mu.Lock()
		defer pc.mu.Unlock()
		pc.requests[req.key]++
		switch req.key {
		case APIListPartitions:
			var resp flussrpc.ListPartitionInfosResponse
			for name, id := range pc.parts {
				spec := &flussrpc.PartitionSpec{}
				for i, v := range splitName(name) {
					spec.PartitionKeyValues = append(spec.PartitionKeyValues, &flussrpc.KeyValue{Key: proto.String([]string{"region", "dt"}[i]), Value: proto.String(v)})
				}
				resp.PartitionsInfo = append(resp.PartitionsInfo, &flussrpc.PartitionInfo{PartitionId: proto.Int64(id), PartitionSpec: spec})
			}
			fc.success(req.id, &resp)
		case APICreatePartition:
			var in flussrpc.CreatePartitionRequest
			if err := proto.Unmarshal(req.body, &in); err != nil {
				t.Errorf("CreatePartition: %v", err)
			}
			spec := map[string]string{}
			for _, kv := range in.GetPartitionSpec().GetPartitionKeyValues() {
				spec[kv.GetKey()] = kv.GetValue()
			}
			pc.created = append(pc.created, spec)
			name := spec["region"] + "$" + spec["dt"]
			_, exists := pc.parts[name]
			if !exists {
				pc.parts[name] = int64(100 + len(pc.parts))
			}
			if exists || pc.racing[name] {
				fc.errorResp(req.id, CodePartitionAlreadyExists, "partition "+name+" already exists")
				return
			}
			fc.success(req.id, &flussrpc.CreatePartitionResponse{})
		case APIGetMetadata:
			var in flussrpc.GetMetadataRequest
			if err := proto.Unmarshal(req.body, &in); err != nil {
				t.Errorf("GetMetadata: %v", err)
			}
			pc.metaIDs = append(pc.metaIDs, in.GetPartitionsId())
			node := &flussrpc.ServerNode{NodeId: proto.Int32(5), Host: proto.String(host), Port: proto.Int32(port)}
			resp := &flussrpc.GetMetadataResponse{CoordinatorServer: node, TabletServers: []*flussrpc.ServerNode{node}}
			for name, id := range pc.parts {
				for _, want := range in.GetPartitionsId() {
					if want == id {
						resp.PartitionMetadata = append(resp.PartitionMetadata, &flussrpc.PartitionMetadata{
							TableId: proto.Int64(7), PartitionName: proto.String(name), PartitionId: proto.Int64(id),
							BucketMetadata: []*flussrpc.BucketMetadata{{BucketId: proto.Int32(0), LeaderId: proto.Int32(5), ReplicaId: []int32{5}}},
						})
					}
				}
			}
			fc.success(req.id, resp)
		default:
			t.Errorf("unexpected request %v", req.key)
		}
	}
}

func splitName(n string) []string {
	for i := range n {
		if n[i] == '$' {
			return []string{n[:i], n[i+1:]}
		}
	}
	return []string{n}
}

func TestPartitionIDs(t *testing.T) {
	pc := &partitionCoordinator{
		parts:    map[string]int64{"eu$20261201": 42},
		racing:   map[string]bool{"us$20261203": true},
		requests: map[APIKey]int{},
	}
	// The handler needs the server's own address for the metadata it
	// answers; it is known once the listener is up.
	var handler func(fc *fakeConn, req fakeRequest)
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) { handler(fc, req) })
	host, portStr, _ := net.SplitHostPort(s.addr())
	port, _ := strconv.Atoi(portStr)
	handler = pc.handle(t, host, int32(port))
	c := dialFake(t, s)
	table := &TableInfo{TablePath: TablePath{"db", "events"}, TableID: 7, TableDescriptor: TableDescriptor{
		Schema: types.Schema{Columns: []types.Column{
			{Name: "region", Type: types.DataType{Root: types.String}},
			{Name: "dt", Type: types.DataType{Root: types.String}},
		}},
		PartitionKeys: []string{"region", "dt"},
		NumBuckets:    1,
	}}
	c.meta.rememberTableID(7, table.TablePath)
	ctx := shortCtx(t)
	reset := func() map[APIKey]int {
		pc.mu.Lock()
		defer pc.mu.Unlock()
		r := pc.requests
		pc.requests = map[APIKey]int{}
		return r
	}
	reset()

	// Refused before anything is sent.
	for _, bad := range []string{"eu", "eu$2026 12 01", "eu$__x", "eu$"} {
		if _, err := c.PartitionIDs(ctx, table, []string{bad}, true); CodeOf(err) != CodePartitionSpecInvalid {
			t.Errorf("%q: %v, want PARTITION_SPEC_INVALID_EXCEPTION", bad, err)
		}
	}
	if _, err := c.PartitionIDs(ctx, &TableInfo{TablePath: TablePath{"db", "flat"}, TableID: 8}, []string{"x"}, true); CodeOf(err) != CodeTableNotPartitioned {
		t.Errorf("unpartitioned table: %v, want TABLE_NOT_PARTITIONED_EXCEPTION", err)
	}
	if r := reset(); len(r) != 0 {
		t.Errorf("refused names sent requests: %v", r)
	}

	// Without create, a missing partition is PARTITION_NOT_EXISTS and
	// nothing is created.
	if _, err := c.PartitionIDs(ctx, table, []string{"eu$20261201", "us$20261202"}, false); CodeOf(err) != CodePartitionNotExists {
		t.Errorf("without create: %v, want PARTITION_NOT_EXISTS", err)
	}
	if r := reset(); r[APICreatePartition] != 0 {
		t.Errorf("without create, %d CreatePartition sent", r[APICreatePartition])
	}

	// With create: one existing, one new, one lost to a racing creator,
	// and a repeated name.
	names := []string{"eu$20261201", "us$20261202", "us$20261203", "us$20261202"}
	ids, err := c.PartitionIDs(ctx, table, names, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || ids["eu$20261201"] != 42 || ids["us$20261202"] == 0 || ids["us$20261203"] == 0 || ids["us$20261202"] == ids["us$20261203"] {
		t.Fatalf("ids %v", ids)
	}
	r := reset()
	if r[APICreatePartition] != 2 || r[APIListPartitions] != 2 || r[APIGetMetadata] != 1 {
		t.Errorf("requests %v, want 2 CreatePartition, 2 ListPartitions, 1 GetMetadata", r)
	}
	pc.mu.Lock()
	if len(pc.created) != 2 || pc.created[0]["region"] != "us" || pc.created[0]["dt"] != "20261202" {
		t.Errorf("created specs %v", pc.created)
	}
	if last := pc.metaIDs[len(pc.metaIDs)-1]; len(last) != 3 {
		t.Errorf("metadata asked for partitions %v, want all three", last)
	}
	pc.mu.Unlock()

	// The placement is cached: routing and a second lookup ask nothing.
	for name, id := range ids {
		n, err := c.BucketLeader(ctx, 7, &id, 0)
		if err != nil || n.ID != 5 {
			t.Errorf("leader of %s: %+v, %v", name, n, err)
		}
	}
	again, err := c.PartitionIDs(ctx, table, names[:3], false)
	if err != nil || len(again) != 3 {
		t.Fatalf("cached lookup: %v, %v", again, err)
	}
	if r := reset(); len(r) != 0 {
		t.Errorf("cached lookup sent %v", r)
	}
	// Invalidation forgets names with the routes.
	c.InvalidateTable(7)
	if _, err := c.PartitionIDs(ctx, table, names[:1], false); err != nil {
		t.Fatal(err)
	}
	if r := reset(); r[APIListPartitions] != 1 {
		t.Errorf("after invalidation: %v, want a ListPartitions", r)
	}
}
