package convert

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/protoschema"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

func protoMapping(cols ...*catalogv1.Field) *catalogv1.TopicMapping {
	return &catalogv1.TopicMapping{
		Topic: "t", MappingId: "m-proto", Columns: cols,
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF},
	}
}

// compileProto compiles .proto text as the registry would hand it out under id.
func compileProto(t testing.TB, id int32, text string) *schemas.Schema {
	t.Helper()
	fd, err := protoschema.Registered(context.Background(), &schemav1.Schema{Id: id, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Text: text}, nil)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return &schemas.Schema{ID: id, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Proto: fd}
}

// protoFramed is message name of s, given as protojson, encoded by the
// Protobuf runtime and framed as a Confluent serializer frames it.
func protoFramed(t testing.TB, s *schemas.Schema, name, jsonText string, indexes []int) []byte {
	t.Helper()
	md := s.Proto.Messages().ByName(protoreflect.Name(name))
	if md == nil {
		t.Fatalf("no message %s", name)
	}
	m := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal([]byte(jsonText), m); err != nil {
		t.Fatalf("protojson %s: %v", jsonText, err)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := schemas.AppendMessageIndexes(schemas.AppendFrame(nil, s.ID), indexes)
	return append(out, b...)
}

// convertProto converts values into the table of cols; it returns the rows
// (cells by column) or the record errors.
func convertProto(t *testing.T, c *Converter, p *Plan, values ...[]byte) ([][]any, []RecordError) {
	t.Helper()
	out, err := c.Convert(valuesBatch(values...))
	if err != nil {
		var f *Failure
		if !errors.As(err, &f) || f.Code != kerr.InvalidRecord.Code {
			t.Fatalf("want INVALID_RECORD, got %v", err)
		}
		return nil, f.Records
	}
	rec := readIPC(t, out.IPC, p.Schema)
	defer rec.Release()
	var rows [][]any
	for i := range int(rec.NumRows()) {
		var row []any
		for c := range int(rec.NumCols()) {
			row = append(row, cell(rec.Column(c), i))
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func TestProtobufTypes(t *testing.T) {
	cases := []struct {
		name  string
		decl  string // the declaration of field v (number 1)
		col   *catalogv1.DataType
		value string // message V as protojson
		want  any    // the cell; ignored when err is set
		err   string // substring of the record error
	}{
		{"bool", "bool v = 1;", tBool(false), `{"v":true}`, true, ""},
		{"int32 to INT", "int32 v = 1;", tInt(false), `{"v":-7}`, int64(-7), ""},
		{"int32 to TINYINT out of range", "int32 v = 1;", tTiny(false), `{"v":300}`, nil, "value 300 does not fit column v (TINYINT NOT NULL)"},
		{"int32 to SMALLINT", "int32 v = 1;", tSmall(false), `{"v":-300}`, int64(-300), ""},
		{"sint32", "sint32 v = 1;", tBig(false), `{"v":-5}`, int64(-5), ""},
		{"sfixed32", "sfixed32 v = 1;", tInt(false), `{"v":-2147483648}`, int64(-2147483648), ""},
		{"uint32", "uint32 v = 1;", tBig(false), `{"v":4294967295}`, int64(4294967295), ""},
		{"fixed32 to INT", "fixed32 v = 1;", tInt(false), `{"v":1}`, nil, "Protobuf fixed32 cannot fill column v of type INT NOT NULL"},
		{"int32 to TINYINT", "int32 v = 1;", tTiny(false), `{"v":-128}`, int64(-128), ""},
		{"sint32 to SMALLINT out of range", "sint32 v = 1;", tSmall(false), `{"v":-32769}`, nil, "value -32769 does not fit column v (SMALLINT NOT NULL)"},
		{"enum to TINYINT", "Color v = 1;", tTiny(false), `{"v":"BLUE"}`, int64(1), ""},
		{"int64 into TINYINT", "int64 v = 1;", tTiny(true), `{}`, nil, "Protobuf int64 cannot fill column v of type TINYINT"},
		{"optional into NOT NULL", "optional int32 v = 1;", tInt(false), `{}`, nil, "field v: declared with presence (optional, a wrapper or in a oneof), it may be absent, but column v is INT NOT NULL"},
		{"Decimal", "confluent.type.Decimal v = 1;", tDec(10, 2, false), `{"v":{"value":"MDk=","precision":5,"scale":2}}`, "123.45", ""},
		{"Decimal of fewer decimals", "confluent.type.Decimal v = 1;", tDec(10, 2, false), `{"v":{"value":"ew==","scale":1}}`, "12.30", ""},
		{"Decimal negative", "confluent.type.Decimal v = 1;", tDec(10, 2, false), `{"v":{"value":"+w==","scale":2}}`, "-0.05", ""},
		{"Decimal of more decimals, zeros", "confluent.type.Decimal v = 1;", tDec(10, 2, false), `{"v":{"value":"BM4=","scale":3}}`, "1.23", ""},
		{"Decimal of more decimals", "confluent.type.Decimal v = 1;", tDec(10, 2, false), `{"v":{"value":"MDk=","scale":3}}`, nil, "Decimal of unscaled value 12345 and scale 3 does not fit column v (DECIMAL(10, 2) NOT NULL) exactly"},
		{"Decimal too large", "confluent.type.Decimal v = 1;", tDec(4, 2, false), `{"v":{"value":"MDk=","scale":2}}`, nil, "Decimal 123.45 has more than 2 integer digits for column v (DECIMAL(4, 2) NOT NULL)"},
		{"Decimal wider than 128 bits", "confluent.type.Decimal v = 1;", tDec(38, 0, false), `{"v":{"value":"AX////////////////////8="}}`, nil, "Decimal of 17 bytes does not fit column v"},
		{"Decimal empty is 0", "confluent.type.Decimal v = 1;", tDec(10, 2, false), `{"v":{}}`, "0.00", ""},
		{"Decimal absent into NOT NULL", "confluent.type.Decimal v = 1;", tDec(10, 2, false), `{}`, nil, "the field is absent but column v is DECIMAL(10, 2) NOT NULL"},
		{"Decimal absent is NULL", "confluent.type.Decimal v = 1;", tDec(10, 2, true), `{}`, nil, ""},
		{"Date", "google.type.Date v = 1;", tDate(false), `{"v":{"year":2026,"month":3,"day":1}}`, int64(20513), ""},
		{"Date before 1970", "google.type.Date v = 1;", tDate(false), `{"v":{"year":1969,"month":12,"day":31}}`, int64(-1), ""},
		{"Date February 30th", "google.type.Date v = 1;", tDate(false), `{"v":{"year":2026,"month":2,"day":30}}`, nil, "Date year 2026 month 2 day 30 is not a calendar date from year 1 to 9999"},
		{"Date without year", "google.type.Date v = 1;", tDate(false), `{"v":{"month":2,"day":3}}`, nil, "Date year 0 month 2 day 3 is not a calendar date"},
		{"TimeOfDay to TIME(3)", "google.type.TimeOfDay v = 1;", tTime(3, false), `{"v":{"hours":13,"minutes":45,"seconds":30,"nanos":123000000}}`, int64(49530123), ""},
		{"TimeOfDay losing digits", "google.type.TimeOfDay v = 1;", tTime(3, false), `{"v":{"seconds":1,"nanos":123456}}`, nil, "TimeOfDay 00:00:01.000123456 does not fit column v (TIME(3) NOT NULL): has more fractional second digits"},
		{"TimeOfDay 24:00", "google.type.TimeOfDay v = 1;", tTime(3, false), `{"v":{"hours":24}}`, nil, "TimeOfDay 24:0:0 and 0 ns is not a time from 00:00:00 to 23:59:59.999999999"},
		{"Date into TIME", "google.type.Date v = 1;", tTime(3, true), `{}`, nil, "Protobuf google.type.Date cannot fill column v of type TIME(3)"},
		{"Decimal into DOUBLE", "confluent.type.Decimal v = 1;", tDouble(true), `{}`, nil, "Protobuf confluent.type.Decimal cannot fill column v of type DOUBLE"},
		{"int64", "int64 v = 1;", tBig(false), `{"v":"-9223372036854775808"}`, int64(-9223372036854775808), ""},
		{"sint64", "sint64 v = 1;", tBig(false), `{"v":"-3"}`, int64(-3), ""},
		{"sfixed64", "sfixed64 v = 1;", tBig(false), `{"v":"-4"}`, int64(-4), ""},
		{"fixed64", "fixed64 v = 1;", tBig(false), `{"v":"9223372036854775807"}`, int64(9223372036854775807), ""},
		{"uint64 above int64", "uint64 v = 1;", tBig(false), `{"v":"18446744073709551615"}`, nil, "value 18446744073709551615 does not fit a signed 64-bit column"},
		{"proto3 int64 absent is 0", "int64 v = 1;", tBig(true), `{}`, int64(0), ""},
		{"float to FLOAT", "float v = 1;", tFloat(false), `{"v":1.5}`, 1.5, ""},
		{"float to DOUBLE", "float v = 1;", tDouble(false), `{"v":0.25}`, 0.25, ""},
		{"double", "double v = 1;", tDouble(false), `{"v":2.75}`, 2.75, ""},
		{"string", "string v = 1;", tString(false), `{"v":"héllo"}`, "héllo", ""},
		{"string absent is empty", "string v = 1;", tString(true), `{}`, "", ""},
		{"string to CHAR too long", "string v = 1;", tChar(2, false), `{"v":"abc"}`, nil, "longer than CHAR(2)"},
		{"bytes", "bytes v = 1;", tBytes(false), `{"v":"AQI="}`, "bytes:0102", ""},
		{"bytes absent is empty", "bytes v = 1;", tBytes(true), `{}`, "bytes:", ""},
		{"bytes to BINARY", "bytes v = 1;", tBinary(2, false), `{"v":"AQI="}`, "bytes:0102", ""},
		{"bytes to BINARY wrong size", "bytes v = 1;", tBinary(3, false), `{"v":"AQI="}`, nil, "2 bytes do not fit column v (BINARY(3) NOT NULL)"},
		{"enum to STRING", "Color v = 1;", tString(false), `{"v":"BLUE"}`, "BLUE", ""},
		{"enum absent is its zero value", "Color v = 1;", tString(false), `{}`, "RED", ""},
		{"enum unknown number to STRING", "Color v = 1;", tString(false), `{"v":7}`, nil, "enum value 7 is not a value of p.Color"},
		{"enum to INT", "Color v = 1;", tInt(false), `{"v":"BLUE"}`, int64(1), ""},
		{"Timestamp to TIMESTAMP_LTZ(6)", "google.protobuf.Timestamp v = 1;", tLTZ(6, true), `{"v":"2026-01-02T03:04:05.678901Z"}`, int64(1767323045678901), ""},
		{"Timestamp to TIMESTAMP(3)", "google.protobuf.Timestamp v = 1;", tNTZ(3, true), `{"v":"1970-01-01T00:00:01.500Z"}`, int64(1500), ""},
		{"Timestamp losing digits", "google.protobuf.Timestamp v = 1;", tLTZ(3, true), `{"v":"2026-01-02T03:04:05.678901Z"}`, nil, "more fractional second digits"},
		{"Timestamp before 1970 with micros", "google.protobuf.Timestamp v = 1;", tLTZ(6, true), `{"v":"1969-12-31T23:59:59.999999Z"}`, nil, "before 1970"},
		{"Timestamp absent is NULL", "google.protobuf.Timestamp v = 1;", tLTZ(3, true), `{}`, nil, ""},
		{"Timestamp absent into NOT NULL", "google.protobuf.Timestamp v = 1;", tLTZ(3, false), `{}`, nil, "field v: the field is absent but column v is TIMESTAMP_LTZ(3) NOT NULL"},
		{"Int64Value", "google.protobuf.Int64Value v = 1;", tBig(true), `{"v":"5"}`, int64(5), ""},
		{"Int64Value absent is NULL", "google.protobuf.Int64Value v = 1;", tBig(true), `{}`, nil, ""},
		{"StringValue empty is not NULL", "google.protobuf.StringValue v = 1;", tString(true), `{"v":""}`, "", ""},
		{"optional absent is NULL", "optional int64 v = 1;", tBig(true), `{}`, nil, ""},
		{"optional 0 is 0", "optional int64 v = 1;", tBig(true), `{"v":"0"}`, int64(0), ""},
		{"message to ROW", "Addr v = 1;", tRow(true, fld("city", tString(true)), fld("zip", tInt(true)), fld("gone", tString(true))),
			`{"v":{"city":"Brussels","zip":1000,"extra":"skipped"}}`, map[string]any{"city": "Brussels", "zip": int64(1000), "gone": nil}, ""},
		{"message absent is NULL", "Addr v = 1;", tRow(true, fld("city", tString(true))), `{}`, nil, ""},
		{"repeated string", "repeated string v = 1;", tArray(tString(true), false), `{"v":["a","","c"]}`, []any{"a", "", "c"}, ""},
		{"repeated absent is empty", "repeated string v = 1;", tArray(tString(true), true), `{}`, []any{}, ""},
		{"repeated int64 packed", "repeated int64 v = 1;", tArray(tBig(false), false), `{"v":["1","-2","3"]}`, []any{int64(1), int64(-2), int64(3)}, ""},
		{"repeated double packed", "repeated double v = 1;", tArray(tDouble(false), false), `{"v":[0.5,1.5]}`, []any{0.5, 1.5}, ""},
		{"repeated message", "repeated Addr v = 1;", tArray(tRow(false, fld("zip", tInt(true))), false), `{"v":[{"zip":1},{}]}`,
			[]any{map[string]any{"zip": int64(1)}, map[string]any{"zip": int64(0)}}, ""},
		{"map", "map<string, int64> v = 1;", tMap(tString(false), tBig(true), false), `{"v":{"k":"3"}}`, [][2]any{{"k", int64(3)}}, ""},
		{"map of messages", "map<int32, Addr> v = 1;", tMap(tInt(false), tRow(true, fld("city", tString(true))), false), `{"v":{"7":{"city":"x"}}}`,
			[][2]any{{int64(7), map[string]any{"city": "x"}}}, ""},
		// Schemas that do not fit the column fail every record framed with them.
		{"string into BIGINT", "string v = 1;", tBig(false), `{"v":"x"}`, nil, "schema id 7 does not fit topic t: message p.V: field v: Protobuf string cannot fill column v of type BIGINT NOT NULL"},
		{"double into FLOAT", "double v = 1;", tFloat(false), `{"v":1}`, nil, "Protobuf double cannot fill column v"},
		{"Timestamp into BIGINT", "google.protobuf.Timestamp v = 1;", tBig(true), `{}`, nil, "Protobuf google.protobuf.Timestamp cannot fill column v"},
		{"repeated into STRING", "repeated string v = 1;", tString(true), `{}`, nil, "Protobuf repeated string cannot fill column v"},
		{"map into ARRAY", "map<string, int64> v = 1;", tArray(tBig(true), true), `{}`, nil, "Protobuf map cannot fill column v"},
		{"enum into BOOLEAN", "Color v = 1;", tBool(true), `{}`, nil, "Protobuf enum p.Color cannot fill column v"},
		{"message into STRING", "Addr v = 1;", tString(true), `{}`, nil, "Protobuf p.Addr cannot fill column v"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := compileProto(t, 7, `syntax = "proto3"; package p;
import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto";
import "confluent/type/decimal.proto"; import "google/type/date.proto"; import "google/type/timeofday.proto";
enum Color { RED = 0; BLUE = 1; }
message Addr { string city = 1; int32 zip = 2; string extra = 3; }
message V { `+tc.decl+` }`)
			p := mustCompile(t, protoMapping(fld("v", tc.col)))
			c := p.NewConverter(memory.DefaultAllocator)
			c.UseSchemas(map[int32]*schemas.Schema{7: s})
			rows, errs := convertProto(t, c, p, protoFramed(t, s, "V", tc.value, []int{1}))
			if tc.err != "" {
				if len(errs) != 1 || !strings.Contains(errs[0].Message, tc.err) {
					t.Fatalf("want record error containing %q, got %v (rows %v)", tc.err, errs, rows)
				}
				return
			}
			if errs != nil {
				t.Fatalf("record error %v", errs)
			}
			if !reflect.DeepEqual(rows[0][0], tc.want) {
				t.Fatalf("got %#v (%T), want %#v (%T)", rows[0][0], rows[0][0], tc.want, tc.want)
			}
		})
	}
}

// TestProtobufMessages: the message indexes pick the message, the
// shorthand and the explicit [0] alike; fields are read as the Protobuf
// runtime reads them (the last of a repeated scalar, a message field sent
// twice merged, unknown fields skipped, packed or not).
func TestProtobufMessages(t *testing.T) {
	s := compileProto(t, 3, `syntax = "proto3"; package p;
message First { int64 id = 1; string name = 2; }
message Second { int64 id = 1; message Inner { int64 id = 1; string name = 5; } Inner inner = 3; repeated int32 nums = 4; }`)
	p := mustCompile(t, protoMapping(fld("id", tBig(false)), fld("name", tString(true)), fld("inner", tRow(true, fld("id", tBig(true)), fld("name", tString(true)))),
		fld("nums", tArray(tInt(false), true))))
	c := p.NewConverter(memory.DefaultAllocator)
	c.UseSchemas(map[int32]*schemas.Schema{3: s})

	first := protoFramed(t, s, "First", `{"id":"1","name":"one"}`, []int{0})
	explicit := protoFramed(t, s, "First", `{"id":"2"}`, nil)
	explicit = append(append(explicit[:schemas.HeaderSize:schemas.HeaderSize], 2, 0), explicit[schemas.HeaderSize+1:]...) // count 1, index 0
	second := protoFramed(t, s, "Second", `{"id":"3","inner":{"id":"30"},"nums":[1,2]}`, []int{1})
	inner := append(schemas.AppendMessageIndexes(schemas.AppendFrame(nil, 3), []int{1, 0}), protowire.AppendTag(nil, 5, protowire.BytesType)...)
	inner = protowire.AppendString(inner, "nested")
	inner = protowire.AppendVarint(protowire.AppendTag(inner, 1, protowire.VarintType), 4)

	// The same field twice, an unknown field, a message sent in two parts,
	// a repeated int32 once unpacked and once packed.
	odd := schemas.AppendMessageIndexes(schemas.AppendFrame(nil, 3), []int{1})
	odd = protowire.AppendVarint(protowire.AppendTag(odd, 1, protowire.VarintType), 8)
	odd = protowire.AppendString(protowire.AppendTag(odd, 99, protowire.BytesType), "unknown")
	odd = protowire.AppendVarint(protowire.AppendTag(odd, 1, protowire.VarintType), 5)
	part1 := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 50)
	part2 := protowire.AppendString(protowire.AppendTag(nil, 5, protowire.BytesType), "merged")
	odd = protowire.AppendBytes(protowire.AppendTag(odd, 3, protowire.BytesType), part1)
	odd = protowire.AppendVarint(protowire.AppendTag(odd, 4, protowire.VarintType), 7)
	odd = protowire.AppendBytes(protowire.AppendTag(odd, 3, protowire.BytesType), part2)
	odd = protowire.AppendBytes(protowire.AppendTag(odd, 4, protowire.BytesType), protowire.AppendVarint(protowire.AppendVarint(nil, 8), 9))

	rows, errs := convertProto(t, c, p, first, explicit, second, inner, odd)
	if errs != nil {
		t.Fatalf("record errors %v", errs)
	}
	// Columns without a field in the message used are NULL; proto3
	// scalars without presence that are absent are their default.
	want := [][]any{
		{int64(1), "one", nil, nil},
		{int64(2), "", nil, nil},
		{int64(3), nil, map[string]any{"id": int64(30), "name": ""}, []any{int64(1), int64(2)}},
		{int64(4), "nested", nil, nil},
		{int64(5), nil, map[string]any{"id": int64(50), "name": "merged"}, []any{int64(7), int64(8), int64(9)}},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("got  %v\nwant %v", rows, want)
	}
}

func TestProtobufFraming(t *testing.T) {
	s := compileProto(t, 7, `syntax = "proto3"; message V { int64 v = 1; message N { int64 v = 1; } }`)
	good := protoFramed(t, s, "V", `{"v":"1099511627776"}`, []int{0})
	cases := []struct {
		name  string
		value []byte
		err   string
	}{
		{"tombstone", nil, "record value is null (a tombstone)"},
		{"empty", []byte{}, "missing magic byte: the value is empty"},
		{"JSON instead of Protobuf", []byte(`{"v":1}`), "missing magic byte: the value starts with 0x7b"},
		{"short header", []byte{0, 0, 0}, "truncated payload: the value has 3 bytes"},
		{"unknown id", append(schemas.AppendFrame(nil, 99), 0), "unknown schema id 99"},
		{"no message indexes", schemas.AppendFrame(nil, 7), "bad message indexes"},
		{"negative count", append(schemas.AppendFrame(nil, 7), 1), "bad message indexes: count -1"},
		{"index out of range", append(schemas.AppendFrame(nil, 7), 2, 4), "schema id 7: message index 2 out of range: the file has 1 messages"},
		{"nested index out of range", append(schemas.AppendFrame(nil, 7), 4, 0, 2), "message index 1 out of range: message V has 1 messages"},
		{"truncated payload", good[:len(good)-2], "truncated payload: the Protobuf message ends inside"},
		{"wrong wire type", append(schemas.AppendFrame(nil, 7), 0, 0x0d, 1, 2, 3, 4), "malformed Protobuf: field v has wire type 5, its type is written with wire type 0"},
		{"group wire type", append(schemas.AppendFrame(nil, 7), 0, 0x0b), "malformed Protobuf"},
		{"bad tag", append(schemas.AppendFrame(nil, 7), 0, 0x00), "malformed Protobuf"},
	}
	p := mustCompile(t, protoMapping(fld("v", tBig(false))))
	c := p.NewConverter(memory.DefaultAllocator)
	c.UseSchemas(map[int32]*schemas.Schema{7: s})
	if rows, errs := convertProto(t, c, p, good); errs != nil || rows[0][0] != int64(1<<40) {
		t.Fatalf("good value: %v %v", rows, errs)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := convertProto(t, c, p, tc.value)
			if len(errs) != 1 || !strings.Contains(errs[0].Message, tc.err) {
				t.Fatalf("want record error containing %q, got %v", tc.err, errs)
			}
		})
	}
}

func TestProtobufSchemaErrors(t *testing.T) {
	p := mustCompile(t, protoMapping(fld("id", tBig(false)), fld("name", tString(true))))
	c := p.NewConverter(memory.DefaultAllocator)
	noID := compileProto(t, 3, `syntax = "proto3"; message V { string name = 1; }`)
	c.UseSchemas(map[int32]*schemas.Schema{
		1: {ID: 1, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Err: errors.New("schema id 1 does not compile as Protobuf: syntax error")},
		2: {ID: 2, Type: schemav1.SchemaType_SCHEMA_TYPE_AVRO},
		3: noID,
	})
	_, errs := convertProto(t, c, p,
		append(schemas.AppendFrame(nil, 1), 0),
		append(schemas.AppendFrame(nil, 2), 0),
		protoFramed(t, noID, "V", `{"name":"x"}`, []int{0}),
	)
	for i, want := range []string{"schema id 1 does not compile as Protobuf", "schema id 2 is of type AVRO, not Protobuf: topic t takes Protobuf values",
		"schema id 3 does not fit topic t: message V: column id is BIGINT NOT NULL but the message has no field id"} {
		if len(errs) != 3 || errs[i].BatchIndex != i || !strings.Contains(errs[i].Message, want) {
			t.Errorf("record %d: got %+v, want %q", i, errs, want)
		}
	}
}

// TestProtobufRefusedBatchWritesNothing converts a batch with one bad
// record among good ones (nothing comes out), then a good batch on the
// same converter, which must hold exactly its own rows.
func TestProtobufRefusedBatchWritesNothing(t *testing.T) {
	s := compileProto(t, 5, `syntax = "proto3"; message V { int64 id = 1; optional string name = 2; map<string, bytes> skipped = 3; string note = 4; }`)
	p := mustCompile(t, protoMapping(fld("id", tBig(false)), fld("name", tString(true)), fld("note", tChar(3, true))))
	c := p.NewConverter(memory.DefaultAllocator)
	c.UseSchemas(map[int32]*schemas.Schema{5: s})
	v := func(j string) []byte { return protoFramed(t, s, "V", j, []int{0}) }
	_, errs := convertProto(t, c, p, v(`{"id":"1","name":"a","skipped":{"k":"AQ=="}}`), v(`{"id":"2","note":"too long"}`), v(`{"id":"3"}`))
	if len(errs) != 1 || errs[0].BatchIndex != 1 || !strings.Contains(errs[0].Message, "field note: string of 8 characters is longer than CHAR(3)") {
		t.Fatalf("want the batch refused for record 1, got %v", errs)
	}
	rows, errs := convertProto(t, c, p, v(`{"id":"4","name":"d","note":"abc"}`), v(`{"id":"5"}`))
	if errs != nil {
		t.Fatal(errs)
	}
	want := [][]any{{int64(4), "d", "abc"}, {int64(5), nil, ""}}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("got %v, want %v", rows, want)
	}
}

func TestProtobufMapLastKeyWins(t *testing.T) {
	s := compileProto(t, 5, `syntax = "proto3"; message V { map<string, int32> m = 1; }`)
	p := mustCompile(t, protoMapping(fld("m", tMap(tString(false), tInt(true), true))))
	c := p.NewConverter(memory.DefaultAllocator)
	c.UseSchemas(map[int32]*schemas.Schema{5: s})
	entry := func(dst []byte, k string, v uint64) []byte {
		e := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), k)
		e = protowire.AppendVarint(protowire.AppendTag(e, 2, protowire.VarintType), v)
		return protowire.AppendBytes(protowire.AppendTag(dst, 1, protowire.BytesType), e)
	}
	small := append(schemas.AppendFrame(nil, 5), 0)
	small = entry(entry(entry(small, "a", 1), "b", 2), "a", 3)
	large := append(schemas.AppendFrame(nil, 5), 0)
	var want [][2]any
	for i := range 20 {
		large = entry(large, string(rune('a'+i%10)), uint64(i))
	}
	for i := 10; i < 20; i++ {
		want = append(want, [2]any{string(rune('a' + i%10)), int64(i)})
	}
	rows, errs := convertProto(t, c, p, small, large)
	if errs != nil {
		t.Fatal(errs)
	}
	if got := rows[0][0]; !reflect.DeepEqual(got, [][2]any{{"b", int64(2)}, {"a", int64(3)}}) {
		t.Fatalf("small map: %v", got)
	}
	if got := rows[1][0]; !reflect.DeepEqual(got, want) {
		t.Fatalf("large map: %v, want %v", got, want)
	}
}

func TestProtobufFramed(t *testing.T) {
	if !mustCompile(t, protoMapping(fld("v", tBig(true)))).Framed() {
		t.Fatal("a Protobuf plan must ask for its writer schemas")
	}
}

// FuzzConvertProtobuf feeds arbitrary payloads (message indexes and
// message) framed with the id of a schema of nested, repeated and
// well-known types. The converter must never panic, must refuse with a
// one-record *Failure, and anything it accepts must be a readable one-row
// Arrow stream.
func FuzzConvertProtobuf(f *testing.F) {
	s := compileProto(f, 1, `syntax = "proto3";
import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto";
import "confluent/type/decimal.proto"; import "google/type/date.proto"; import "google/type/timeofday.proto";
enum E { A = 0; B = 1; }
message V {
  int64 id = 1; optional string name = 2; google.protobuf.Timestamp at = 3; repeated string tags = 4;
  map<string, int32> attrs = 5; message Addr { string city = 1; sint32 zip = 2; } Addr addr = 6;
  repeated sint32 nums = 7; E e = 8; google.protobuf.DoubleValue ratio = 9; bytes blob = 10; repeated Addr addrs = 11;
  confluent.type.Decimal price = 12; google.type.Date day = 13; google.type.TimeOfDay at_time = 14;
}`)
	p := mustCompile(f, protoMapping(fld("id", tBig(false)), fld("name", tString(true)), fld("at", tLTZ(6, true)),
		fld("tags", tArray(tString(true), true)), fld("attrs", tMap(tString(false), tSmall(true), true)),
		fld("addr", tRow(true, fld("city", tChar(4, true)), fld("zip", tInt(true)))), fld("nums", tArray(tTiny(false), true)),
		fld("e", tString(true)), fld("ratio", tDouble(true)), fld("blob", tBinary(2, true)),
		fld("addrs", tArray(tRow(false, fld("zip", tBig(true))), true)),
		fld("price", tDec(12, 3, true)), fld("day", tDate(true)), fld("at_time", tTime(3, true))))
	seed := protoFramed(f, s, "V", `{"id":"7","name":"n","at":"2026-01-02T03:04:05.123456Z","tags":["a"],"attrs":{"k":1},
		"addr":{"city":"c","zip":-2},"nums":["1","-1"],"e":"B","ratio":0.5,"blob":"AAE=","addrs":[{"zip":3}],
		"price":{"value":"MDk=","scale":2},"day":{"year":2026,"month":3,"day":1},"at_time":{"hours":1,"nanos":5000000}}`, []int{0})
	f.Add(seed[schemas.HeaderSize:])
	f.Add([]byte{0})
	f.Add([]byte{2, 0, 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add([]byte{4, 0, 0, 0x0a, 0x02})
	c := p.NewConverter(memory.DefaultAllocator)
	c.UseSchemas(map[int32]*schemas.Schema{1: s})
	if _, err := c.Convert(valuesBatch(seed)); err != nil {
		f.Fatalf("the seed, which fits, is refused: %v", err) // else every input fails alike
	}
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

// ruleFields are a field declaration of every protoschema value type;
// ruleColumns a column of every type root but ARRAY and MAP.
var ruleFields = map[protoschema.ValueType]string{
	protoschema.Bool: "bool", protoschema.Int32: "sint32", protoschema.Uint32: "fixed32", protoschema.Int64: "sfixed64",
	protoschema.Uint64: "uint64", protoschema.Float: "float", protoschema.Double: "double", protoschema.String: "string",
	protoschema.Bytes: "bytes", protoschema.Enum: "Color", protoschema.Timestamp: "google.protobuf.Timestamp",
	protoschema.Decimal: "confluent.type.Decimal", protoschema.Date: "google.type.Date", protoschema.TimeOfDay: "google.type.TimeOfDay",
	protoschema.Message: "Addr",
}

func ruleColumns() map[types.Root]*catalogv1.DataType {
	return map[types.Root]*catalogv1.DataType{
		types.Boolean: tBool(true), types.TinyInt: tTiny(true), types.SmallInt: tSmall(true), types.Int: tInt(true),
		types.BigInt: tBig(true), types.Float: tFloat(true), types.Double: tDouble(true), types.Decimal: tDec(10, 2, true),
		types.Char: tChar(3, true), types.String: tString(true), types.Binary: tBinary(2, true), types.Bytes: tBytes(true),
		types.Date: tDate(true), types.Time: tTime(3, true), types.TimestampNTZ: tNTZ(3, true), types.TimestampLTZ: tLTZ(3, true),
		types.Row: tRow(true, fld("city", tString(true))),
	}
}

// The decoder takes exactly the pairs of field and column type that
// protoschema's rule table accepts (the registry's check reads the same
// table), so a registered schema never fails here for its types.
func TestProtobufFollowsTheRuleTable(t *testing.T) {
	for v, decl := range ruleFields {
		for root, col := range ruleColumns() {
			s := compileProto(t, 7, `syntax = "proto3"; package p;
import "google/protobuf/timestamp.proto"; import "confluent/type/decimal.proto"; import "google/type/date.proto"; import "google/type/timeofday.proto";
enum Color { RED = 0; BLUE = 1; }
message Addr { string city = 1; }
message V { `+decl+` v = 1; }`)
			p := mustCompile(t, protoMapping(fld("v", col)))
			c := p.NewConverter(memory.DefaultAllocator)
			c.UseSchemas(map[int32]*schemas.Schema{7: s})
			_, errs := convertProto(t, c, p, protoFramed(t, s, "V", `{}`, []int{1}))
			refused := len(errs) == 1 && strings.Contains(errs[0].Message, "cannot fill column")
			if fits := protoschema.FitOf(v, root) != protoschema.NoFit; refused == fits {
				t.Errorf("%s into %s: rule table says fits=%v, decoder %v", decl, root, fits, errs)
			}
		}
	}
}
