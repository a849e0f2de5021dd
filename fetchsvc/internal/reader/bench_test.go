package reader

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// benchColumns are the columns of make bench's rows (e2e/bench/rows.go).
var benchColumns = []types.Field{
	{Name: "id", Type: types.DataType{Root: types.BigInt}},
	{Name: "n", Type: types.DataType{Root: types.Int, Nullable: true}},
	{Name: "score", Type: types.DataType{Root: types.Double, Nullable: true}},
	{Name: "ok", Type: types.DataType{Root: types.Boolean, Nullable: true}},
	{Name: "note", Type: types.DataType{Root: types.String, Nullable: true}},
	{Name: "name", Type: types.DataType{Root: types.String, Nullable: true}},
	{Name: "at", Type: types.DataType{Root: types.TimestampLTZ, Precision: 3, Nullable: true}},
	{Name: "amount", Type: types.DataType{Root: types.Decimal, Precision: 10, Scale: 2, Nullable: true}},
	{Name: "blob", Type: types.DataType{Root: types.Bytes, Nullable: true}},
	{Name: "day", Type: types.DataType{Root: types.Date, Nullable: true}},
}

// benchLog is n rows in Fluss log batches of 1000 rows, as a FetchLog
// answer holds them.
func benchLog(b testing.TB, n int) (*schemaPlan, []byte) {
	as, err := types.ArrowSchema(benchColumns)
	if err != nil {
		b.Fatal(err)
	}
	m := &catalogv1.TopicMapping{Topic: "t", Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON}}
	rp, err := rebuild.Compile(m, benchColumns)
	if err != nil {
		b.Fatal(err)
	}
	var log []byte
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for start := 0; start < n; start += 1000 {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
		for i := start; i < start+1000 && i < n; i++ {
			rb.Field(0).(*array.Int64Builder).Append(int64(i))
			rb.Field(1).(*array.Int32Builder).Append(int32(i % 1000))
			rb.Field(2).(*array.Float64Builder).Append(float64(i) / 7)
			rb.Field(3).(*array.BooleanBuilder).Append(i%2 == 0)
			if i%10 == 0 {
				rb.Field(4).AppendNull()
			} else {
				rb.Field(4).(*array.StringBuilder).Append("a note")
			}
			rb.Field(5).(*array.StringBuilder).Append("name-of-the-row")
			rb.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i) * time.Millisecond).UnixMilli()))
			rb.Field(7).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i * 101)))
			rb.Field(8).(*array.BinaryBuilder).Append([]byte("0123456789abcdef"))
			rb.Field(9).(*array.Date32Builder).Append(arrow.Date32(20000 + i%365))
		}
		rec := rb.NewRecordBatch()
		batch, err := logbatch.Build(rec, logbatch.DefaultOptions(0))
		if err != nil {
			b.Fatal(err)
		}
		// The leader stamps offsets; Build leaves them 0.
		log = append(log, stampOffset(batch, int64(start))...)
		rec.Release()
		rb.Release()
	}
	return &schemaPlan{arrow: as, rebuild: rp}, log
}

// BenchmarkConvertLog: Fluss log batches of make bench's rows to Kafka
// record batches, per record.
func BenchmarkConvertLog(b *testing.B) {
	const n = 10000
	p, log := benchLog(b, n)
	plans := func(context.Context, int16) (*schemaPlan, error) { return p, nil }
	for _, codec := range []rebuild.Codec{rebuild.CodecNone, rebuild.CodecLZ4, rebuild.CodecZstd, rebuild.CodecGzip} {
		b.Run(codec.String(), func(b *testing.B) {
			comp, err := rebuild.NewCompressor(codec)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var size int
			for b.Loop() {
				c, err := convertLog(context.Background(), log, 64<<20, defaultGrowth, comp, plans)
				if err != nil || c.records != n {
					b.Fatalf("%d records, %v", c.records, err)
				}
				size = len(c.kafka)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			b.ReportMetric(float64(size)/n, "bytes/record")
		})
	}
}

// stampOffset sets a built batch's base offset, as the leader does (the
// CRC does not cover it).
func stampOffset(batch []byte, offset int64) []byte {
	binary.LittleEndian.PutUint64(batch, uint64(offset))
	return batch
}
