package convert

import (
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kerr"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

func avroMapping(cols ...*catalogv1.Field) *catalogv1.TopicMapping {
	return &catalogv1.TopicMapping{
		Topic: "t", MappingId: "m-avro", Columns: cols,
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO},
	}
}

// framed encodes v with schema s as a Confluent-framed Avro value of id.
func framed(t testing.TB, id int32, s avro.Schema, v any) []byte {
	t.Helper()
	payload, err := avro.Marshal(s, v)
	if err != nil {
		t.Fatalf("avro marshal: %v", err)
	}
	return append(schemas.AppendFrame(nil, id), payload...)
}

// recordOf is a record schema with one field v of type field.
func recordOf(t testing.TB, field string) avro.Schema {
	t.Helper()
	s, err := avro.Parse(`{"type":"record","name":"r","fields":[{"name":"v","type":` + field + `}]}`)
	if err != nil {
		t.Fatalf("parse %s: %v", field, err)
	}
	return s
}

// convertOne converts value with schema id 7 = s into a table of one
// column v; it returns the cell or the record error.
func convertOne(t *testing.T, col *catalogv1.DataType, s avro.Schema, value []byte) (any, string) {
	t.Helper()
	p := mustCompile(t, avroMapping(fld("v", col)))
	c := p.NewConverter(memory.DefaultAllocator)
	c.UseSchemas(map[int32]*schemas.Schema{7: {ID: 7, Avro: s}})
	out, err := c.Convert(valuesBatch(value))
	if err != nil {
		var f *Failure
		if !errors.As(err, &f) || f.Code != kerr.InvalidRecord.Code || len(f.Records) != 1 {
			t.Fatalf("want one INVALID_RECORD record error, got %v", err)
		}
		return nil, f.Records[0].Message
	}
	rec := readIPC(t, out.IPC, p.Schema)
	defer rec.Release()
	if rec.NumRows() != 1 {
		t.Fatalf("%d rows", rec.NumRows())
	}
	return cell(rec.Column(0), 0), ""
}

func TestAvroTypes(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 678_901_000, time.UTC)
	cases := []struct {
		name  string
		col   *catalogv1.DataType
		field string // the Avro type of field v
		value any    // field v's value as hamba/avro encodes it
		want  any    // the cell; ignored when err is set
		err   string // substring of the record error
	}{
		{"boolean", tBool(false), `"boolean"`, true, true, ""},
		{"int to INT", tInt(false), `"int"`, int32(-7), int64(-7), ""},
		{"int to BIGINT", tBig(false), `"int"`, int32(7), int64(7), ""},
		{"long to BIGINT", tBig(false), `"long"`, int64(1 << 40), int64(1 << 40), ""},
		{"long to INT out of range", tInt(false), `"long"`, int64(1 << 40), nil, "value 1099511627776 does not fit column v (INT NOT NULL)"},
		{"int to TINYINT", tTiny(false), `"int"`, int32(-128), int64(-128), ""},
		{"int to TINYINT out of range", tTiny(false), `"int"`, int32(300), nil, "value 300 does not fit column v"},
		{"int to SMALLINT", tSmall(false), `"int"`, int32(300), int64(300), ""},
		{"float to FLOAT", tFloat(false), `"float"`, float32(1.5), 1.5, ""},
		{"float to DOUBLE", tDouble(false), `"float"`, float32(0.25), 0.25, ""},
		{"double to DOUBLE", tDouble(false), `"double"`, 2.75, 2.75, ""},
		{"string", tString(false), `"string"`, "héllo", "héllo", ""},
		{"string uuid", tString(false), `{"type":"string","logicalType":"uuid"}`, "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", ""},
		{"string to CHAR too long", tChar(2, false), `"string"`, "abc", nil, "longer than CHAR(2)"},
		{"enum to STRING", tString(false), `{"type":"enum","name":"E","symbols":["A","B"]}`, "B", "B", ""},
		{"bytes", tBytes(false), `"bytes"`, []byte{1, 2}, "bytes:0102", ""},
		{"bytes to BINARY", tBinary(2, false), `"bytes"`, []byte{1, 2}, "bytes:0102", ""},
		{"bytes to BINARY wrong size", tBinary(3, false), `"bytes"`, []byte{1, 2}, nil, "2 bytes do not fit column v (BINARY(3) NOT NULL)"},
		{"fixed to BINARY", tBinary(3, false), `{"type":"fixed","name":"F","size":3}`, [3]byte{1, 2, 3}, "bytes:010203", ""},
		{"fixed to BYTES", tBytes(false), `{"type":"fixed","name":"F","size":3}`, [3]byte{1, 2, 3}, "bytes:010203", ""},
		{"decimal bytes", tDec(10, 2, false), `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`, big.NewRat(-12345, 100), "-123.45", ""},
		{"decimal to larger scale", tDec(10, 4, false), `{"type":"bytes","logicalType":"decimal","precision":8,"scale":2}`, big.NewRat(12345, 100), "123.4500", ""},
		{"decimal fixed", tDec(20, 3, false), `{"type":"fixed","name":"D","size":9,"logicalType":"decimal","precision":20,"scale":3}`, big.NewRat(123456789012345, 1000), "123456789012.345", ""},
		{"decimal too many digits", tDec(4, 2, false), `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`, big.NewRat(12345, 100), nil, "decimal value does not fit column v (DECIMAL(4, 2) NOT NULL)"},
		{"date", tDate(false), `{"type":"int","logicalType":"date"}`, int32(20455), int64(20455), ""},
		{"time-millis", tTime(3, false), `{"type":"int","logicalType":"time-millis"}`, 1500 * time.Millisecond, int64(1500), ""},
		{"time-micros to TIME(6)", tTime(6, false), `{"type":"long","logicalType":"time-micros"}`, 1500 * time.Microsecond, int64(1500), ""},
		{"time-micros to TIME(3) losing digits", tTime(3, false), `{"type":"long","logicalType":"time-micros"}`, 1500 * time.Microsecond, nil, "more fractional second digits"},
		{"timestamp-millis", tLTZ(3, false), `{"type":"long","logicalType":"timestamp-millis"}`, ts.Truncate(time.Millisecond), ts.UnixMilli(), ""},
		{"timestamp-micros", tLTZ(6, false), `{"type":"long","logicalType":"timestamp-micros"}`, ts, ts.UnixMicro(), ""},
		{"timestamp-millis to LTZ(6)", tLTZ(6, false), `{"type":"long","logicalType":"timestamp-millis"}`, ts.Truncate(time.Millisecond), ts.Truncate(time.Millisecond).UnixMicro(), ""},
		{"timestamp-micros to LTZ(3) losing digits", tLTZ(3, false), `{"type":"long","logicalType":"timestamp-micros"}`, ts, nil, "more fractional second digits"},
		{"local-timestamp-millis", tNTZ(3, false), `{"type":"long","logicalType":"local-timestamp-millis"}`, int64(1000), int64(1000), ""},
		{"timestamp before 1970 with micros", tLTZ(6, false), `{"type":"long","logicalType":"timestamp-micros"}`, int64(-1500), nil, "before 1970"},
		{"timestamp-millis as BIGINT", tBig(false), `{"type":"long","logicalType":"timestamp-millis"}`, int64(1234), int64(1234), ""},
		{"array", tArray(tString(true), false), `{"type":"array","items":["null","string"]}`, []any{"a", nil, "c"}, []any{"a", nil, "c"}, ""},
		{"map", tMap(tString(false), tInt(true), false), `{"type":"map","values":"int"}`, map[string]any{"k": int32(3)}, [][2]any{{"k", int64(3)}}, ""},
		{"record to ROW", tRow(false, fld("city", tString(true)), fld("zip", tInt(true))),
			`{"type":"record","name":"A","fields":[{"name":"zip","type":"int"},{"name":"city","type":"string"},{"name":"extra","type":"long"}]}`,
			map[string]any{"zip": int32(1000), "city": "Brussels", "extra": int64(9)}, map[string]any{"city": "Brussels", "zip": int64(1000)}, ""},
		{"nullable union null", tBig(true), `["null","long"]`, nil, nil, ""},
		{"nullable union value", tBig(true), `["null","long"]`, int64(5), int64(5), ""},
		{"union with null second", tBig(true), `["long","null"]`, int64(5), int64(5), ""},
		{"null into NOT NULL", tBig(false), `["null","long"]`, nil, nil, "value is null but column v is BIGINT NOT NULL"},
		// Schemas that do not fit the column fail every record framed with them.
		{"string into BIGINT", tBig(false), `"string"`, "x", nil, "schema id 7 does not fit topic t: field v: Avro string cannot fill column v of type BIGINT NOT NULL"},
		{"double into FLOAT", tFloat(false), `"double"`, 1.0, nil, "Avro double cannot fill column v"},
		{"timestamp-millis into TIMESTAMP", tNTZ(3, false), `{"type":"long","logicalType":"timestamp-millis"}`, int64(1), nil, "Avro long (timestamp-millis) cannot fill column v of type TIMESTAMP(3)"},
		{"fixed of other size into BINARY", tBinary(2, false), `{"type":"fixed","name":"F","size":3}`, [3]byte{1, 2, 3}, nil, "Avro fixed cannot fill column v"},
		{"decimal of larger scale", tDec(10, 1, false), `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`, big.NewRat(1, 100), nil, "more fractional digits than column v"},
		{"union of two types", tBig(true), `["int","long"]`, int64(1), nil, `is not ["null", T]`},
		{"map with INT keys", tMap(tInt(false), tInt(true), false), `{"type":"map","values":"int"}`, map[string]any{"k": int32(3)}, nil, "Avro map cannot fill column v"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := recordOf(t, tc.field)
			got, errMsg := convertOne(t, tc.col, s, framed(t, 7, s, map[string]any{"v": tc.value}))
			if tc.err != "" {
				if !strings.Contains(errMsg, tc.err) {
					t.Fatalf("want record error containing %q, got %q (cell %#v)", tc.err, errMsg, got)
				}
				return
			}
			if errMsg != "" {
				t.Fatalf("record error %s", errMsg)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v (%T), want %#v (%T)", got, got, tc.want, tc.want)
			}
		})
	}
}

func TestAvroFraming(t *testing.T) {
	s := recordOf(t, `"long"`)
	good := framed(t, 7, s, map[string]any{"v": int64(1 << 40)})
	cases := []struct {
		name  string
		value []byte
		err   string
	}{
		{"tombstone", nil, "record value is null (a tombstone)"},
		{"empty", []byte{}, "missing magic byte: the value is empty"},
		{"JSON instead of Avro", []byte(`{"v":1}`), "missing magic byte: the value starts with 0x7b"},
		{"short header", []byte{0, 0, 0}, "truncated payload: the value has 3 bytes"},
		{"unknown id", append(schemas.AppendFrame(nil, 99), 2), "unknown schema id 99"},
		{"truncated payload", good[:len(good)-2], "truncated payload"},
		{"trailing data", append(append([]byte{}, good...), 1), "data after the record"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errMsg := convertOne(t, tBig(false), s, tc.value)
			if !strings.Contains(errMsg, tc.err) {
				t.Fatalf("want record error containing %q, got %q", tc.err, errMsg)
			}
		})
	}
}

func TestAvroSchemaErrors(t *testing.T) {
	p := mustCompile(t, avroMapping(fld("id", tBig(false)), fld("name", tString(true))))
	c := p.NewConverter(memory.DefaultAllocator)
	long := avro.MustParse(`"long"`)
	noID := recordOf(t, `"string"`) // field v only: NOT NULL id has no field
	c.UseSchemas(map[int32]*schemas.Schema{
		1: {ID: 1, Err: errors.New("schema id 1 is a PROTOBUF schema, not Avro")},
		2: {ID: 2, Avro: long},
		3: {ID: 3, Avro: noID},
		4: {ID: 4, Type: schemav1.SchemaType_SCHEMA_TYPE_JSON},
	})
	_, err := c.Convert(valuesBatch(
		append(schemas.AppendFrame(nil, 1), 2),
		append(schemas.AppendFrame(nil, 2), 2),
		framed(t, 3, noID, map[string]any{"v": "x"}),
		append(schemas.AppendFrame(nil, 4), '{', '}'),
	))
	var f *Failure
	if !errors.As(err, &f) || len(f.Records) != 4 {
		t.Fatalf("want 4 record errors, got %v", err)
	}
	for i, want := range []string{"PROTOBUF schema, not Avro", "schema id 2 is an Avro long, not a record", "column id is BIGINT NOT NULL but the schema has no field id",
		"schema id 4 is of type JSON, not Avro"} {
		if f.Records[i].BatchIndex != i || !strings.Contains(f.Records[i].Message, want) {
			t.Errorf("record %d: got %+v, want %q", i, f.Records[i], want)
		}
	}
}

// TestAvroRefusedBatchWritesNothing converts a batch with one bad record
// among good ones (nothing comes out), then a good batch on the same
// converter, which must hold exactly its own rows.
func TestAvroRefusedBatchWritesNothing(t *testing.T) {
	p := mustCompile(t, avroMapping(fld("id", tBig(false)), fld("name", tString(true)), fld("note", tString(true))))
	c := p.NewConverter(memory.DefaultAllocator)
	s := avro.MustParse(`{"type":"record","name":"r","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"]},
		{"name":"skipped","type":{"type":"array","items":{"type":"map","values":["null","bytes",{"type":"record","name":"x","fields":[{"name":"d","type":"double"}]}]}}}]}`)
	c.UseSchemas(map[int32]*schemas.Schema{5: {ID: 5, Avro: s}})
	rec := func(id int64, name any) []byte {
		return framed(t, 5, s, map[string]any{"id": id, "name": name, "skipped": []any{map[string]any{"a": []byte{1}, "b": nil}}})
	}
	out, err := c.Convert(valuesBatch(rec(1, "a"), []byte{1, 2, 3}, rec(3, nil)))
	var f *Failure
	if !errors.As(err, &f) || len(f.Records) != 1 || f.Records[0].BatchIndex != 1 || out.Rows != 0 || out.IPC != nil {
		t.Fatalf("want the batch refused for record 1, got %v %+v", err, out)
	}
	out, err = c.Convert(valuesBatch(rec(4, "d"), rec(5, nil)))
	if err != nil {
		t.Fatal(err)
	}
	r := readIPC(t, out.IPC, p.Schema)
	defer r.Release()
	got := [][]any{}
	for i := 0; i < int(r.NumRows()); i++ {
		got = append(got, []any{cell(r.Column(0), i), cell(r.Column(1), i), cell(r.Column(2), i)})
	}
	want := [][]any{{int64(4), "d", nil}, {int64(5), nil, nil}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAvroSchemaIDs(t *testing.T) {
	p := mustCompile(t, avroMapping(fld("v", tBig(true))))
	b := valuesBatch(append(schemas.AppendFrame(nil, 3), 0), []byte("x"), append(schemas.AppendFrame(nil, 9), 0), append(schemas.AppendFrame(nil, 3), 0), nil)
	if got := p.SchemaIDs(b, nil); !reflect.DeepEqual(got, []int32{3, 9}) {
		t.Fatalf("got %v", got)
	}
	if !p.Framed() || mustCompile(t, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, fld("v", tBig(true)))).Framed() {
		t.Fatal("Framed: want true for Avro only")
	}
}

// FuzzConvertAvro feeds arbitrary payloads framed with the id of a schema
// of nested and nullable types. The converter must never panic, must refuse
// with a one-record *Failure, and anything it accepts must be a readable
// one-row Arrow stream.
func FuzzConvertAvro(f *testing.F) {
	s := avro.MustParse(`{"type":"record","name":"r","fields":[
		{"name":"id","type":"long"},
		{"name":"name","type":["null","string"]},
		{"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}]},
		{"name":"at","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},
		{"name":"tags","type":{"type":"array","items":["null","string"]}},
		{"name":"attrs","type":{"type":"map","values":"int"}},
		{"name":"addr","type":["null",{"type":"record","name":"A","fields":[{"name":"city","type":"string"},{"name":"zip","type":"int"}]}]},
		{"name":"skip","type":{"type":"array","items":{"type":"map","values":["null","bytes","double"]}}}]}`)
	p := mustCompile(f, avroMapping(fld("id", tBig(false)), fld("name", tString(true)), fld("price", tDec(10, 2, true)),
		fld("at", tLTZ(6, true)), fld("tags", tArray(tString(true), true)), fld("attrs", tMap(tString(false), tSmall(true), true)),
		fld("addr", tRow(true, fld("city", tString(true)), fld("zip", tInt(true))))))
	seed := framed(f, 1, s, map[string]any{"id": int64(7), "name": "n", "price": big.NewRat(1, 4),
		"at": map[string]any{"long.timestamp-micros": time.UnixMicro(-5)}, "tags": []any{"a", nil}, "attrs": map[string]any{"k": int32(1)},
		"addr": map[string]any{"A": map[string]any{"city": "c", "zip": int32(2)}}, "skip": []any{map[string]any{"x": 1.5}}})
	f.Add(seed[schemas.HeaderSize:])
	f.Add([]byte{})
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add([]byte{2, 0, 1, 0xfe, 0xff, 0xff, 0xff, 0x0f})
	c := p.NewConverter(memory.DefaultAllocator)
	c.UseSchemas(map[int32]*schemas.Schema{1: {ID: 1, Avro: s}})
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := c.Convert(valuesBatch(append(schemas.AppendFrame(nil, 1), payload...)))
		if err != nil {
			var fl *Failure
			if !errors.As(err, &fl) || len(fl.Records) != 1 {
				t.Fatalf("error %v is not a one-record failure", err)
			}
			return
		}
		rec := readIPC(t, out.IPC, p.Schema)
		defer rec.Release()
		if rec.NumRows() != 1 {
			t.Fatalf("%d rows", rec.NumRows())
		}
	})
}
