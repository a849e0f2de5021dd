package fluss

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/bucketing"
	"github.com/ferrygw/ferry/services/fluss/compacted"
	"github.com/ferrygw/ferry/services/fluss/kvbatch"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/testenv"
)

// kvOp is one write to the test's primary-key table: an upsert of a whole
// row, or (del) a delete of id. A row with nulls has every non-key column
// NULL.
type kvOp struct {
	del    bool
	id     int64
	name   string
	amount int64 // DECIMAL(10, 2) unscaled
	big    int64 // DECIMAL(30, 4) unscaled
	micros int64 // TIMESTAMP(6)
	flag   bool
	n      int32
	nulls  bool
}

// javaRow is the row as KvReadBack prints it.
func (o kvOp) javaRow() string {
	if o.nulls {
		return strconv.FormatInt(o.id, 10) + "|null|null|null|null|null|null"
	}
	return fmt.Sprintf("%d|%s|%d.%02d|%d.%04d|%d.%d|%t|%d", o.id, o.name, o.amount/100, o.amount%100,
		o.big/10000, o.big%10000, o.micros/1000, o.micros%1000*1000, o.flag, o.n)
}

type kvChange struct{ change, row string }

// kvModel applies ops as a primary-key table does and records the
// changelog Fluss should write: +I for a new key, -U/+U for an update, -D
// for a delete of a present key, nothing for a delete of an absent one.
type kvModel struct {
	rows    map[int64]kvOp
	changes map[int64][]kvChange
	total   int
}

func (m *kvModel) apply(ops []kvOp) {
	for _, o := range ops {
		old, ok := m.rows[o.id]
		switch {
		case o.del && ok:
			m.changes[o.id] = append(m.changes[o.id], kvChange{"-D", old.javaRow()})
			delete(m.rows, o.id)
			m.total++
		case o.del:
		case ok:
			m.changes[o.id] = append(m.changes[o.id], kvChange{"-U", old.javaRow()}, kvChange{"+U", o.javaRow()})
			m.rows[o.id] = o
			m.total += 2
		default:
			m.changes[o.id] = append(m.changes[o.id], kvChange{"+I", o.javaRow()})
			m.rows[o.id] = o
			m.total++
		}
	}
}

// kvWriter writes ops with PutKv as an idempotent writer: one KV batch per
// bucket per call, batch sequences counted per bucket.
type kvWriter struct {
	t        *testing.T
	c        *Client
	info     *TableInfo
	fields   []types.Field
	keys     *bucketing.KeyEncoder
	rows     *compacted.RowEncoder
	writerID int64
	seq      map[int32]int32
	// last is the previous call's batches, for resending.
	last []BucketBatch
}

func (w *kvWriter) record(ops []kvOp) arrow.RecordBatch {
	schema, err := types.ArrowSchema(w.fields)
	if err != nil {
		w.t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	for _, o := range ops {
		rb.Field(0).(*array.Int64Builder).Append(o.id)
		if o.nulls || o.del {
			for i := 1; i < len(w.fields); i++ {
				rb.Field(i).AppendNull()
			}
			continue
		}
		rb.Field(1).(*array.StringBuilder).Append(o.name)
		rb.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(o.amount))
		rb.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(o.big))
		rb.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(o.micros))
		rb.Field(5).(*array.BooleanBuilder).Append(o.flag)
		rb.Field(6).(*array.Int32Builder).Append(o.n)
	}
	return rb.NewRecordBatch()
}

// put encodes ops into one batch per bucket and writes them, returning the
// result per bucket.
func (w *kvWriter) put(ops []kvOp) map[int32]PutKvResult {
	w.t.Helper()
	rec := w.record(ops)
	builders := map[int32]*kvbatch.Builder{}
	var key []byte
	for i, o := range ops {
		var err error
		if key, err = w.keys.Encode(key[:0], rec, i); err != nil {
			w.t.Fatal(err)
		}
		b, err := bucketing.Bucket(key, w.info.NumBuckets)
		if err != nil {
			w.t.Fatal(err)
		}
		kb := builders[int32(b)]
		if kb == nil {
			kb = kvbatch.NewBuilder()
			builders[int32(b)] = kb
		}
		if o.del {
			err = kb.AppendDelete(key)
		} else {
			err = kb.AppendRow(key, w.rows, rec, i)
		}
		if err != nil {
			w.t.Fatalf("op %d: %v", i, err)
		}
	}
	var batches []BucketBatch
	for b, kb := range builders {
		records, err := kb.Build(kvbatch.Options{SchemaID: int16(w.info.SchemaID), WriterID: w.writerID, BatchSequence: w.seq[b]})
		if err != nil {
			w.t.Fatal(err)
		}
		w.seq[b]++
		batches = append(batches, BucketBatch{Bucket: b, Records: records})
	}
	w.last = batches
	return w.send(batches)
}

// send calls PutKv, retrying buckets whose leader was not ready yet (the
// same batches with the same sequences: safe for an idempotent writer).
func (w *kvWriter) send(batches []BucketBatch) map[int32]PutKvResult {
	w.t.Helper()
	out := map[int32]PutKvResult{}
	for attempt := 0; len(batches) > 0; attempt++ {
		res, err := w.c.PutKv(testCtx(w.t), w.info.TableID, AcksAll, 10*time.Second, batches)
		if err != nil {
			w.t.Fatalf("PutKv: %v", err)
		}
		var again []BucketBatch
		for i, r := range res {
			var fe *Error
			if attempt < 50 && (errors.Is(r.Err, ErrNoLeader) || (errors.As(r.Err, &fe) && fe.StaleMetadata())) {
				again = append(again, batches[i])
				continue
			}
			out[r.Bucket] = r
		}
		batches = again
		if len(again) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return out
}

func requireApplied(t *testing.T, step string, res map[int32]PutKvResult) {
	t.Helper()
	for b, r := range res {
		if r.Err != nil || r.LogEndOffset < 0 {
			t.Fatalf("%s: bucket %d: %+v", step, b, r)
		}
	}
}

// TestRealPutKvUpsertsAndDeletes writes inserts, updates of the same keys
// and deletes to a primary-key table (created by the Java client) with
// PutKv, then reads it back with the official Java client: point lookups
// (the latest row per key, deleted keys absent) and the changelog (+I, -U,
// +U, -D in order per key).
func TestRealPutKvUpsertsAndDeletes(t *testing.T) {
	cluster := testenv.Fluss(t)
	c := dialReal(t)
	ctx := testCtx(t)
	db := cluster.NewDatabase(t, "ferry_kv")
	cluster.NewTable(t, testenv.TableSpec{
		Database: db, Table: "pk",
		Columns: []testenv.Column{
			{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"},
			{Name: "amount", Type: "DECIMAL(10, 2)"}, {Name: "big", Type: "DECIMAL(30, 4)"},
			{Name: "ts", Type: "TIMESTAMP(6)"}, {Name: "flag", Type: "BOOLEAN"}, {Name: "n", Type: "INT"},
		},
		PrimaryKey: []string{"id"}, BucketCount: 3,
	})
	path := TablePath{db, "pk"}
	info, err := c.GetTableInfo(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := info.KvFormat(); err != nil || f != KvFormatCompacted {
		t.Fatalf("KvFormat = %s %v, want the default %s", f, err, KvFormatCompacted)
	}
	writerID, err := c.InitWriter(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	fields := info.Schema.Fields()
	keys, err := bucketing.NewKeyEncoder(fields, info.PhysicalPrimaryKeys())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := compacted.NewRowEncoder(fields)
	if err != nil {
		t.Fatal(err)
	}
	w := &kvWriter{t: t, c: c, info: info, fields: fields, keys: keys, rows: rows, writerID: writerID, seq: map[int32]int32{}}
	m := &kvModel{rows: map[int64]kvOp{}, changes: map[int64][]kvChange{}}
	row := func(id int64, v int64) kvOp {
		return kvOp{id: id, name: fmt.Sprintf("name-%d-%d ⛵", id, v), amount: 100*id + v, big: 10000*v + id,
			micros: 1_700_000_000_000_000 + 1_000_001*v + id, flag: v%2 == 0, n: int32(v)}
	}
	rounds := [][]kvOp{
		{row(1, 1), row(2, 1), row(3, 1), row(4, 1), row(5, 1), row(6, 1)},
		{row(2, 2), {id: 4, nulls: true}, row(6, 2), {id: 3, del: true}},
		{row(3, 3), {id: 1, del: true}, row(4, 3), row(6, 3), {id: 6, del: true}, row(6, 4)},
	}
	for i, ops := range rounds {
		res := w.put(ops)
		requireApplied(t, fmt.Sprintf("round %d", i+1), res)
		m.apply(ops)
		if i == 0 {
			// The same batches again, same writer and sequences: Fluss
			// answers success with the log end offset of the first write
			// and applies nothing (the changelog below has no repeats).
			for b, r := range w.send(w.last) {
				if r.Err != nil || r.LogEndOffset != res[b].LogEndOffset {
					t.Errorf("resent batch for bucket %d: %+v, want success at log end offset %d", b, r, res[b].LogEndOffset)
				}
			}
		}
	}

	// A delete of a key that never existed: success, and no changelog
	// record. The changelog offset still moves by one: a KV batch that
	// changes nothing is logged as an empty batch (KvTablet does so to
	// keep the writer's batch sequence), which readers skip.
	missing := []kvOp{{id: 99, del: true}}
	rec := w.record(missing)
	key, _ := keys.Encode(nil, rec, 0)
	bucket, _ := bucketing.Bucket(key, info.NumBuckets)
	before, err := c.ListOffsets(ctx, info.TableID, nil, []int32{int32(bucket)}, OffsetLatest)
	if err != nil {
		t.Fatal(err)
	}
	res := w.put(missing)
	if r := res[int32(bucket)]; r.Err != nil || r.LogEndOffset != before[int32(bucket)]+1 {
		t.Errorf("delete of an absent key: %+v, want success with the log end offset %d+1 (an empty batch)", r, before[int32(bucket)])
	}
	m.apply(missing)

	// Every bucket's changelog ends where the model says: nothing was
	// applied twice, and the delete of an absent key took one offset.
	all := []int32{0, 1, 2}
	ends, err := c.ListOffsets(ctx, info.TableID, nil, all, OffsetLatest)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, e := range ends {
		sum += e
	}
	if sum != int64(m.total)+1 {
		t.Errorf("changelog ends at %v, %d offsets in all; want the model's %d records and one empty batch", ends, sum, m.total)
	}

	// Read back with the Java client.
	readBack := compileKvReadBack(t)
	ids := []string{"1", "2", "3", "4", "5", "6", "99"}
	out := readBack(ctx, append([]string{"lookup", cluster.Bootstrap, db, "pk"}, ids...)...)
	var want []string
	for _, s := range ids {
		id, _ := strconv.ParseInt(s, 10, 64)
		if r, ok := m.rows[id]; ok {
			want = append(want, s+"\t"+r.javaRow())
		} else {
			want = append(want, s+"\tabsent")
		}
	}
	if got := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(got, want) {
		t.Errorf("lookups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	out = readBack(ctx, "changelog", cluster.Bootstrap, db, "pk", strconv.Itoa(m.total), "60000")
	type logged struct {
		offset int64
		kvChange
	}
	got := map[int64][]logged{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			t.Fatalf("changelog line %q", line)
		}
		off, _ := strconv.ParseInt(f[1], 10, 64)
		id, _ := strconv.ParseInt(strings.SplitN(f[3], "|", 2)[0], 10, 64)
		got[id] = append(got[id], logged{off, kvChange{f[2], f[3]}})
	}
	for id := range int64(100) {
		g := got[id]
		// One key lives in one bucket: its offsets give its order.
		sort.Slice(g, func(i, j int) bool { return g[i].offset < g[j].offset })
		var changes []kvChange
		for _, l := range g {
			changes = append(changes, l.kvChange)
		}
		if !slices.Equal(changes, m.changes[id]) {
			t.Errorf("key %d changelog %v, want %v", id, changes, m.changes[id])
		}
	}
}

// compileKvReadBack compiles testdata/KvReadBack.java against the Fluss
// client jars and returns a function that runs it.
func compileKvReadBack(t *testing.T) func(ctx context.Context, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lib, err := filepath.Abs(filepath.Join("..", "..", ".cache", "fluss", "client-lib"))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := testenv.CompileWithFlussClient(ctx, lib, t.TempDir(), filepath.Join("testdata", "KvReadBack.java"))
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "java", append([]string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", cp, "KvReadBack"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("KvReadBack %s: %v\n%s", args[0], err, stderr.String())
		}
		return string(out)
	}
}
