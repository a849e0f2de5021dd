package logbatch_test

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// benchColumns look like a typical Kafka-sourced log table: key, value,
// timestamp, a few scalar columns.
func benchColumns() []types.Field {
	n := func(r types.Root) types.DataType { return types.DataType{Root: r, Nullable: true} }
	return []types.Field{
		{Name: "key", Type: n(types.Bytes)},
		{Name: "value", Type: n(types.String)},
		{Name: "ts", Type: types.DataType{Root: types.TimestampLTZ, Nullable: true, Precision: 3}},
		{Name: "partition", Type: n(types.Int)},
		{Name: "offset", Type: n(types.BigInt)},
		{Name: "amount", Type: types.DataType{Root: types.Decimal, Nullable: true, Precision: 12, Scale: 2}},
		{Name: "ok", Type: n(types.Boolean)},
	}
}

func BenchmarkBuild(b *testing.B) {
	for _, c := range []struct {
		name string
		comp logbatch.Compression
	}{{"none", logbatch.CompressionNone}, {"lz4", logbatch.CompressionLZ4Frame}, {"zstd3", logbatch.CompressionZSTD}} {
		for _, shape := range []struct{ rows, nullPct int }{{4096, 0}, {4096, 10}, {300, 10}} {
			nullPct := shape.nullPct
			rec, err := goldentest.Record(memory.NewGoAllocator(), benchColumns(), shape.rows, 1, nullPct)
			if err != nil {
				b.Fatal(err)
			}
			opts := logbatch.DefaultOptions(1)
			opts.Compression = c.comp
			builder := logbatch.NewBuilder()
			buf, err := builder.Append(nil, rec, opts)
			if err != nil {
				b.Fatal(err)
			}
			var raw int64
			for _, col := range rec.Columns() {
				for _, bb := range col.Data().Buffers() {
					if bb != nil {
						raw += int64(bb.Len())
					}
				}
			}
			name := c.name + "/nulls0"
			if nullPct > 0 {
				name = c.name + "/nulls10"
			}
			if shape.rows != 4096 {
				// About one producer batch of 64 KiB of JSON records.
				name = fmt.Sprintf("%s/rows%d", name, shape.rows)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(raw)
				for b.Loop() {
					buf, err = builder.Append(buf[:0], rec, opts)
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
			rec.Release()
		}
	}
}
