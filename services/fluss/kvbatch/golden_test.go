package kvbatch_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/bucketing"
	"github.com/ferrygw/ferry/services/fluss/compacted"
	"github.com/ferrygw/ferry/services/fluss/kvbatch"
	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// pkColumns is a primary-key table with every scalar Fluss type (every
// TIME/TIMESTAMP precision class, compact and non-compact decimals) and a
// two-column key at both ends of the row.
func pkColumns() []types.Field {
	cols := []types.Field{{Name: "id", Type: types.DataType{Root: types.BigInt}}}
	for _, c := range goldentest.AllTypesColumns() {
		switch c.Type.Root {
		case types.Array, types.Map, types.Row:
			continue
		}
		cols = append(cols, c)
	}
	return append(cols, types.Field{Name: "name", Type: types.DataType{Root: types.String}})
}

type kvCase struct {
	name    string
	pk      []string
	rows    int
	nullPct int
	deletes func(i int) bool // nil: all upserts
	opts    kvbatch.Options
}

func kvCases() []kvCase {
	plain := kvbatch.DefaultOptions(1)
	every3rd := func(i int) bool { return i%3 == 1 }
	return []kvCase{
		{name: "upsert/1", pk: []string{"id"}, rows: 1, nullPct: 20, opts: plain},
		{name: "upsert/50", pk: []string{"id", "name"}, rows: 50, nullPct: 20, opts: plain},
		{name: "upsert/no-nulls", pk: []string{"id"}, rows: 20, nullPct: 0, opts: plain},
		{name: "upsert/all-nulls", pk: []string{"name", "id"}, rows: 20, nullPct: 100, opts: plain},
		{name: "mixed/deletes", pk: []string{"id", "name"}, rows: 30, nullPct: 20, deletes: every3rd, opts: plain},
		{name: "deletes-only", pk: []string{"id"}, rows: 10, deletes: func(int) bool { return true }, opts: plain},
		{name: "idempotent", pk: []string{"id"}, rows: 12, nullPct: 20, deletes: every3rd,
			opts: kvbatch.Options{SchemaID: 3, WriterID: 42, BatchSequence: 7}},
		// Over the Java builder's 64 KiB pages: records span page boundaries.
		{name: "multipage", pk: []string{"id", "name"}, rows: 1500, nullPct: 10, deletes: func(i int) bool { return i%17 == 0 }, opts: plain},
	}
}

// TestGoldenAgainstJavaUpsertWriter compares batches with what Fluss
// 0.9.1's own classes (the UpsertWriter's key and row encoders and
// KvRecordBatchBuilder) build for the same rows.
func TestGoldenAgainstJavaUpsertWriter(t *testing.T) {
	gen := goldentest.New(t)
	mem := memory.NewGoAllocator()
	cols := pkColumns()
	cases := kvCases()
	recs := make([]arrow.RecordBatch, len(cases))
	reqs := make([]goldentest.Request, len(cases))
	for i, c := range cases {
		rec, err := goldentest.Record(mem, cols, c.rows, uint64(100+i), c.nullPct)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = rec
		var deletes []bool
		if c.deletes != nil {
			for r := range c.rows {
				deletes = append(deletes, c.deletes(r))
			}
		}
		reqs[i] = goldentest.KvRequest(t, cols, rec, goldentest.KvSpec{
			PrimaryKey: c.pk, SchemaID: int(c.opts.SchemaID), WriterID: c.opts.WriterID,
			Sequence: c.opts.BatchSequence, Deletes: deletes,
		})
	}
	answers := gen.Run(t, reqs...)
	rows, err := compacted.NewRowEncoder(cols)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := goldentest.Bytes(t, answers[i])
			keys, err := bucketing.NewKeyEncoder(cols, c.pk)
			if err != nil {
				t.Fatal(err)
			}
			b := kvbatch.NewBuilder()
			var key []byte
			for r := range c.rows {
				if key, err = keys.Encode(key[:0], recs[i], r); err != nil {
					t.Fatal(err)
				}
				if c.deletes != nil && c.deletes(r) {
					err = b.AppendDelete(key)
				} else {
					err = b.AppendRow(key, rows, recs[i], r)
				}
				if err != nil {
					t.Fatalf("row %d: %v", r, err)
				}
			}
			got, err := b.Build(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if b.Size() != len(got) {
				t.Errorf("Size() = %d, built %d bytes", b.Size(), len(got))
			}
			h, records, err := kvbatch.Decode(want)
			if err != nil {
				t.Fatalf("Java batch does not decode: %v", err)
			}
			if int(h.RecordCount) != c.rows || h.WriterID != c.opts.WriterID || h.BatchSequence != c.opts.BatchSequence || h.SchemaID != c.opts.SchemaID {
				t.Errorf("Java header %+v, want %d records and options %+v", h, c.rows, c.opts)
			}
			for r, rec := range records {
				if isDelete := c.deletes != nil && c.deletes(r); isDelete != (rec.Row == nil) {
					t.Errorf("Java record %d: delete %v, row %d bytes", r, isDelete, len(rec.Row))
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Go batch (%d bytes) differs from Java (%d bytes): %s", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

func firstDiff(got, want []byte) string {
	n := min(len(got), len(want))
	for i := range n {
		if got[i] != want[i] {
			lo, hi := max(0, i-8), min(n, i+8)
			return fmt.Sprintf("first difference at byte %d: go % x, java % x", i, got[lo:hi], want[lo:hi])
		}
	}
	return fmt.Sprintf("equal for %d bytes, lengths differ", n)
}
