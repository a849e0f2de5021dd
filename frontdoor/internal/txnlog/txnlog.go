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

// DefaultTable is where the journal lives unless configured otherwise.
const DefaultTable = "ferry_system.transactions"

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
	fluss   Fluss
	path    fluss.TablePath
	schema  *arrow.Schema
	timeout time.Duration

	mu   sync.Mutex
	info *fluss.TableInfo // nil until found or created
}

// New returns the log in the table at path ("database.table"), created
// (with its database) when first needed. timeout bounds each call,
// retries included.
func New(f Fluss, path string, timeout time.Duration) (*Log, error) {
	db, table, ok := strings.Cut(path, ".")
	if !ok || db == "" || table == "" || strings.Contains(table, ".") {
		return nil, fmt.Errorf("txnlog: table %q is not database.table", path)
	}
	schema, err := types.ArrowSchema(columns)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &Log{fluss: f, path: fluss.TablePath{Database: db, Table: table}, schema: schema, timeout: timeout}, nil
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
	info, err := l.table(ctx)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, l.schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(id)
	b.Field(1).(*array.StringBuilder).Append(op)
	b.Field(2).(*array.Int64Builder).Append(writeID())
	b.Field(3).(*array.BinaryBuilder).Append(data)
	b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Now().UnixMilli()))
	rec := b.NewRecordBatch()
	defer rec.Release()
	batch, err := logbatch.Build(rec, logbatch.DefaultOptions(int16(info.SchemaID)))
	if err != nil {
		return err
	}
	err = fluss.RetryWithin(ctx, l.timeout, func() error {
		res, err := l.fluss.ProduceLog(ctx, info.TableID, fluss.AcksAll, l.timeout, []fluss.BucketBatch{{Bucket: 0, Records: batch}})
		if err == nil {
			err = res[0].Err
		}
		return err
	})
	l.forgetOn(err)
	if err != nil {
		return fmt.Errorf("txnlog: write to %s: %w", l.path, err)
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
	info, err := l.table(ctx)
	if err != nil {
		return nil, err
	}
	var starts map[int32]int64
	err = fluss.RetryWithin(ctx, l.timeout, func() (err error) {
		starts, err = l.fluss.ListOffsets(ctx, info.TableID, nil, []int32{0}, fluss.OffsetEarliest)
		return err
	})
	if err != nil {
		l.forgetOn(err)
		return nil, fmt.Errorf("txnlog: start of %s: %w", l.path, err)
	}
	dec, err := logbatch.NewDecoder(l.schema, nil)
	if err != nil {
		return nil, err
	}
	var rows []row
	next := starts[0]
	for {
		var res []fluss.FetchResult
		err := fluss.RetryWithin(ctx, l.timeout, func() (err error) {
			res, err = l.fluss.FetchLog(ctx, info.TableID, []fluss.FetchBucket{{Bucket: 0, Offset: next, MaxBytes: 16 << 20}}, fluss.FetchOptions{})
			if err == nil {
				err = res[0].Err
			}
			return err
		})
		if err != nil {
			l.forgetOn(err)
			return nil, fmt.Errorf("txnlog: read %s at %d: %w", l.path, next, err)
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
				return nil, fmt.Errorf("txnlog: %s batch at %d: %w", l.path, b.BaseOffset, err)
			}
			rows = append(rows, got...)
		}
		if err := it.Err(); err != nil && !errors.Is(err, logbatch.ErrShortBatch) {
			return nil, err
		}
		if next >= res[0].HighWatermark {
			return rows, nil
		}
	}
}

func decodeRows(dec *logbatch.Decoder, b logbatch.Batch) ([]row, error) {
	rec, err := dec.Decode(b)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
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

// table finds the table, creating it when missing. kafka.enabled=false
// keeps it out of catalogsvc's topics.
func (l *Log) table(ctx context.Context) (*fluss.TableInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.info != nil {
		return l.info, nil
	}
	info, err := l.fluss.GetTableInfo(ctx, l.path)
	if c := fluss.CodeOf(err); c == fluss.CodeTableNotExist || c == fluss.CodeDatabaseNotExist {
		if err := l.fluss.CreateDatabase(ctx, l.path.Database, fluss.DatabaseDescriptor{Comment: "Ferry's own tables"}, true); err != nil {
			return nil, fmt.Errorf("txnlog: create database %s: %w", l.path.Database, err)
		}
		cols := make([]types.Column, len(columns))
		for i, c := range columns {
			cols[i] = types.Column{Name: c.Name, Type: c.Type}
		}
		// No TTL: an open transaction's rows must stay until it ends.
		if err := l.fluss.CreateTable(ctx, l.path, fluss.TableDescriptor{
			Schema:           types.Schema{Columns: cols},
			Comment:          "Ferry's transaction coordinator journal",
			NumBuckets:       1,
			Properties:       map[string]string{"table.log.ttl": "0ms"},
			CustomProperties: map[string]string{"kafka.enabled": "false"},
		}, true); err != nil {
			return nil, fmt.Errorf("txnlog: create table %s: %w", l.path, err)
		}
		l.awaitLeader(ctx)
		info, err = l.fluss.GetTableInfo(ctx, l.path)
	}
	if err != nil {
		return nil, fmt.Errorf("txnlog: table %s: %w", l.path, err)
	}
	got := info.Schema.Fields()
	if len(got) != len(columns) || info.NumBuckets != 1 {
		return nil, fmt.Errorf("txnlog: table %s has %d columns and %d buckets, not Ferry's %d and 1", l.path, len(got), info.NumBuckets, len(columns))
	}
	for i, c := range columns {
		if got[i].Name != c.Name || got[i].Type.Root != c.Type.Root {
			return nil, fmt.Errorf("txnlog: table %s column %d is %s %s, not %s %s", l.path, i, got[i].Name, got[i].Type, c.Name, c.Type)
		}
	}
	l.info = info
	return info, nil
}

// awaitLeader waits, up to a minute, for the new table's bucket to have a
// leader; calls that find none retry anyway.
func (l *Log) awaitLeader(ctx context.Context) {
	_ = fluss.RetryWithin(ctx, time.Minute, func() error {
		r, err := l.fluss.RefreshTableRoute(ctx, l.path)
		if err == nil && (len(r.Buckets) == 0 || r.Buckets[0].Leader == fluss.NoLeader) {
			err = &fluss.Error{Code: fluss.CodeLeaderNotAvailable, Message: fmt.Sprintf("table %s: no leader yet", l.path)}
		}
		return err
	})
}

// forgetOn drops the table info when the table is gone, so that the next
// call finds or creates it again.
func (l *Log) forgetOn(err error) {
	if c := fluss.CodeOf(err); c == fluss.CodeTableNotExist || errors.Is(err, fluss.ErrUnknownTable) {
		l.mu.Lock()
		l.info = nil
		l.mu.Unlock()
	}
}
