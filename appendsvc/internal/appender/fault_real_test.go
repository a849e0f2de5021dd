package appender

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/testenv"
)

// ipcFromArrays encodes one record batch of the given columns as an Arrow
// IPC stream, the way transcodesvc hands batches over.
func ipcFromArrays(t testing.TB, fields []arrow.Field, cols []arrow.Array) []byte {
	t.Helper()
	b, err := encodeIPC(fields, cols)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encodeIPC(fields []arrow.Field, cols []arrow.Array) ([]byte, error) {
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, cols, int64(cols[0].Len()))
	defer rec.Release()
	var b bytes.Buffer
	w := ipc.NewWriter(&b, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func int64Array(vals []int64, valid []bool) arrow.Array {
	b := array.NewInt64Builder(memory.NewGoAllocator())
	defer b.Release()
	b.AppendValues(vals, valid)
	return b.NewArray()
}

func int32Array(vals []int32) arrow.Array {
	b := array.NewInt32Builder(memory.NewGoAllocator())
	defer b.Release()
	b.AppendValues(vals, nil)
	return b.NewArray()
}

func stringArray(vals []string) arrow.Array {
	b := array.NewStringBuilder(memory.NewGoAllocator())
	defer b.Release()
	b.AppendValues(vals, nil)
	return b.NewArray()
}

// idNameIPC is a batch for testCols (id BIGINT NOT NULL, name STRING) with
// ids first..first+n-1 and names derived from them, so a scanned row names
// the job that wrote it.
func idNameIPC(t testing.TB, first int64, n int) []byte {
	t.Helper()
	b, err := encodeIDName(first, n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encodeIDName(first int64, n int) ([]byte, error) {
	ids := make([]int64, n)
	names := make([]string, n)
	for i := range n {
		ids[i] = first + int64(i)
		names[i] = fmt.Sprintf("row-%d", ids[i])
	}
	return encodeIPC([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, []arrow.Array{int64Array(ids, nil), stringArray(names)})
}

// TestRealAppendSchemaMismatch sends batches whose Arrow schema does not fit
// the table next to one that does: each misfit is answered with a
// non-retriable CORRUPT_RECORD and no offset, and the Java reader finds
// exactly the good batch in the table, nothing of the others.
func TestRealAppendSchemaMismatch(t *testing.T) {
	e := newRealEnv(t)
	info := e.table(t, "mismatch", testCols, 1, "LZ4_FRAME")
	nullable := arrow.BinaryTypes.String
	cases := []struct {
		name string
		ipc  []byte
		rows int
	}{
		{"missing column", ipcFromArrays(t, []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}},
			[]arrow.Array{int64Array([]int64{1, 2}, nil)}), 2},
		{"extra column", ipcFromArrays(t, []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "name", Type: nullable, Nullable: true}, {Name: "more", Type: arrow.PrimitiveTypes.Int64}},
			[]arrow.Array{int64Array([]int64{1, 2}, nil), stringArray([]string{"a", "b"}), int64Array([]int64{3, 4}, nil)}), 2},
		{"narrower type", ipcFromArrays(t, []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32},
			{Name: "name", Type: nullable, Nullable: true}},
			[]arrow.Array{int32Array([]int32{1, 2}), stringArray([]string{"a", "b"})}), 2},
		{"renamed column", ipcFromArrays(t, []arrow.Field{{Name: "key", Type: arrow.PrimitiveTypes.Int64},
			{Name: "name", Type: nullable, Nullable: true}},
			[]arrow.Array{int64Array([]int64{1, 2}, nil), stringArray([]string{"a", "b"})}), 2},
		{"swapped columns", ipcFromArrays(t, []arrow.Field{{Name: "name", Type: nullable, Nullable: true},
			{Name: "id", Type: arrow.PrimitiveTypes.Int64}},
			[]arrow.Array{stringArray([]string{"a", "b"}), int64Array([]int64{1, 2}, nil)}), 2},
		{"null in NOT NULL", ipcFromArrays(t, []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "name", Type: nullable, Nullable: true}},
			[]arrow.Array{int64Array([]int64{1, 0}, []bool{true, false}), stringArray([]string{"a", "b"})}), 2},
		{"not arrow", []byte("this is not an Arrow IPC stream"), 2},
	}
	var reqs []*appendv1.AppendRequest
	for i, c := range cases {
		r := baseReq(uint64(i+1), 0, c.ipc, c.rows)
		r.TableId, r.SchemaId = info.TableID, info.SchemaID
		r.Database, r.Table = info.Database, info.Table
		reqs = append(reqs, r)
	}
	good := baseReq(100, 0, idNameIPC(t, 7000, 3), 3)
	good.TableId, good.SchemaId = info.TableID, info.SchemaID
	good.Database, good.Table = info.Database, info.Table
	reqs = append(reqs, good)
	answers := e.stream(t, reqs)
	for i, c := range cases {
		a := answers[uint64(i+1)]
		if a == nil {
			t.Fatalf("%s: no answer", c.name)
		}
		if fluss.ErrorCode(a.GetErrorCode()) != fluss.CodeCorruptRecord || a.GetRetriable() || a.GetBaseOffset() != -1 || a.GetErrorMessage() == "" {
			t.Errorf("%s: answer %v, want non-retriable CORRUPT_RECORD without offset", c.name, a)
		}
	}
	if a := answers[100]; a.GetErrorCode() != 0 || a.GetBaseOffset() != 0 {
		t.Fatalf("good job: %v", a)
	}
	rows := e.cluster.Scan(t, e.db, "mismatch", testenv.ScanOptions{Timeout: time.Minute})
	if len(rows) != 3 {
		t.Fatalf("table holds %d rows, want only the good job's 3: %+v", len(rows), rows)
	}
	for i, r := range rows {
		if r.Offset != int64(i) || fmt.Sprint(r.Row["id"]) != fmt.Sprint(7000+i) || r.Row["name"] != fmt.Sprintf("row-%d", 7000+i) {
			t.Errorf("row %d: %+v", i, r)
		}
	}
}

// TestRealAppendDroppedTable appends to a table, drops it, and appends
// again by the same id: the job must fail fast with a non-retriable
// TABLE_NOT_EXIST (Fluss's answer for an id it no longer has), not retry
// until its timeout, and a later job for a live table on the same stream
// must still succeed.
func TestRealAppendDroppedTable(t *testing.T) {
	e := newRealEnv(t)
	gone := e.table(t, "dropped", testCols, 1, "NONE")
	live := e.table(t, "alive", testCols, 1, "NONE")
	first := baseReq(1, 0, idNameIPC(t, 1, 2), 2)
	first.TableId, first.SchemaId = gone.TableID, gone.SchemaID
	first.Database, first.Table = gone.Database, gone.Table
	if a := e.stream(t, []*appendv1.AppendRequest{first})[1]; a.GetErrorCode() != 0 {
		t.Fatalf("append before the drop: %v", a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.fc.DropTable(ctx, fluss.TablePath{Database: e.db, Table: "dropped"}, false); err != nil {
		t.Fatal(err)
	}
	after := baseReq(2, 0, idNameIPC(t, 3, 2), 2)
	after.TableId, after.SchemaId, after.TimeoutMs = gone.TableID, gone.SchemaID, 20000
	after.Database, after.Table = gone.Database, gone.Table
	other := baseReq(3, 0, idNameIPC(t, 5, 2), 2)
	other.TableId, other.SchemaId = live.TableID, live.SchemaID
	other.Database, other.Table = live.Database, live.Table
	start := time.Now()
	answers := e.stream(t, []*appendv1.AppendRequest{after, other})
	took := time.Since(start)
	a := answers[2]
	if fluss.ErrorCode(a.GetErrorCode()) != fluss.CodeTableNotExist || a.GetRetriable() || a.GetBaseOffset() != -1 {
		t.Errorf("append after the drop: %v (after %v), want non-retriable TABLE_NOT_EXIST", a, took)
	}
	if took > 15*time.Second {
		t.Errorf("append after the drop took %v: it was retried instead of failing", took)
	}
	if a := answers[3]; a.GetErrorCode() != 0 || a.GetBaseOffset() != 0 {
		t.Errorf("append to the live table: %v", a)
	}
}

// TestRealAppendDuplicateBatch shows how Fluss 0.9.1 treats a retried
// idempotent batch (same writer id and batch sequence): the leader does not
// append it again and answers success with the original batch's base
// offset, so a job retried after a lost answer still reports where its rows
// are. A sequence gap is refused with OUT_OF_ORDER_SEQUENCE.
func TestRealAppendDuplicateBatch(t *testing.T) {
	e := newRealEnv(t)
	info := e.table(t, "dedup", testCols, 1, "LZ4_FRAME")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wid, err := e.fc.InitWriter(ctx, fluss.TablePath{Database: e.db, Table: "dedup"})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id uint64, seq int32, first int64) *appendv1.AppendRequest {
		r := baseReq(id, 0, idNameIPC(t, first, 3), 3)
		r.TableId, r.SchemaId, r.WriterId, r.BatchSequence, r.TimeoutMs = info.TableID, info.SchemaID, wid, seq, 10000
		r.Database, r.Table = info.Database, info.Table
		return r
	}
	steps := []struct {
		name       string
		req        *appendv1.AppendRequest
		wantCode   fluss.ErrorCode
		wantOffset int64
	}{
		{"first batch", job(1, 0, 100), fluss.CodeNone, 0},
		{"same batch again", job(2, 0, 100), fluss.CodeNone, 0},
		{"next batch", job(3, 1, 200), fluss.CodeNone, 3},
		{"first batch a third time", job(4, 0, 100), fluss.CodeNone, 0},
		{"sequence gap", job(5, 5, 300), fluss.CodeOutOfOrderSequence, -1},
	}
	for _, s := range steps {
		// One stream per step: each answer is in before the next is sent.
		a := e.stream(t, []*appendv1.AppendRequest{s.req})[s.req.GetJobId()]
		if fluss.ErrorCode(a.GetErrorCode()) != s.wantCode || a.GetBaseOffset() != s.wantOffset {
			t.Errorf("%s: answer %v, want code %s offset %d", s.name, a, s.wantCode, s.wantOffset)
		}
		// Fluss refuses a gap before appending: the sequence is free again.
		if s.wantCode == fluss.CodeOutOfOrderSequence && (a.GetKafkaErrorCode() != int32(kerr.OutOfOrderSequenceNumber.Code) || a.GetPossiblyStored()) {
			t.Errorf("%s: answer %v, want OUT_OF_ORDER_SEQUENCE_NUMBER, not possibly stored", s.name, a)
		}
	}
	rows := e.cluster.Scan(t, e.db, "dedup", testenv.ScanOptions{Timeout: time.Minute})
	var ids []string
	for _, r := range rows {
		ids = append(ids, fmt.Sprint(r.Row["id"]))
	}
	if got := strings.Join(ids, ","); got != "100,101,102,200,201,202" {
		t.Errorf("table holds ids %s, want each batch once: 100,101,102,200,201,202", got)
	}
}
