package rebuild

import (
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
)

func dt(root types.Root, nullable bool) types.DataType {
	return types.DataType{Root: root, Nullable: nullable}
}

// build makes a one-column record of type t, filling row i with fill(builder, i).
func build(t *testing.T, typ types.DataType, n int, fill func(b array.Builder, i int)) arrow.RecordBatch {
	t.Helper()
	schema, err := types.ArrowSchema([]types.Field{{Name: "c", Type: typ}})
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	t.Cleanup(rb.Release)
	for i := range n {
		fill(rb.Field(0), i)
	}
	rec := rb.NewRecordBatch()
	t.Cleanup(rec.Release)
	return rec
}

func jsonOf(t *testing.T, rec arrow.RecordBatch, typ types.DataType) []string {
	t.Helper()
	var out []string
	for i := range int(rec.NumRows()) {
		b, err := AppendJSON(nil, rec.Column(0), i, typ)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func expectJSON(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("%s:\n got  %s\n want %s", what, strings.Join(got, " | "), strings.Join(want, " | "))
	}
}

func TestJSONScalars(t *testing.T) {
	ints := build(t, dt(types.BigInt, true), 3, func(b array.Builder, i int) {
		switch i {
		case 0:
			b.(*array.Int64Builder).Append(math.MinInt64)
		case 1:
			b.AppendNull()
		default:
			b.(*array.Int64Builder).Append(9007199254740993)
		}
	})
	expectJSON(t, "BIGINT", jsonOf(t, ints, dt(types.BigInt, true)), "-9223372036854775808", "null", "9007199254740993")

	dbl := []float64{-1.25e-3, math.NaN(), math.Inf(1), math.Inf(-1), 0.1, 1e21}
	doubles := build(t, dt(types.Double, false), len(dbl), func(b array.Builder, i int) { b.(*array.Float64Builder).Append(dbl[i]) })
	expectJSON(t, "DOUBLE", jsonOf(t, doubles, dt(types.Double, false)), "-0.00125", `"NaN"`, `"Infinity"`, `"-Infinity"`, "0.1", "1e+21")
	floats := build(t, dt(types.Float, false), 1, func(b array.Builder, _ int) { b.(*array.Float32Builder).Append(0.1) })
	expectJSON(t, "FLOAT (shortest float32 digits)", jsonOf(t, floats, dt(types.Float, false)), "0.1")

	dec := types.DataType{Root: types.Decimal, Precision: 10, Scale: 2}
	unscaled := []int64{1234, 10, -5, 0, 123456789012}
	decimals := build(t, dec, len(unscaled), func(b array.Builder, i int) {
		b.(*array.Decimal128Builder).Append(decimal128.FromBigInt(big.NewInt(unscaled[i])))
	})
	expectJSON(t, "DECIMAL(10,2)", jsonOf(t, decimals, dec), "12.34", "0.10", "-0.05", "0.00", "1234567890.12")

	strs := []string{"plain", "quote \" back \\ nl \n tab \t ctl \x01", "ünïcödé ✓ 𝄞", "bad \xff byte"}
	strings := build(t, dt(types.String, false), len(strs), func(b array.Builder, i int) { b.(*array.StringBuilder).Append(strs[i]) })
	expectJSON(t, "STRING", jsonOf(t, strings, dt(types.String, false)),
		`"plain"`, `"quote \" back \\ nl \n tab \t ctl \u0001"`, `"ünïcödé ✓ 𝄞"`, "\"bad \ufffd byte\"")

	bytesCol := build(t, dt(types.Bytes, false), 2, func(b array.Builder, i int) { b.(*array.BinaryBuilder).Append([]byte{0, 1, 0xff}[:3-i*3]) })
	expectJSON(t, "BYTES", jsonOf(t, bytesCol, dt(types.Bytes, false)), `"AAH/"`, `""`)
	bin := types.DataType{Root: types.Binary, Length: 2}
	binCol := build(t, bin, 1, func(b array.Builder, _ int) { b.(*array.FixedSizeBinaryBuilder).Append([]byte{0, 1}) })
	expectJSON(t, "BINARY(2)", jsonOf(t, binCol, bin), `"AAE="`)
}

func TestJSONTimes(t *testing.T) {
	days := []int32{20455, -1, 0}
	dates := build(t, dt(types.Date, false), len(days), func(b array.Builder, i int) { b.(*array.Date32Builder).Append(arrow.Date32(days[i])) })
	expectJSON(t, "DATE", jsonOf(t, dates, dt(types.Date, false)), `"2026-01-02"`, `"1969-12-31"`, `"1970-01-01"`)

	t3 := types.DataType{Root: types.Time, Precision: 3}
	times := build(t, t3, 1, func(b array.Builder, _ int) { b.(*array.Time32Builder).Append(arrow.Time32(45296789)) })
	expectJSON(t, "TIME(3)", jsonOf(t, times, t3), `"12:34:56.789"`)
	t0 := types.DataType{Root: types.Time, Precision: 0}
	times0 := build(t, t0, 1, func(b array.Builder, _ int) { b.(*array.Time32Builder).Append(arrow.Time32(45296)) })
	expectJSON(t, "TIME(0)", jsonOf(t, times0, t0), `"12:34:56"`)
	t9 := types.DataType{Root: types.Time, Precision: 9}
	times9 := build(t, t9, 1, func(b array.Builder, _ int) { b.(*array.Time64Builder).Append(arrow.Time64(45296789012345)) })
	expectJSON(t, "TIME(9)", jsonOf(t, times9, t9), `"12:34:56.789012345"`)

	at := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	ntz3 := types.DataType{Root: types.TimestampNTZ, Precision: 3}
	ts3 := build(t, ntz3, 2, func(b array.Builder, i int) {
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixMilli() - int64(i)*at.UnixMilli() - int64(i)))
	})
	expectJSON(t, "TIMESTAMP(3)", jsonOf(t, ts3, ntz3), `"2026-01-02T03:04:05.678"`, `"1969-12-31T23:59:59.999"`)
	ltz6 := types.DataType{Root: types.TimestampLTZ, Precision: 6}
	ts6 := build(t, ltz6, 1, func(b array.Builder, _ int) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixMicro() + 1)) })
	expectJSON(t, "TIMESTAMP_LTZ(6)", jsonOf(t, ts6, ltz6), `"2026-01-02T03:04:05.678001Z"`)
	ltz0 := types.DataType{Root: types.TimestampLTZ, Precision: 0}
	ts0 := build(t, ltz0, 1, func(b array.Builder, _ int) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(at.Unix())) })
	expectJSON(t, "TIMESTAMP_LTZ(0)", jsonOf(t, ts0, ltz0), `"2026-01-02T03:04:05Z"`)
}

func TestJSONNested(t *testing.T) {
	str := dt(types.String, true)
	intT := dt(types.Int, true)
	arr := types.DataType{Root: types.Array, Nullable: true, Element: &str}
	arrays := build(t, arr, 2, func(b array.Builder, i int) {
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		vb.Append("a")
		vb.AppendNull()
		if i == 1 {
			vb.Append("c")
		}
	})
	expectJSON(t, "ARRAY<STRING>", jsonOf(t, arrays, arr), `["a",null]`, `["a",null,"c"]`)

	strKey := dt(types.String, false)
	m := types.DataType{Root: types.Map, Nullable: true, Key: &strKey, Value: &intT}
	maps := build(t, m, 1, func(b array.Builder, _ int) {
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("x")
		mb.ItemBuilder().(*array.Int32Builder).Append(1)
		mb.KeyBuilder().(*array.StringBuilder).Append("y")
		mb.ItemBuilder().(*array.Int32Builder).AppendNull()
	})
	expectJSON(t, "MAP<STRING, INT>", jsonOf(t, maps, m), `{"x":1,"y":null}`)

	intKey := dt(types.Int, false)
	mi := types.DataType{Root: types.Map, Nullable: true, Key: &intKey, Value: &str}
	imaps := build(t, mi, 1, func(b array.Builder, _ int) {
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.Int32Builder).Append(-1)
		mb.ItemBuilder().(*array.StringBuilder).Append("a")
	})
	expectJSON(t, "MAP<INT, STRING> as pairs", jsonOf(t, imaps, mi), `[[-1,"a"]]`)

	row := types.DataType{Root: types.Row, Nullable: true, Fields: []types.Field{{Name: "city", Type: str}, {Name: "zip", Type: intT}}}
	rows := build(t, row, 2, func(b array.Builder, i int) {
		sb := b.(*array.StructBuilder)
		if i == 1 {
			sb.AppendNull()
			return
		}
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append("Zürich")
		sb.FieldBuilder(1).(*array.Int32Builder).Append(8001)
	})
	expectJSON(t, "ROW", jsonOf(t, rows, row), `{"city":"Zürich","zip":8001}`, "null")
}

// TestRebuildRecord: key, timestamp, headers and the JSON value of a row, as
// docs/mapping.md maps them.
func TestRebuildRecord(t *testing.T) {
	strT, bytesT := dt(types.String, true), dt(types.Bytes, true)
	hdrKey := dt(types.String, false)
	cols := []types.Field{
		{Name: "id", Type: dt(types.BigInt, false)},
		{Name: "name", Type: strT},
		{Name: "k", Type: strT},
		{Name: "ts", Type: types.DataType{Root: types.TimestampLTZ, Precision: 3, Nullable: true}},
		{Name: "h", Type: types.DataType{Root: types.Map, Nullable: true, Key: &hdrKey, Value: &bytesT}},
	}
	schema, err := types.ArrowSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	rb.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	rb.Field(1).(*array.StringBuilder).AppendValues([]string{"kettle", ""}, []bool{true, false})
	rb.Field(2).(*array.StringBuilder).AppendValues([]string{"customer-7", ""}, []bool{true, true})
	rb.Field(3).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1767225600123, 0}, []bool{true, false})
	hb := rb.Field(4).(*array.MapBuilder)
	hb.Append(true)
	hb.KeyBuilder().(*array.StringBuilder).Append("trace-id")
	hb.ItemBuilder().(*array.BinaryBuilder).Append([]byte{0x0a, 0x0b})
	hb.Append(true)
	rec := rb.NewRecordBatch()
	defer rec.Release()

	m := &catalogv1.TopicMapping{Kind: catalogv1.TableKind_TABLE_KIND_LOG, Mapping: &catalogv1.ColumnMapping{
		ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON, KeyColumn: "k", TimestampColumn: "ts", HeadersColumn: "h"}}
	p, err := Compile(m, cols)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := p.Rebuild(&r, rec, 0, 42); err != nil {
		t.Fatal(err)
	}
	if string(r.Key) != "customer-7" || string(r.Value) != `{"id":1,"name":"kettle"}` || r.Timestamp != 1767225600123 ||
		len(r.Headers) != 1 || r.Headers[0].Key != "trace-id" || string(r.Headers[0].Value) != "\x0a\x0b" {
		t.Fatalf("row 0: %+v (value %s)", r, r.Value)
	}
	// An empty key stays an empty key; a NULL timestamp is the commit time.
	if err := p.Rebuild(&r, rec, 1, 42); err != nil {
		t.Fatal(err)
	}
	if r.Key == nil || len(r.Key) != 0 || string(r.Value) != `{"id":2,"name":null}` || r.Timestamp != 42 || len(r.Headers) != 0 {
		t.Fatalf("row 1: key %q (nil %v) value %s ts %d headers %v", r.Key, r.Key == nil, r.Value, r.Timestamp, r.Headers)
	}

	// A primary-key table without a key column: the key is the JSON object of the
	// primary key; a delete is that key with a null value.
	pk := &catalogv1.TopicMapping{Kind: catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, PrimaryKeys: []string{"id"},
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON}}
	pp, err := Compile(pk, cols[:2])
	if err != nil {
		t.Fatal(err)
	}
	if err := pp.RebuildDelete(&r, rec, 0, 7); err != nil {
		t.Fatal(err)
	}
	if string(r.Key) != `{"id":1}` || r.Value != nil || r.Timestamp != 7 {
		t.Fatalf("delete: key %s value %v ts %d", r.Key, r.Value, r.Timestamp)
	}
}

// TestDecimalIntMatchesBig: the int64 path writes what the math/big one
// does, at the edges of int64 and for every scale up to beyond the digits.
func TestDecimalIntMatchesBig(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 7, -7, 1050, -1050, 123456789, math.MaxInt64, math.MinInt64, -99, 100} {
		for scale := 0; scale <= 22; scale++ {
			got := string(appendDecimalInt(nil, v, scale))
			want := string(appendDecimal(nil, big.NewInt(v), scale))
			if got != want {
				t.Errorf("%d scale %d: %s, math/big %s", v, scale, got, want)
			}
		}
	}
}
