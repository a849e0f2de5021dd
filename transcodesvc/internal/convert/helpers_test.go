package convert

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/transcodesvc/internal/kafkabatch"
)

// Type constructors for test schemas. n = nullable.
func ty(root catalogv1.TypeRoot, n bool) *catalogv1.DataType {
	return &catalogv1.DataType{Root: root, Nullable: n}
}
func tBool(n bool) *catalogv1.DataType   { return ty(catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN, n) }
func tTiny(n bool) *catalogv1.DataType   { return ty(catalogv1.TypeRoot_TYPE_ROOT_TINYINT, n) }
func tSmall(n bool) *catalogv1.DataType  { return ty(catalogv1.TypeRoot_TYPE_ROOT_SMALLINT, n) }
func tInt(n bool) *catalogv1.DataType    { return ty(catalogv1.TypeRoot_TYPE_ROOT_INTEGER, n) }
func tBig(n bool) *catalogv1.DataType    { return ty(catalogv1.TypeRoot_TYPE_ROOT_BIGINT, n) }
func tFloat(n bool) *catalogv1.DataType  { return ty(catalogv1.TypeRoot_TYPE_ROOT_FLOAT, n) }
func tDouble(n bool) *catalogv1.DataType { return ty(catalogv1.TypeRoot_TYPE_ROOT_DOUBLE, n) }
func tString(n bool) *catalogv1.DataType { return ty(catalogv1.TypeRoot_TYPE_ROOT_STRING, n) }
func tBytes(n bool) *catalogv1.DataType  { return ty(catalogv1.TypeRoot_TYPE_ROOT_BYTES, n) }
func tDate(n bool) *catalogv1.DataType   { return ty(catalogv1.TypeRoot_TYPE_ROOT_DATE, n) }
func tDec(p, s int32, n bool) *catalogv1.DataType {
	t := ty(catalogv1.TypeRoot_TYPE_ROOT_DECIMAL, n)
	t.Precision, t.Scale = p, s
	return t
}
func tChar(l int32, n bool) *catalogv1.DataType {
	t := ty(catalogv1.TypeRoot_TYPE_ROOT_CHAR, n)
	t.Length = l
	return t
}
func tBinary(l int32, n bool) *catalogv1.DataType {
	t := ty(catalogv1.TypeRoot_TYPE_ROOT_BINARY, n)
	t.Length = l
	return t
}
func tTime(p int32, n bool) *catalogv1.DataType {
	t := ty(catalogv1.TypeRoot_TYPE_ROOT_TIME, n)
	t.Precision = p
	return t
}
func tNTZ(p int32, n bool) *catalogv1.DataType {
	t := ty(catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ, n)
	t.Precision = p
	return t
}
func tLTZ(p int32, n bool) *catalogv1.DataType {
	t := ty(catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ, n)
	t.Precision = p
	return t
}
func tArray(e *catalogv1.DataType, n bool) *catalogv1.DataType {
	t := ty(catalogv1.TypeRoot_TYPE_ROOT_ARRAY, n)
	t.Element = e
	return t
}
func tMap(k, v *catalogv1.DataType, n bool) *catalogv1.DataType {
	t := ty(catalogv1.TypeRoot_TYPE_ROOT_MAP, n)
	t.Key, t.Value = k, v
	return t
}
func tRow(n bool, fields ...*catalogv1.Field) *catalogv1.DataType {
	t := ty(catalogv1.TypeRoot_TYPE_ROOT_ROW, n)
	t.Fields = fields
	return t
}
func fld(name string, t *catalogv1.DataType) *catalogv1.Field {
	return &catalogv1.Field{Name: name, Type: t}
}

func jsonMapping(policy catalogv1.UnknownFieldPolicy, cols ...*catalogv1.Field) *catalogv1.TopicMapping {
	return &catalogv1.TopicMapping{
		Topic: "t", MappingId: "m1", Columns: cols,
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON, UnknownFields: policy},
	}
}

// mixedMapping is the schema of the fixtures' "mixed" set, with the record
// key, timestamp and headers in columns of their own.
func mixedMapping() *catalogv1.TopicMapping {
	m := jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT,
		fld("id", tBig(false)),
		fld("name", tString(true)),
		fld("price", tDec(10, 2, true)),
		fld("ratio", tDouble(true)),
		fld("ok", tBool(true)),
		fld("day", tDate(true)),
		fld("at", tLTZ(3, true)),
		fld("tags", tArray(tString(true), true)),
		fld("attrs", tMap(tString(false), tInt(true), true)),
		fld("addr", tRow(true, fld("city", tString(true)), fld("zip", tInt(true)))),
		fld("k", tBytes(true)),
		fld("ts", tLTZ(3, false)),
		fld("hdrs", tMap(tString(false), tBytes(true), false)),
	)
	m.Mapping.KeyColumn, m.Mapping.TimestampColumn, m.Mapping.HeadersColumn = "k", "ts", "hdrs"
	return m
}

// benchMapping is the 10-column schema of the fixtures' "bench" set.
func benchMapping() *catalogv1.TopicMapping {
	return jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE,
		fld("id", tBig(false)),
		fld("name", tString(true)),
		fld("price", tDec(10, 2, true)),
		fld("ratio", tDouble(true)),
		fld("ok", tBool(true)),
		fld("day", tDate(true)),
		fld("at", tLTZ(3, true)),
		fld("tags", tArray(tString(true), true)),
		fld("count", tInt(true)),
		fld("addr", tRow(true, fld("city", tString(true)), fld("zip", tInt(true)))),
	)
}

func mustCompile(t testing.TB, m *catalogv1.TopicMapping) *Plan {
	t.Helper()
	p, err := Compile(m)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p
}

// valuesBatch wraps JSON (or raw) values as records of a decoded batch.
func valuesBatch(values ...[]byte) *kafkabatch.Batch {
	b := &kafkabatch.Batch{Header: kafkabatch.Header{BaseTimestamp: 1767323045678, RecordCount: int32(len(values))}}
	for i, v := range values {
		b.Records = append(b.Records, kafkabatch.Record{OffsetDelta: int32(i), Value: v})
		b.RawSize += len(v) // a lower bound of the record section, which also holds lengths and headers
	}
	return b
}

func fixtureRaw(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "kafkabatch", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func fixtureBatch(t testing.TB, name string) *kafkabatch.Batch {
	t.Helper()
	raw := fixtureRaw(t, name)
	b, err := kafkabatch.NewDecoder(0).Decode(raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// readIPC reads an Arrow IPC stream back, checking it holds exactly one
// record batch with the expected schema.
func readIPC(t testing.TB, data []byte, schema *arrow.Schema) arrow.RecordBatch {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		t.Fatalf("ipc reader: %v", err)
	}
	defer r.Release()
	if !r.Schema().Equal(schema) {
		t.Fatalf("schema %s, want %s", r.Schema(), schema)
	}
	if !r.Next() {
		t.Fatalf("no record batch in the stream: %v", r.Err())
	}
	rec := r.RecordBatch()
	rec.Retain()
	if r.Next() {
		t.Fatalf("more than one record batch in the stream")
	}
	return rec
}

// cell returns a plain Go value for row i of arr, for comparisons.
func cell(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return fmt.Sprintf("bytes:%x", a.Value(i))
	case *array.FixedSizeBinary:
		return fmt.Sprintf("bytes:%x", a.Value(i))
	case *array.Date32:
		return int64(a.Value(i))
	case *array.Time32:
		return int64(a.Value(i))
	case *array.Time64:
		return int64(a.Value(i))
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		out := [][2]any{}
		for j := int(start); j < int(end); j++ {
			out = append(out, [2]any{cell(keys, j), cell(items, j)})
		}
		return out
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := int(start); j < int(end); j++ {
			out = append(out, cell(a.ListValues(), j))
		}
		return out
	case *array.Struct:
		out := map[string]any{}
		st := a.DataType().(*arrow.StructType)
		for f := 0; f < a.NumField(); f++ {
			out[st.Field(f).Name] = cell(a.Field(f), i)
		}
		return out
	}
	panic(fmt.Sprintf("cell: unhandled %T", arr))
}

// allTypesMapping has a column of every Fluss type, plus key, timestamp and
// headers columns.
func allTypesMapping() *catalogv1.TopicMapping {
	cols := []*catalogv1.Field{
		fld("b", tBool(true)),
		fld("ti", tTiny(true)),
		fld("si", tSmall(true)),
		fld("i", tInt(false)),
		fld("bi", tBig(true)),
		fld("f", tFloat(true)),
		fld("d", tDouble(true)),
		fld("dec", tDec(10, 2, true)),
		fld("dec38", tDec(38, 10, true)),
		fld("c", tChar(3, true)),
		fld("s", tString(true)),
		fld("bin", tBinary(2, true)),
		fld("by", tBytes(true)),
		fld("dt", tDate(true)),
		fld("t3", tTime(3, true)),
		fld("ts3", tNTZ(3, true)),
		fld("ts6", tNTZ(6, true)),
		fld("ts9", tNTZ(9, true)),
		fld("ltz0", tLTZ(0, true)),
		fld("ltz3", tLTZ(3, true)),
		fld("arr", tArray(tInt(true), true)),
		fld("m", tMap(tString(false), tInt(true), true)),
		fld("mi", tMap(tInt(false), tString(true), true)),
		fld("r", tRow(true, fld("x", tInt(true)), fld("y", tArray(tString(true), true)))),
		fld("k", tString(true)),
		fld("kts", tLTZ(3, false)),
		fld("h", tArray(tRow(false, fld("key", tString(false)), fld("value", tBytes(true))), true)),
	}
	m := jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT, cols...)
	m.Mapping.KeyColumn, m.Mapping.TimestampColumn, m.Mapping.HeadersColumn = "k", "kts", "h"
	return m
}

// allTypesBatch is two records for allTypesMapping: every column set, and
// nearly every column null.
func allTypesBatch() *kafkabatch.Batch {
	values := [][]byte{
		[]byte(`{"b":true,"ti":-128,"si":32767,"i":-2147483648,"bi":9223372036854775807,"f":0.5,"d":-1.25e-3,` +
			`"dec":"12.3","dec38":"-1234567890123456789012345678.0123456789","c":"äb","s":"ünïcödé ✓ 𝄞","bin":"AAE=","by":"AAH/",` +
			`"dt":"2024-02-29","t3":"12:34:56.789","ts3":"2026-01-02T03:04:05.678","ts6":"1969-12-31T23:59:59.999",` +
			`"ts9":"2262-04-11T23:47:16.854775807","ltz0":"2026-01-02T04:04:05+01:00","ltz3":1767323045678,` +
			`"arr":[1,null,3],"m":{"x":1,"y":null},"mi":[[7,"seven"],[-1,null],[3,"three"],[1,"one"]],"r":{"x":5,"y":["a",null]}}`),
		[]byte(`{"i":0,"ts6":"2026-01-02T03:04:05.123456","t3":0}`),
	}
	batch := valuesBatch(values...)
	batch.Records[0].Key = []byte("key-0")
	batch.Records[0].Headers = []kafkabatch.RecordHeader{{Key: []byte("trace"), Value: []byte{0x0a, 0x0b}}, {Key: []byte("n"), Value: nil}}
	batch.Records[1].TimestampDelta = 1
	return batch
}
