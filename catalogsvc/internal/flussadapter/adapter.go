// Package flussadapter connects the catalog to a real Fluss cluster through
// the native client in services/fluss.
package flussadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"slices"
	"syscall"

	"github.com/ferrygw/ferry/catalogsvc/internal/catalog"
	"github.com/ferrygw/ferry/catalogsvc/internal/mapping"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// Admin is the part of *fluss.Client the catalog reads.
type Admin interface {
	ListDatabases(ctx context.Context) ([]string, error)
	ListTables(ctx context.Context, database string) ([]string, error)
	GetTableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	ListPartitions(ctx context.Context, path fluss.TablePath) ([]fluss.PartitionInfo, error)
}

// Adapter implements catalog.Fluss over a Fluss client.
type Adapter struct{ admin Admin }

var _ catalog.Fluss = Adapter{}

// New wraps admin, usually a *fluss.Client.
func New(admin Admin) Adapter { return Adapter{admin: admin} }

// ListDatabases lists every database.
func (a Adapter) ListDatabases(ctx context.Context) ([]string, error) {
	return a.admin.ListDatabases(ctx)
}

// ListTables lists a database's tables; a missing database wraps
// catalog.ErrNotFound.
func (a Adapter) ListTables(ctx context.Context, database string) ([]string, error) {
	names, err := a.admin.ListTables(ctx, database)
	return names, notFound(err)
}

// GetTable reads one table; a missing table (or database) wraps
// catalog.ErrNotFound, metadata the client cannot decode is a
// *catalog.TableError.
func (a Adapter) GetTable(ctx context.Context, database, table string) (mapping.Table, error) {
	info, err := a.admin.GetTableInfo(ctx, fluss.TablePath{Database: database, Table: table})
	if err != nil {
		if ctx.Err() == nil && undecodable(err) {
			return mapping.Table{}, &catalog.TableError{Err: err}
		}
		return mapping.Table{}, notFound(err)
	}
	t, err := ToTable(info)
	if err != nil {
		return mapping.Table{}, &catalog.TableError{Err: err}
	}
	return t, nil
}

// ListPartitions lists a partitioned table's partitions; a missing table
// (or database) wraps catalog.ErrNotFound.
func (a Adapter) ListPartitions(ctx context.Context, database, table string) ([]mapping.Partition, error) {
	infos, err := a.admin.ListPartitions(ctx, fluss.TablePath{Database: database, Table: table})
	if err != nil {
		return nil, notFound(err)
	}
	out := make([]mapping.Partition, len(infos))
	for i, p := range infos {
		out[i] = mapping.Partition{ID: p.ID, Values: p.Values}
	}
	return out, nil
}

// undecodable tells a table whose descriptor the client could not decode
// from a failed call. The client has no sentinel for the former, so this
// rules out everything else: a server error (it carries a Fluss code) and
// every transport failure. Misjudging a transport failure as undecodable
// would hide one table until the next refresh; the reverse would fail
// every refresh because of one exotic table, so the test leans this way
// only for errors that are certainly not transport errors.
func undecodable(err error) bool {
	var fe *fluss.Error
	var ne net.Error
	if errors.As(err, &fe) || errors.As(err, &ne) {
		return false
	}
	for _, transport := range []error{
		fluss.ErrConnectionBroken, fluss.ErrClosed, fluss.ErrProtocol, fluss.ErrFrameTooLarge,
		fluss.ErrUnsupportedAPI, ErrClosed, context.Canceled, context.DeadlineExceeded, io.EOF,
		io.ErrUnexpectedEOF, syscall.ECONNREFUSED, syscall.ECONNRESET,
	} {
		if errors.Is(err, transport) {
			return false
		}
	}
	return true
}

func notFound(err error) error {
	if err == nil {
		return nil
	}
	if code := fluss.CodeOf(err); code == fluss.CodeDatabaseNotExist || code == fluss.CodeTableNotExist {
		return fmt.Errorf("%w: %w", catalog.ErrNotFound, err)
	}
	return err
}

// ToTable converts what the client reports into the mapping's input.
func ToTable(info *fluss.TableInfo) (mapping.Table, error) {
	if info.NumBuckets > math.MaxInt32 || info.NumBuckets < 0 {
		return mapping.Table{}, fmt.Errorf("table %s: bucket count %d out of range", info.TablePath, info.NumBuckets)
	}
	if info.SchemaID < 0 {
		return mapping.Table{}, errors.New("table " + info.TablePath.String() + ": negative schema id")
	}
	cols := make([]types.Field, len(info.Schema.Columns))
	for i, c := range info.Schema.Columns {
		cols[i] = types.Field{Name: c.Name, Type: c.Type}
	}
	return mapping.Table{
		Database:         info.Database,
		Name:             info.Table,
		TableID:          info.TableID,
		SchemaID:         info.SchemaID,
		Columns:          cols,
		PrimaryKeys:      slices.Clone(info.Schema.PrimaryKey),
		PartitionKeys:    slices.Clone(info.PartitionKeys),
		BucketKeys:       slices.Clone(info.BucketKeys),
		BucketCount:      int32(info.NumBuckets),
		Properties:       cloneMap(info.Properties),
		CustomProperties: cloneMap(info.CustomProperties),
	}, nil
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}
