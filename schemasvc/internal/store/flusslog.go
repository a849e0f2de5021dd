package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/systable"
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
type Fluss = systable.Fluss

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
	table *systable.Table
}

// NewFlussLog returns the log in the table at path ("database.table"),
// created (with its database) when first needed or by Prepare.
func NewFlussLog(f Fluss, path string, opts systable.Options) (*FlussLog, error) {
	t, err := systable.New(f, systable.Spec{
		Path:    path,
		Columns: columns,
		Buckets: 1,
		Comment: "Ferry's Schema Registry: schemas, subject versions and configs",
		// No TTL: a schema id must keep its meaning for as long as any
		// record framed with it is stored.
		Properties: map[string]string{"table.log.ttl": "0ms"},
	}, opts)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return &FlussLog{table: t}, nil
}

// Table is the log's table, for the service to prepare at start.
func (l *FlussLog) Table() *systable.Table { return l.table }

// Append implements Log.
func (l *FlussLog) Append(ctx context.Context, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, l.table.Schema())
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
	// A retry after a lost answer may store the batch twice: harmless,
	// the second copy of every claim loses to the first.
	if err := l.table.Append(ctx, 0, rec); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// Read implements Log.
func (l *FlussLog) Read(ctx context.Context, from int64) ([]Row, int64, error) {
	var rows []Row
	next, err := l.table.Scan(ctx, 0, from, func(rec arrow.RecordBatch) error {
		got, err := decodeRows(rec)
		rows = append(rows, got...)
		return err
	})
	if err != nil {
		return nil, from, fmt.Errorf("store: %w", err)
	}
	return rows, next, nil
}

func decodeRows(rec arrow.RecordBatch) ([]Row, error) {
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
