package appender

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// Table names the table a job appends to: the id Fluss routes produce
// requests by, and the path (frontdoor's catalog mapping) the table is
// looked up by. A path outlives its table when the table is dropped and
// created again; the id does not, so the id decides which table is meant.
type Table struct {
	ID   int64
	Path fluss.TablePath
}

func (t Table) String() string { return fmt.Sprintf("%s (id %d)", t.Path, t.ID) }

// Fluss is what the service needs from a Fluss client: append encoded
// batches to buckets of a log table. *ClientAdapter implements it over
// services/fluss; tests use fakes.
type Fluss interface {
	// ProduceLog appends one batch per bucket; results line up with
	// batches. The error return means nothing was sent.
	ProduceLog(ctx context.Context, table Table, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.BucketResult, error)
	// TableSchema returns the columns of a table's schema version. The
	// service checks each batch against them: Fluss stores Arrow bodies
	// without looking inside, so a batch that does not match its schema
	// would be acknowledged and then be unreadable.
	TableSchema(ctx context.Context, table Table, schemaID int32) ([]types.Field, error)
	// PutKv writes one KV batch per bucket of a primary-key table; results
	// line up with batches. The error return means nothing was sent.
	PutKv(ctx context.Context, table Table, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.PutKvResult, error)
	// PartitionIDs returns the ids of the named partitions of a
	// partitioned table, creating the ones that do not exist yet.
	PartitionIDs(ctx context.Context, table Table, names []string) (map[string]int64, error)
}

// FlussClient is the part of *fluss.Client the adapter uses.
type FlussClient interface {
	ProduceLog(ctx context.Context, tableID int64, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.BucketResult, error)
	GetTableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	GetTableSchema(ctx context.Context, path fluss.TablePath, schemaID int32) (types.Schema, int32, error)
	PutKv(ctx context.Context, tableID int64, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.PutKvResult, error)
	PartitionIDs(ctx context.Context, table *fluss.TableInfo, names []string, create bool) (map[string]int64, error)
}

// ClientAdapter makes a *fluss.Client usable with the (id, path) pairs
// AppendRequests carry. The client routes produce requests by id only for
// tables it has looked up by path: the adapter looks the path up
// (GetTableInfo registers the id with the client) when the client does not
// know the id yet, and checks that the path still names that id.
//
// Lookups are neither deduplicated nor negatively cached: a table id is
// looked up when the service first meets it or one of its schema versions
// (both are remembered after), and a job for a missing table costs one
// GetTableInfo of its own path (not a scan of the cluster), until frontdoor's
// mapping of the topic expires.
type ClientAdapter struct {
	client FlussClient
	log    *slog.Logger
	mu     sync.Mutex
	paths  map[int64]fluss.TablePath  // tables looked up; InitWriter names them
	infos  map[int64]*fluss.TableInfo // the last lookup of each table id
}

// NewClientAdapter wraps client.
func NewClientAdapter(client FlussClient, log *slog.Logger) *ClientAdapter {
	return &ClientAdapter{client: client, log: log, paths: map[int64]fluss.TablePath{}, infos: map[int64]*fluss.TableInfo{}}
}

// ErrTableRecreated is returned (along with a *fluss.Error with
// TABLE_NOT_EXIST) when a request's path names a table with another id:
// the requested table was dropped and the path reused. TABLE_NOT_EXIST
// makes frontdoor answer UNKNOWN_TOPIC_OR_PARTITION, on which Kafka
// clients refresh metadata and retry with the new table's mapping.
var ErrTableRecreated = errors.New("appender: the table was dropped and its path now names another table")

// ProduceLog implements Fluss.
func (a *ClientAdapter) ProduceLog(ctx context.Context, table Table, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.BucketResult, error) {
	return withTable(a, ctx, table, func() ([]fluss.BucketResult, error) {
		return a.client.ProduceLog(ctx, table.ID, acks, timeout, batches)
	})
}

// PutKv implements Fluss.
func (a *ClientAdapter) PutKv(ctx context.Context, table Table, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.PutKvResult, error) {
	return withTable(a, ctx, table, func() ([]fluss.PutKvResult, error) {
		return a.client.PutKv(ctx, table.ID, acks, timeout, batches)
	})
}

// withTable runs write once the client routes table's id, looking its path
// up first when the id was met under another path or is unknown to the
// client.
func withTable[R any](a *ClientAdapter, ctx context.Context, table Table, write func() (R, error)) (R, error) {
	var zero R
	a.mu.Lock()
	known, ok := a.paths[table.ID]
	a.mu.Unlock()
	if ok && known != table.Path {
		// The id was met under another path: this path may name no table,
		// or another one. Only a lookup of this path can tell.
		if _, err := a.lookup(ctx, table); err != nil {
			return zero, err
		}
	}
	res, err := write()
	if !errors.Is(err, fluss.ErrUnknownTable) {
		return res, err
	}
	if _, err := a.lookup(ctx, table); err != nil {
		return zero, err
	}
	// The lookup registered the id; the client never forgets it.
	return write()
}

// PartitionIDs implements Fluss. The table's partition keys come from its
// last lookup (they never change); the client caches the ids.
func (a *ClientAdapter) PartitionIDs(ctx context.Context, table Table, names []string) (map[string]int64, error) {
	a.mu.Lock()
	info := a.infos[table.ID]
	a.mu.Unlock()
	if info == nil || info.TablePath != table.Path {
		var err error
		if info, err = a.lookup(ctx, table); err != nil {
			return nil, err
		}
	}
	return a.client.PartitionIDs(ctx, info, names, true)
}

// lookup asks the coordinator for table's path, which registers the id the
// path names with the client, and checks that it is table's id.
func (a *ClientAdapter) lookup(ctx context.Context, table Table) (*fluss.TableInfo, error) {
	info, err := a.client.GetTableInfo(ctx, table.Path)
	if err != nil {
		return nil, lookupError(table, "looking up table", err)
	}
	if info.TableID != table.ID {
		a.log.Info("append to a dropped table whose path was reused", "table", table.Path.String(),
			"table_id", table.ID, "current_table_id", info.TableID)
		return nil, fmt.Errorf("%w: %w", ErrTableRecreated, &fluss.Error{Code: fluss.CodeTableNotExist,
			Message: fmt.Sprintf("requested table %s, but %s is now table id %d", table, table.Path, info.TableID)})
	}
	a.mu.Lock()
	a.paths[info.TableID] = info.TablePath
	a.infos[info.TableID] = info
	a.mu.Unlock()
	return info, nil
}

// TableSchema implements Fluss. The path is looked up first so that a
// schema of a recreated table is never taken for one of the requested
// table (a batch checked against it would be refused as corrupt rather
// than as written to a missing table); the lookup also carries the latest
// schema, the one asked for nearly always.
func (a *ClientAdapter) TableSchema(ctx context.Context, table Table, schemaID int32) ([]types.Field, error) {
	info, err := a.lookup(ctx, table)
	if err != nil {
		return nil, err
	}
	s := info.Schema
	if info.SchemaID != schemaID {
		if s, _, err = a.client.GetTableSchema(ctx, table.Path, schemaID); err != nil {
			return nil, lookupError(table, fmt.Sprintf("reading schema %d of table", schemaID), err)
		}
	}
	fields := make([]types.Field, len(s.Columns))
	for i, c := range s.Columns {
		fields[i] = types.Field{Name: c.Name, Type: c.Type}
	}
	return fields, nil
}

// lookupError describes a failed lookup of table. A missing database means
// the table went with it: for the producer that is a missing table
// (TABLE_NOT_EXIST: refresh metadata), not a server error.
func lookupError(table Table, what string, err error) error {
	if fluss.CodeOf(err) == fluss.CodeDatabaseNotExist {
		return &fluss.Error{Code: fluss.CodeTableNotExist, Message: fmt.Sprintf("table %s: %v", table, err)}
	}
	return fmt.Errorf("appender: %s %s: %w", what, table, err)
}
