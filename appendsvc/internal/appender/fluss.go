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

// Fluss is what the service needs from a Fluss client: append encoded
// batches to buckets of a log table. *ClientAdapter implements it over
// services/fluss; tests use fakes.
type Fluss interface {
	// ProduceLog appends one batch per bucket; results line up with
	// batches. The error return means nothing was sent.
	ProduceLog(ctx context.Context, tableID int64, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.BucketResult, error)
	// TableSchema returns the columns of a table's schema version. The
	// service checks each batch against them: Fluss stores Arrow bodies
	// without looking inside, so a batch that does not match its schema
	// would be acknowledged and then be unreadable.
	TableSchema(ctx context.Context, tableID int64, schemaID int32) ([]types.Field, error)
}

// FlussClient is the part of *fluss.Client the adapter uses.
type FlussClient interface {
	ProduceLog(ctx context.Context, tableID int64, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.BucketResult, error)
	ListDatabases(ctx context.Context) ([]string, error)
	ListTables(ctx context.Context, database string) ([]string, error)
	GetTableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	GetTableSchema(ctx context.Context, path fluss.TablePath, schemaID int32) (types.Schema, int32, error)
}

// ClientAdapter makes a *fluss.Client usable by table id alone. The client
// routes by id only for tables it has looked up by path, while
// AppendRequest carries just the id: on an unknown id the adapter scans the
// cluster's tables (GetTableInfo registers each id with the client) once,
// and remembers ids it could not find for a while so a stream of bad ids
// cannot turn into a stream of scans.
type ClientAdapter struct {
	client   FlussClient
	log      *slog.Logger
	missTTL  time.Duration
	now      func() time.Time
	mu       sync.Mutex
	misses   map[int64]time.Time
	paths    map[int64]fluss.TablePath // every table id a scan met
	scanning chan struct{}             // one scan at a time; holders close it when done
}

// NewClientAdapter wraps client.
func NewClientAdapter(client FlussClient, log *slog.Logger) *ClientAdapter {
	return &ClientAdapter{client: client, log: log, missTTL: 10 * time.Second, now: time.Now, misses: map[int64]time.Time{}, paths: map[int64]fluss.TablePath{}}
}

// ErrTableNotFound is returned (wrapped in a *fluss.Error with
// TABLE_NOT_EXIST) for ids no table in the cluster has.
var ErrTableNotFound = errors.New("appender: no table with this id")

// ProduceLog implements Fluss.
func (a *ClientAdapter) ProduceLog(ctx context.Context, tableID int64, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.BucketResult, error) {
	// A concurrent scan for another id may end without registering this
	// one, hence a few rounds.
	for range 3 {
		res, err := a.client.ProduceLog(ctx, tableID, acks, timeout, batches)
		if !errors.Is(err, fluss.ErrUnknownTable) {
			return res, err
		}
		if err := a.resolve(ctx, tableID); err != nil {
			return nil, err
		}
	}
	return nil, &fluss.Error{Code: fluss.CodeTableNotExist, Message: fmt.Sprintf("table id %d: %v", tableID, ErrTableNotFound)}
}

func (a *ClientAdapter) resolve(ctx context.Context, tableID int64) error {
	for {
		a.mu.Lock()
		if t, ok := a.misses[tableID]; ok && a.now().Sub(t) < a.missTTL {
			a.mu.Unlock()
			return &fluss.Error{Code: fluss.CodeTableNotExist, Message: fmt.Sprintf("table id %d: %v", tableID, ErrTableNotFound)}
		}
		wait := a.scanning
		if wait == nil {
			a.scanning = make(chan struct{})
			a.mu.Unlock()
			break
		}
		a.mu.Unlock()
		// Another job is scanning; its scan may register this id too.
		select {
		case <-wait:
			return nil // the caller retries ProduceLog, which tells
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	found, err := a.scan(ctx, tableID)
	a.mu.Lock()
	close(a.scanning)
	a.scanning = nil
	if err == nil && !found {
		a.misses[tableID] = a.now()
	}
	a.mu.Unlock()
	if err != nil {
		return fmt.Errorf("appender: resolving table id %d: %w", tableID, err)
	}
	if !found {
		a.log.Warn("append to unknown table id", "table_id", tableID)
		return &fluss.Error{Code: fluss.CodeTableNotExist, Message: fmt.Sprintf("table id %d: %v", tableID, ErrTableNotFound)}
	}
	return nil
}

// TableSchema implements Fluss.
func (a *ClientAdapter) TableSchema(ctx context.Context, tableID int64, schemaID int32) ([]types.Field, error) {
	path, err := a.pathOf(ctx, tableID)
	if err != nil {
		return nil, err
	}
	s, _, err := a.client.GetTableSchema(ctx, path, schemaID)
	if err != nil {
		return nil, err
	}
	fields := make([]types.Field, len(s.Columns))
	for i, c := range s.Columns {
		fields[i] = types.Field{Name: c.Name, Type: c.Type}
	}
	return fields, nil
}

// pathOf returns the path of a table id, scanning the cluster when it is
// not known yet (a few rounds, as a concurrent scan for another id may end
// before meeting this one).
func (a *ClientAdapter) pathOf(ctx context.Context, tableID int64) (fluss.TablePath, error) {
	for range 3 {
		a.mu.Lock()
		path, ok := a.paths[tableID]
		a.mu.Unlock()
		if ok {
			return path, nil
		}
		if err := a.resolve(ctx, tableID); err != nil {
			return fluss.TablePath{}, err
		}
	}
	return fluss.TablePath{}, &fluss.Error{Code: fluss.CodeTableNotExist, Message: fmt.Sprintf("table id %d: %v", tableID, ErrTableNotFound)}
}

// scan looks every table up until it meets tableID.
func (a *ClientAdapter) scan(ctx context.Context, tableID int64) (bool, error) {
	dbs, err := a.client.ListDatabases(ctx)
	if err != nil {
		return false, err
	}
	for _, db := range dbs {
		tables, err := a.client.ListTables(ctx, db)
		if err != nil {
			return false, err
		}
		for _, t := range tables {
			info, err := a.client.GetTableInfo(ctx, fluss.TablePath{Database: db, Table: t})
			if err != nil {
				// A table dropped mid-scan is not an error of this scan.
				if errors.Is(err, &fluss.Error{Code: fluss.CodeTableNotExist}) {
					continue
				}
				return false, err
			}
			a.mu.Lock()
			a.paths[info.TableID] = info.TablePath
			a.mu.Unlock()
			if info.TableID == tableID {
				a.log.Debug("resolved table id", "table_id", tableID, "table", info.TablePath.String())
				return true, nil
			}
		}
	}
	return false, nil
}
