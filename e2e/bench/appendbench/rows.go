package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// benchColumns are the benchmark table's ten columns: fixed and variable
// width, a nullable string with nulls, decimal, timestamp, date, bytes.
// Row i holds the values AppendBench.java's row(i) does; keep them in step.
var benchColumns = []types.Column{
	col("id", types.DataType{Root: types.BigInt}),
	col("qty", types.DataType{Root: types.Int, Nullable: true}),
	col("price", types.DataType{Root: types.Double, Nullable: true}),
	col("flag", types.DataType{Root: types.Boolean, Nullable: true}),
	col("name", types.DataType{Root: types.String, Nullable: true}),
	col("category", types.DataType{Root: types.String, Nullable: true}),
	col("ts", types.DataType{Root: types.TimestampLTZ, Nullable: true, Precision: 3}),
	col("amount", types.DataType{Root: types.Decimal, Nullable: true, Precision: 10, Scale: 2}),
	col("payload", types.DataType{Root: types.Bytes, Nullable: true}),
	col("day", types.DataType{Root: types.Date, Nullable: true}),
}

func col(name string, t types.DataType) types.Column {
	return types.Column{Name: name, Type: t, ID: types.UnknownID}
}

const tsBase = 1_700_000_000_000 // epoch millis of row 0's ts

// benchSchema is the Arrow schema Fluss reads benchColumns with.
func benchSchema() (*arrow.Schema, error) {
	fields := make([]types.Field, len(benchColumns))
	for i, c := range benchColumns {
		fields[i] = types.Field{Name: c.Name, Type: c.Type}
	}
	return types.ArrowSchema(fields)
}

// encodeRows returns rows first..first+n-1 as one Arrow IPC stream, the
// form transcodesvc hands to appendsvc.
func encodeRows(mem memory.Allocator, schema *arrow.Schema, first int64, n int) ([]byte, error) {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	var payload [16]byte
	for k := range int64(n) {
		i := first + k
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.Int32Builder).Append(int32(i % 1000))
		b.Field(2).(*array.Float64Builder).Append(float64(i) * 0.25)
		b.Field(3).(*array.BooleanBuilder).Append(i%2 == 0)
		if i%10 == 0 {
			b.Field(4).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(4).(*array.StringBuilder).Append("name-" + strconv.FormatInt(i, 10))
		}
		b.Field(5).(*array.StringBuilder).Append("cat-" + strconv.FormatInt(i%8, 10))
		b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(tsBase + i))
		b.Field(7).(*array.Decimal128Builder).Append(decimal128.FromI64(i % 1_000_000))
		binary.LittleEndian.PutUint64(payload[:8], uint64(i))
		binary.LittleEndian.PutUint64(payload[8:], uint64(i*31))
		b.Field(8).(*array.BinaryBuilder).Append(payload[:])
		b.Field(9).(*array.Date32Builder).Append(arrow.Date32(19000 + i%365))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		return nil, fmt.Errorf("encode rows %d..%d: %w", first, first+int64(n)-1, err)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
