package fluss

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

// TablePath names a table: database and table name.
type TablePath struct {
	Database string
	Table    string
}

func (p TablePath) String() string { return p.Database + "." + p.Table }

func (p TablePath) pb() *flussrpc.TablePath {
	return &flussrpc.TablePath{DatabaseName: proto.String(p.Database), TableName: proto.String(p.Table)}
}

// ServerNode is a Fluss server as metadata describes it.
type ServerNode struct {
	ID   int32
	Host string
	Port int32
	Rack string
}

// Addr is the node's host:port.
func (n ServerNode) Addr() string { return net.JoinHostPort(n.Host, strconv.Itoa(int(n.Port))) }

// NoLeader is the Leader of a bucket that has none elected.
const NoLeader int32 = -1

// BucketLocation is where one bucket lives.
type BucketLocation struct {
	Bucket      int32
	Leader      int32 // tablet server id, or NoLeader
	LeaderEpoch int32
	Replicas    []int32
}

// TableRoute is the cached placement of a table's buckets: what ProduceLog
// uses to find each bucket's leader.
type TableRoute struct {
	Path     TablePath
	TableID  int64
	SchemaID int32
	// Buckets is indexed by bucket id for non-partitioned tables. It is empty
	// for partitioned tables, whose buckets are per partition.
	Buckets []BucketLocation
}

// partitionRoute is the placement of one partition's buckets.
type partitionRoute struct {
	tableID int64
	name    string
	buckets []BucketLocation
}

// metadataCache is the client's view of the cluster: servers, tables by
// path and id, partitions by id. Entries are replaced wholesale on refresh,
// so readers may keep the pointers they got.
type metadataCache struct {
	mu          sync.RWMutex
	coordinator string
	servers     map[int32]ServerNode
	tables      map[TablePath]*TableRoute
	tableIDs    map[int64]TablePath
	partitions  map[int64]*partitionRoute
	// partitionNames indexes partitions by table id and name, for writers
	// that know a row's partition by name (PartitionIDs).
	partitionNames map[int64]map[string]int64
}

func (m *metadataCache) init() {
	m.servers = make(map[int32]ServerNode)
	m.tables = make(map[TablePath]*TableRoute)
	m.tableIDs = make(map[int64]TablePath)
	m.partitions = make(map[int64]*partitionRoute)
	m.partitionNames = make(map[int64]map[string]int64)
}

func (m *metadataCache) coordinatorAddr() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.coordinator
}

func (m *metadataCache) table(p TablePath) *TableRoute {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.tables[p]
}

func (m *metadataCache) pathOf(tableID int64) (TablePath, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.tableIDs[tableID]
	return p, ok
}

func (m *metadataCache) rememberTableID(id int64, p TablePath) {
	m.mu.Lock()
	m.tableIDs[id] = p
	m.mu.Unlock()
}

func (m *metadataCache) server(id int32) (ServerNode, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, ok := m.servers[id]
	return n, ok
}

// partitionIDs returns the cached ids of the named partitions of a table;
// names the cache does not hold are absent from the map.
func (m *metadataCache) partitionIDs(tableID int64, names []string) map[string]int64 {
	out := make(map[string]int64, len(names))
	m.mu.RLock()
	defer m.mu.RUnlock()
	byName := m.partitionNames[tableID]
	for _, n := range names {
		if id, ok := byName[n]; ok {
			out[n] = id
		}
	}
	return out
}

// invalidate drops a table's placement (and its partitions') so that the
// next lookup asks the cluster again. The id→path entry stays: it is how a
// table id is looked up again.
func (m *metadataCache) invalidate(tableID int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.tableIDs[tableID]; ok {
		if r := m.tables[p]; r != nil && r.TableID == tableID {
			delete(m.tables, p)
		}
	}
	for id, pr := range m.partitions {
		if pr.tableID == tableID {
			delete(m.partitions, id)
		}
	}
	delete(m.partitionNames, tableID)
}

// apply merges a GetMetadata response into the cache.
func (m *metadataCache) apply(resp *flussrpc.GetMetadataResponse) error {
	servers := make(map[int32]ServerNode, len(resp.GetTabletServers()))
	for _, s := range resp.GetTabletServers() {
		servers[s.GetNodeId()] = ServerNode{ID: s.GetNodeId(), Host: s.GetHost(), Port: s.GetPort(), Rack: s.GetRack()}
	}
	tables := make([]*TableRoute, 0, len(resp.GetTableMetadata()))
	for _, tm := range resp.GetTableMetadata() {
		buckets, err := bucketLocations(tm.GetBucketMetadata())
		if err != nil {
			return fmt.Errorf("table %s.%s: %w", tm.GetTablePath().GetDatabaseName(), tm.GetTablePath().GetTableName(), err)
		}
		tables = append(tables, &TableRoute{
			Path:     TablePath{tm.GetTablePath().GetDatabaseName(), tm.GetTablePath().GetTableName()},
			TableID:  tm.GetTableId(),
			SchemaID: tm.GetSchemaId(),
			Buckets:  buckets,
		})
	}
	parts := make(map[int64]*partitionRoute, len(resp.GetPartitionMetadata()))
	for _, pm := range resp.GetPartitionMetadata() {
		buckets, err := bucketLocations(pm.GetBucketMetadata())
		if err != nil {
			return fmt.Errorf("partition %s: %w", pm.GetPartitionName(), err)
		}
		parts[pm.GetPartitionId()] = &partitionRoute{tableID: pm.GetTableId(), name: pm.GetPartitionName(), buckets: buckets}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if cs := resp.GetCoordinatorServer(); cs != nil {
		m.coordinator = ServerNode{Host: cs.GetHost(), Port: cs.GetPort()}.Addr()
	}
	if len(servers) > 0 {
		m.servers = servers
	}
	for _, t := range tables {
		m.tables[t.Path] = t
		m.tableIDs[t.TableID] = t.Path
	}
	for id, p := range parts {
		m.partitions[id] = p
		byName := m.partitionNames[p.tableID]
		if byName == nil {
			byName = make(map[string]int64)
			m.partitionNames[p.tableID] = byName
		}
		byName[p.name] = id
	}
	return nil
}

// bucketLocations indexes buckets by id; Fluss numbers them 0..n-1.
func bucketLocations(bms []*flussrpc.BucketMetadata) ([]BucketLocation, error) {
	out := make([]BucketLocation, len(bms))
	seen := make([]bool, len(bms))
	for _, bm := range bms {
		b := bm.GetBucketId()
		if b < 0 || int(b) >= len(bms) || seen[b] {
			return nil, fmt.Errorf("%w: bucket ids are not 0..%d (got %d)", ErrProtocol, len(bms)-1, b)
		}
		seen[b] = true
		leader := NoLeader
		if bm.LeaderId != nil {
			leader = bm.GetLeaderId()
		}
		out[b] = BucketLocation{Bucket: b, Leader: leader, LeaderEpoch: bm.GetLeaderEpoch(), Replicas: slices.Clone(bm.GetReplicaId())}
	}
	return out, nil
}

// fetchMetadata asks the coordinator for the given tables and partitions and
// caches the answer.
func (c *Client) fetchMetadata(ctx context.Context, paths []TablePath, partitionIDs []int64) error {
	req := &flussrpc.GetMetadataRequest{PartitionsId: partitionIDs}
	for _, p := range paths {
		req.TablePath = append(req.TablePath, p.pb())
	}
	var resp flussrpc.GetMetadataResponse
	if err := c.callCoordinator(ctx, APIGetMetadata, true, req, &resp); err != nil {
		return err
	}
	if err := c.meta.apply(&resp); err != nil {
		return fmt.Errorf("fluss: metadata: %w", err)
	}
	return nil
}

// TableRoute returns the placement of a table's buckets, from the cache or,
// on a miss, from the cluster.
func (c *Client) TableRoute(ctx context.Context, path TablePath) (_ *TableRoute, err error) {
	if r := c.meta.table(path); r != nil {
		return r, nil
	}
	return c.RefreshTableRoute(ctx, path)
}

// RefreshTableRoute asks the cluster for a table's placement, replacing what
// the cache holds.
func (c *Client) RefreshTableRoute(ctx context.Context, path TablePath) (_ *TableRoute, err error) {
	ctx, end := c.startSpan(ctx, "GetMetadata", attribute.String("fluss.table", path.String()))
	defer end(&err)
	if err := c.fetchMetadata(ctx, []TablePath{path}, nil); err != nil {
		return nil, err
	}
	r := c.meta.table(path)
	if r == nil {
		return nil, fmt.Errorf("fluss: metadata for %s: %w", path, &Error{Code: CodeTableNotExist, Message: "table missing from metadata response"})
	}
	return r, nil
}

// Servers returns the tablet servers the client last heard of, by id.
func (c *Client) Servers() map[int32]ServerNode {
	c.meta.mu.RLock()
	defer c.meta.mu.RUnlock()
	out := make(map[int32]ServerNode, len(c.meta.servers))
	for id, n := range c.meta.servers {
		out[id] = n
	}
	return out
}

// InvalidateTable drops the cached placement of a table, so that the next
// call that needs it asks the cluster. ProduceLog does this itself when a
// bucket answers with a stale-metadata error.
func (c *Client) InvalidateTable(tableID int64) { c.meta.invalidate(tableID) }

// BucketLeader returns the tablet server leading a bucket of a table the
// client knows (GetTableInfo or TableRoute made it known). partitionID is nil
// for non-partitioned tables. A cache miss, or a bucket without a live
// leader, triggers one metadata refresh.
func (c *Client) BucketLeader(ctx context.Context, tableID int64, partitionID *int64, bucket int32) (ServerNode, error) {
	n, err := c.lookupLeader(tableID, partitionID, bucket)
	if err == nil {
		return n, nil
	}
	if err := c.refreshFor(ctx, tableID, partitionID); err != nil {
		return ServerNode{}, err
	}
	return c.lookupLeader(tableID, partitionID, bucket)
}

func (c *Client) refreshFor(ctx context.Context, tableID int64, partitionID *int64) error {
	var pids []int64
	if partitionID != nil {
		pids = []int64{*partitionID}
	}
	return c.refreshForPartitions(ctx, tableID, pids)
}

// refreshForPartitions refreshes a table's placement and that of the given
// partitions of it.
func (c *Client) refreshForPartitions(ctx context.Context, tableID int64, partitionIDs []int64) error {
	path, ok := c.meta.pathOf(tableID)
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownTable, tableID)
	}
	err := c.fetchMetadata(ctx, []TablePath{path}, partitionIDs)
	var fe *Error
	if err == nil || !errors.As(err, &fe) {
		return err
	}
	// The coordinator answers GetMetadata for a dropped table with
	// UNKNOWN_SERVER_ERROR (a wrapped TableNotExistException), which tells
	// a caller neither that the table is gone nor to stop retrying. Ask
	// for the table itself to turn that into TABLE_NOT_EXIST.
	if gone := c.tableGone(ctx, tableID, path); gone != nil {
		return gone
	}
	return err
}

// tableGone returns a TABLE_NOT_EXIST error when the table id no longer
// exists at path (dropped, or dropped and the path reused), nil when it
// still does or that cannot be told.
func (c *Client) tableGone(ctx context.Context, tableID int64, path TablePath) error {
	var resp flussrpc.GetTableInfoResponse
	err := c.callCoordinator(ctx, APIGetTableInfo, true, &flussrpc.GetTableInfoRequest{TablePath: path.pb()}, &resp)
	switch {
	case CodeOf(err) == CodeTableNotExist:
		return &Error{Code: CodeTableNotExist, Message: fmt.Sprintf("table id %d: %s was dropped", tableID, path)}
	case err == nil && resp.GetTableId() != tableID:
		return &Error{Code: CodeTableNotExist, Message: fmt.Sprintf("table id %d: %s is now table id %d", tableID, path, resp.GetTableId())}
	}
	return nil
}

func (c *Client) lookupLeader(tableID int64, partitionID *int64, bucket int32) (ServerNode, error) {
	c.meta.mu.RLock()
	defer c.meta.mu.RUnlock()
	var buckets []BucketLocation
	if partitionID != nil {
		pr := c.meta.partitions[*partitionID]
		if pr == nil || pr.tableID != tableID {
			return ServerNode{}, fmt.Errorf("fluss: partition %d of table %d not in metadata", *partitionID, tableID)
		}
		buckets = pr.buckets
	} else {
		path, ok := c.meta.tableIDs[tableID]
		if !ok {
			return ServerNode{}, fmt.Errorf("%w: %d", ErrUnknownTable, tableID)
		}
		r := c.meta.tables[path]
		if r == nil {
			// Seen while a tablet server restarts: the refreshed metadata
			// left the table out. Stale metadata, as Fluss classifies
			// it: refresh and retry.
			return ServerNode{}, &Error{Code: CodeUnknownTableOrBucket, Message: fmt.Sprintf("table %d (%s) not in metadata", tableID, path)}
		}
		if r.TableID != tableID {
			// The path now names another table: this one was dropped
			// (and the path reused). Retrying cannot help.
			return ServerNode{}, &Error{Code: CodeTableNotExist,
				Message: fmt.Sprintf("table id %d: %s is now table id %d", tableID, path, r.TableID)}
		}
		buckets = r.Buckets
	}
	if bucket < 0 || int(bucket) >= len(buckets) {
		msg := fmt.Sprintf("bucket %d of table %d: metadata has %d buckets", bucket, tableID, len(buckets))
		if partitionID == nil && len(buckets) == 0 {
			// Fluss lists no table-level buckets for partitioned tables.
			msg += " (a partitioned table's buckets need a partition id)"
		}
		return ServerNode{}, &Error{Code: CodeUnknownTableOrBucket, Message: msg}
	}
	leader := buckets[bucket].Leader
	if leader == NoLeader {
		// Also a LEADER_NOT_AVAILABLE *Error, so that callers classify it
		// as Fluss does: retriable, after a metadata refresh.
		return ServerNode{}, fmt.Errorf("%w: %w", ErrNoLeader, &Error{Code: CodeLeaderNotAvailable,
			Message: fmt.Sprintf("table %d bucket %d has no leader", tableID, bucket)})
	}
	n, ok := c.meta.servers[leader]
	if !ok {
		return ServerNode{}, fmt.Errorf("%w: %w", ErrNoLeader, &Error{Code: CodeLeaderNotAvailable,
			Message: fmt.Sprintf("table %d bucket %d: leader %d is not a known tablet server", tableID, bucket, leader)})
	}
	return n, nil
}
