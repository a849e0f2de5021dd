package kvbatch_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/bucketing"
	"github.com/ferrygw/ferry/services/fluss/compacted"
	"github.com/ferrygw/ferry/services/fluss/kvbatch"
	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
)

// BenchmarkBuild measures one 1000-row batch of the golden test's table
// (every scalar type, 20% nulls, one in ten rows a delete): key encoding,
// row encoding and the batch, as a writer for a primary-key table runs them.
func BenchmarkBuild(b *testing.B) {
	cols := pkColumns()
	rec, err := goldentest.Record(memory.NewGoAllocator(), cols, 1000, 1, 20)
	if err != nil {
		b.Fatal(err)
	}
	keys, err := bucketing.NewKeyEncoder(cols, []string{"id", "name"})
	if err != nil {
		b.Fatal(err)
	}
	rows, err := compacted.NewRowEncoder(cols)
	if err != nil {
		b.Fatal(err)
	}
	bb := kvbatch.NewBuilder()
	var key []byte
	size := 0
	b.ReportAllocs()
	for b.Loop() {
		bb.Reset()
		for r := range int(rec.NumRows()) {
			key, _ = keys.Encode(key[:0], rec, r)
			if r%10 == 9 {
				err = bb.AppendDelete(key)
			} else {
				err = bb.AppendRow(key, rows, rec, r)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		out, err := bb.Build(kvbatch.DefaultOptions(1))
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.SetBytes(int64(size))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*int(rec.NumRows())), "ns/row")
}
