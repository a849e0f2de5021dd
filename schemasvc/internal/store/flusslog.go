package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// Log is the registry's durable, totally ordered log of rows.
type Log interface {
	// Append writes rows, in order, as one batch: all or none.
	Append(ctx context.Context, rows []Row) error
	// Read returns the rows from offset from to the end of the log as it
	// is now, and the offset after them.
	Read(ctx context.Context, from int64) ([]Row, int64, error)
}

// Fluss is what the log needs from a Fluss client; *fluss.Client has it.
type Fluss interface {
	GetTableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	CreateDatabase(ctx context.Context, name string, d fluss.DatabaseDescriptor, ignoreIfExists bool) error
	CreateTable(ctx context.Context, path fluss.TablePath, d fluss.TableDescriptor, ignoreIfExists bool) error
	ProduceLog(ctx context.Context, tableID int64, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.BucketResult, error)
	FetchLog(ctx context.Context, tableID int64, buckets []fluss.FetchBucket, opt fluss.FetchOptions) ([]fluss.FetchResult, error)
	ListOffsets(ctx context.Context, tableID int64, partitionID *int64, buckets []int32, spec fluss.OffsetSpec) (map[int32]int64, error)
	RefreshTableRoute(ctx context.Context, path fluss.TablePath) (*fluss.TableRoute, error)
}

// DefaultTable is where the registry keeps its log unless configured
// otherwise.
const DefaultTable = "ferry_system.schemas"

// columns is the log table's schema; an existing table must have these
// columns in this order. One bucket: the log's order is the order every
// instance folds in.
var columns = []types.Field{
	{Name: "kind", Type: types.DataType{Root: types.String}},
	{Name: "id", Type: types.DataType{Root: types.Int}},
	{Name: "subject", Type: types.DataType{Root: types.String}},
	{Name: "version", Type: types.DataType{Root: types.Int}},
	{Name: "schema_type", Type: types.DataType{Root: types.String}},
	{Name: "text", Type: types.DataType{Root: types.String}},
	{Name: "canonical", Type: types.DataType{Root: types.String}},
	{Name: "refs", Type: types.DataType{Root: types.String}},
	{Name: "written_at", Type: types.DataType{Root: types.TimestampLTZ, Precision: 3}},
}

// FlussLog is the Log in a one-bucket Fluss log table.
type FlussLog struct {
	fluss  Fluss
	path   fluss.TablePath
	schema *arrow.Schema

	mu   sync.Mutex
	info *fluss.TableInfo // nil until found or created
}

// NewFlussLog returns the log in the table at path ("database.table"),
// created (with its database) when first needed.
func NewFlussLog(f Fluss, path string) (*FlussLog, error) {
	db, table, ok := strings.Cut(path, ".")
	if !ok || db == "" || table == "" || strings.Contains(table, ".") {
		return nil, fmt.Errorf("store: table %q is not database.table", path)
	}
	schema, err := types.ArrowSchema(columns)
	if err != nil {
		return nil, err
	}
	return &FlussLog{fluss: f, path: fluss.TablePath{Database: db, Table: table}, schema: schema}, nil
}

// table finds the log table, creating it when missing. kafka.enabled=false
// keeps it out of catalogsvc's topics.
func (l *FlussLog) table(ctx context.Context) (*fluss.TableInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.info != nil {
		return l.info, nil
	}
	info, err := l.fluss.GetTableInfo(ctx, l.path)
	if c := fluss.CodeOf(err); c == fluss.CodeTableNotExist || c == fluss.CodeDatabaseNotExist {
		if err := l.fluss.CreateDatabase(ctx, l.path.Database, fluss.DatabaseDescriptor{Comment: "Ferry's own tables"}, true); err != nil {
			return nil, fmt.Errorf("store: create database %s: %w", l.path.Database, err)
		}
		cols := make([]types.Column, len(columns))
		for i, c := range columns {
			cols[i] = types.Column{Name: c.Name, Type: c.Type}
		}
		// No TTL: a schema id must keep its meaning for as long as any
		// record framed with it is stored.
		if err := l.fluss.CreateTable(ctx, l.path, fluss.TableDescriptor{
			Schema:           types.Schema{Columns: cols},
			Comment:          "Ferry's Schema Registry: schemas, subject versions and configs",
			NumBuckets:       1,
			Properties:       map[string]string{"table.log.ttl": "0ms"},
			CustomProperties: map[string]string{"kafka.enabled": "false"},
		}, true); err != nil {
			return nil, fmt.Errorf("store: create table %s: %w", l.path, err)
		}
		l.awaitLeader(ctx)
		info, err = l.fluss.GetTableInfo(ctx, l.path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: table %s: %w", l.path, err)
	}
	got := info.Schema.Fields()
	if len(got) != len(columns) || info.NumBuckets != 1 {
		return nil, fmt.Errorf("store: table %s has %d columns and %d buckets, not Ferry's %d and 1", l.path, len(got), info.NumBuckets, len(columns))
	}
	for i, c := range columns {
		if got[i].Name != c.Name || got[i].Type.Root != c.Type.Root {
			return nil, fmt.Errorf("store: table %s column %d is %s %s, not %s %s", l.path, i, got[i].Name, got[i].Type, c.Name, c.Type)
		}
	}
	l.info = info
	return info, nil
}

// awaitLeader waits, up to a minute, for the new table's bucket to have a
// leader; calls that find none retry anyway.
func (l *FlussLog) awaitLeader(ctx context.Context) {
	_ = fluss.RetryWithin(ctx, time.Minute, func() error {
		r, err := l.fluss.RefreshTableRoute(ctx, l.path)
		if err == nil && (len(r.Buckets) == 0 || r.Buckets[0].Leader == fluss.NoLeader) {
			err = &fluss.Error{Code: fluss.CodeLeaderNotAvailable, Message: fmt.Sprintf("table %s: no leader yet", l.path)}
		}
		return err
	})
}

// Append implements Log.
func (l *FlussLog) Append(ctx context.Context, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	info, err := l.table(ctx)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, l.schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.Kind)
		b.Field(1).(*array.Int32Builder).Append(r.ID)
		b.Field(2).(*array.StringBuilder).Append(r.Subject)
		b.Field(3).(*array.Int32Builder).Append(r.Version)
		b.Field(4).(*array.StringBuilder).Append(r.Type)
		b.Field(5).(*array.StringBuilder).Append(r.Text)
		b.Field(6).(*array.StringBuilder).Append(r.Canonical)
		b.Field(7).(*array.StringBuilder).Append(r.References)
		b.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(r.TimeMs))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	batch, err := logbatch.Build(rec, logbatch.DefaultOptions(int16(info.SchemaID)))
	if err != nil {
		return err
	}
	// A retry after a lost answer may store the batch twice: harmless,
	// the second copy of every claim loses to the first.
	err = fluss.RetryWithin(ctx, retryFor, func() error {
		res, err := l.fluss.ProduceLog(ctx, info.TableID, fluss.AcksAll, 30*time.Second, []fluss.BucketBatch{{Bucket: 0, Records: batch}})
		if err == nil {
			err = res[0].Err
		}
		return err
	})
	l.forgetOn(err)
	if err != nil {
		return fmt.Errorf("store: append to %s: %w", l.path, err)
	}
	return nil
}

// Read implements Log.
func (l *FlussLog) Read(ctx context.Context, from int64) ([]Row, int64, error) {
	info, err := l.table(ctx)
	if err != nil {
		return nil, from, err
	}
	if from == 0 {
		// The log's start, in case retention ever moved it.
		var starts map[int32]int64
		err := fluss.RetryWithin(ctx, retryFor, func() (err error) {
			starts, err = l.fluss.ListOffsets(ctx, info.TableID, nil, []int32{0}, fluss.OffsetEarliest)
			return err
		})
		if err != nil {
			l.forgetOn(err)
			return nil, from, fmt.Errorf("store: start of %s: %w", l.path, err)
		}
		from = starts[0]
	}
	dec, err := logbatch.NewDecoder(l.schema, nil)
	if err != nil {
		return nil, from, err
	}
	var rows []Row
	next := from
	for {
		var res []fluss.FetchResult
		err := fluss.RetryWithin(ctx, retryFor, func() (err error) {
			res, err = l.fluss.FetchLog(ctx, info.TableID, []fluss.FetchBucket{{Bucket: 0, Offset: next, MaxBytes: 4 << 20}}, fluss.FetchOptions{})
			if err == nil {
				err = res[0].Err
			}
			return err
		})
		if err != nil {
			l.forgetOn(err)
			return nil, from, fmt.Errorf("store: read %s at %d: %w", l.path, next, err)
		}
		it := logbatch.NewIterator(res[0].Records)
		for it.Next() {
			b := it.Batch()
			if b.BaseOffset+int64(b.LastOffsetDelta) < next {
				continue
			}
			next = b.BaseOffset + int64(b.LastOffsetDelta) + 1
			if b.RecordCount == 0 {
				continue
			}
			got, err := decodeRows(dec, b)
			if err != nil {
				return nil, from, fmt.Errorf("store: %s batch at %d: %w", l.path, b.BaseOffset, err)
			}
			rows = append(rows, got...)
		}
		if err := it.Err(); err != nil && !errors.Is(err, logbatch.ErrShortBatch) {
			return nil, from, err
		}
		if next >= res[0].HighWatermark {
			return rows, next, nil
		}
	}
}

func decodeRows(dec *logbatch.Decoder, b logbatch.Batch) ([]Row, error) {
	rec, err := dec.Decode(b)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	str := func(i int) (*array.String, bool) { a, ok := rec.Column(i).(*array.String); return a, ok }
	i32 := func(i int) (*array.Int32, bool) { a, ok := rec.Column(i).(*array.Int32); return a, ok }
	kind, ok0 := str(0)
	id, ok1 := i32(1)
	subject, ok2 := str(2)
	version, ok3 := i32(3)
	typ, ok4 := str(4)
	text, ok5 := str(5)
	canon, ok6 := str(6)
	refs, ok7 := str(7)
	at, ok8 := rec.Column(8).(*array.Timestamp)
	if !(ok0 && ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8) {
		return nil, errors.New("unexpected column types")
	}
	out := make([]Row, rec.NumRows())
	for i := range out {
		out[i] = Row{Kind: kind.Value(i), ID: id.Value(i), Subject: subject.Value(i), Version: version.Value(i),
			Type: typ.Value(i), Text: text.Value(i), Canonical: canon.Value(i), References: refs.Value(i), TimeMs: int64(at.Value(i))}
	}
	return out, nil
}

// forgetOn drops the table info when the table is gone, so that the next
// call finds or creates it again.
func (l *FlussLog) forgetOn(err error) {
	if c := fluss.CodeOf(err); c == fluss.CodeTableNotExist || errors.Is(err, fluss.ErrUnknownTable) {
		l.mu.Lock()
		l.info = nil
		l.mu.Unlock()
	}
}

// retryFor bounds the retries of one call: long enough for a new table's
// bucket to get a leader, short of clients' request timeouts.
const retryFor = 10 * time.Second
