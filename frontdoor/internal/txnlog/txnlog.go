// Package txnlog keeps the transaction coordinator's journal in a Fluss
// log table Ferry owns (txn.Store), so that transaction state survives
// the loss of a frontdoor and its disk.
package txnlog

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/systable"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// DefaultTable is where the journal lives unless configured otherwise.
const DefaultTable = "ferry_system.transactions"

// Fluss is what the log needs from a Fluss client; *fluss.Client has it.
type Fluss = systable.Fluss

// Operations of a row, as txn.Store's calls.
const (
	opReset  = "reset"
	opAppend = "append"
	opForget = "forget"
)

// columns is the table's schema; an existing table must have these
// columns in this order. One bucket: rows of an id fold in the order
// they were written. write_id tells a retried write's second copy from
// a new write.
var columns = []types.Field{
	{Name: "transactional_id", Type: types.DataType{Root: types.String}},
	{Name: "op", Type: types.DataType{Root: types.String}},
	{Name: "write_id", Type: types.DataType{Root: types.BigInt}},
	{Name: "data", Type: types.DataType{Root: types.Bytes}},
	{Name: "written_at", Type: types.DataType{Root: types.TimestampLTZ, Precision: 3}},
}

// Log is the journal in a one-bucket Fluss log table. Each call returns
// once Fluss has acknowledged the row with acks=all.
type Log struct {
	table   *systable.Table
	timeout time.Duration
}

// New returns the log in the table at path ("database.table"), created
// (with its database) when first needed. timeout bounds each call,
// retries included.
func New(f Fluss, path string, timeout time.Duration, opts systable.Options) (*Log, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	opts.RetryFor = timeout
	opts.FetchBytes = 16 << 20
	t, err := systable.New(f, systable.Spec{
		Path:    path,
		Columns: columns,
		Buckets: 1,
		Comment: "Ferry's transaction coordinator journal",
		// No TTL: an open transaction's rows must stay until it ends.
		Properties: map[string]string{"table.log.ttl": "0ms"},
	}, opts)
	if err != nil {
		return nil, fmt.Errorf("txnlog: %w", err)
	}
	return &Log{table: t, timeout: timeout}, nil
}

// Reset implements txn.Store.
func (l *Log) Reset(id string, b []byte) error { return l.write(id, opReset, b) }

// Append implements txn.Store.
func (l *Log) Append(id string, b []byte) error { return l.write(id, opAppend, b) }

// Forget implements txn.Store.
func (l *Log) Forget(id string) error { return l.write(id, opForget, nil) }

func (l *Log) write(id, op string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	b := array.NewRecordBuilder(memory.DefaultAllocator, l.table.Schema())
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(id)
	b.Field(1).(*array.StringBuilder).Append(op)
	b.Field(2).(*array.Int64Builder).Append(writeID())
	b.Field(3).(*array.BinaryBuilder).Append(data)
	b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Now().UnixMilli()))
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := l.table.Append(ctx, 0, rec); err != nil {
		return fmt.Errorf("txnlog: %w", err)
	}
	return nil
}

// writeID is random: a row stored twice by a retry has the same one.
func writeID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) >> 1)
}

// row is one decoded row.
type row struct {
	id, op  string
	writeID int64
	data    []byte
}

// Load implements txn.Store: it reads the whole table and folds each
// id's rows.
func (l *Log) Load() ([][]byte, error) {
	// Load runs at the frontdoor's start: the table may be created there,
	// and created again if Fluss loses the creation.
	ectx, ecancel := context.WithTimeout(context.Background(), systable.EnsureWithin)
	_, err := l.table.Info(ectx)
	ecancel()
	if err != nil {
		return nil, fmt.Errorf("txnlog: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*l.timeout)
	defer cancel()
	rows, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	return fold(rows), nil
}

// Read implements txn.Reader: id's lines, when coordination of id moves
// to this frontdoor. It reads the whole table (see docs/limits.md).
func (l *Log) Read(id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*l.timeout)
	defer cancel()
	rows, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	mine := rows[:0]
	for _, r := range rows {
		if r.id == id {
			mine = append(mine, r)
		}
	}
	if logs := fold(mine); len(logs) == 1 {
		return logs[0], nil
	}
	return nil, nil
}

// fold replays rows: a reset replaces an id's lines, an append adds to
// them, a forget drops them; a write_id seen before is a retry's copy.
func fold(rows []row) [][]byte {
	logs := map[string][]byte{}
	var order []string
	seen := map[int64]bool{}
	for _, r := range rows {
		if seen[r.writeID] {
			continue
		}
		seen[r.writeID] = true
		if _, ok := logs[r.id]; !ok && r.op != opForget {
			order = append(order, r.id)
		}
		switch r.op {
		case opReset:
			logs[r.id] = append([]byte(nil), r.data...)
		case opAppend:
			logs[r.id] = append(logs[r.id], r.data...)
		case opForget:
			delete(logs, r.id)
		}
	}
	out := make([][]byte, 0, len(logs))
	for _, id := range order {
		if b, ok := logs[id]; ok {
			out = append(out, b)
			delete(logs, id) // an id forgotten and written again is listed once
		}
	}
	return out
}

func (l *Log) read(ctx context.Context) ([]row, error) {
	var rows []row
	_, err := l.table.Scan(ctx, 0, 0, func(rec arrow.RecordBatch) error {
		got, err := decodeRows(rec)
		rows = append(rows, got...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("txnlog: %w", err)
	}
	return rows, nil
}

func decodeRows(rec arrow.RecordBatch) ([]row, error) {
	id, ok0 := rec.Column(0).(*array.String)
	op, ok1 := rec.Column(1).(*array.String)
	wid, ok2 := rec.Column(2).(*array.Int64)
	data, ok3 := rec.Column(3).(*array.Binary)
	if !(ok0 && ok1 && ok2 && ok3) {
		return nil, errors.New("unexpected column types")
	}
	out := make([]row, rec.NumRows())
	for i := range out {
		out[i] = row{id: id.Value(i), op: op.Value(i), writeID: wid.Value(i), data: append([]byte(nil), data.Value(i)...)}
	}
	return out, nil
}
