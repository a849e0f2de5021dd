package rebuild

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/protoschema"
)

// compileProto compiles .proto text as the services do (with the
// well-known and built-in imports).
func compileProto(t *testing.T, text string) protoreflect.FileDescriptor {
	t.Helper()
	fd, _, err := protoschema.Compile(context.Background(), text, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// pbFile has the message V first: the one rows are written as.
func pbFile(t *testing.T, decl string) protoreflect.FileDescriptor {
	return compileProto(t, `syntax = "proto3"; package p;
import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto";
import "confluent/type/decimal.proto"; import "google/type/date.proto"; import "google/type/timeofday.proto";
message V { `+decl+` string absent = 2; }
message Addr { string city = 1; sint32 zip = 2; string country = 3; }
enum Color { RED = 0; BLUE = 1; }`)
}

func pbPlan(t *testing.T, typ types.DataType, decl string) (*Plan, protoreflect.MessageDescriptor, error) {
	t.Helper()
	m := &catalogv1.TopicMapping{Topic: "t", Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF}}
	p, err := Compile(m, []types.Field{{Name: "c", Type: typ}})
	if err != nil {
		t.Fatal(err)
	}
	fd := pbFile(t, decl)
	p, err = p.WithProtobuf(258, fd)
	return p, fd.Messages().ByName("V"), err
}

func TestProtobufValues(t *testing.T) {
	ltz := dt(types.TimestampLTZ, true)
	ltz.Precision = 6
	ntz := dt(types.TimestampNTZ, false)
	ntz.Precision = 3
	arr := dt(types.Array, true)
	el := dt(types.Int, true)
	arr.Element = &el
	strs := dt(types.Array, false)
	sel := dt(types.String, true)
	strs.Element = &sel
	mp := dt(types.Map, false)
	k, v := dt(types.String, false), dt(types.Bytes, true)
	mp.Key, mp.Value = &k, &v
	row := dt(types.Row, true)
	row.Fields = []types.Field{{Name: "city", Type: dt(types.String, true)}, {Name: "zip", Type: dt(types.Int, true)}}
	dec := dt(types.Decimal, true)
	dec.Precision, dec.Scale = 10, 2
	dec38 := dt(types.Decimal, false)
	dec38.Precision = 38
	tm3 := dt(types.Time, false)
	tm3.Precision = 3
	tm6 := dt(types.Time, false)
	tm6.Precision = 6
	int64s := func(vs ...any) func(b array.Builder, i int) {
		return func(b array.Builder, i int) {
			if vs[i] == nil {
				b.AppendNull()
				return
			}
			b.(*array.Int64Builder).Append(int64(vs[i].(int)))
		}
	}
	cases := []struct {
		name string
		typ  types.DataType
		decl string // field c, number 1
		n    int
		fill func(b array.Builder, i int)
		want []string // V as protojson, or "error: ..."
	}{
		{"int64", dt(types.BigInt, true), "int64 c = 1;", 3, int64s(-5, nil, 0), []string{`{"c":"-5"}`, `{}`, `{}`}},
		{"optional int64 keeps 0", dt(types.BigInt, true), "optional int64 c = 1;", 2, int64s(0, nil), []string{`{"c":"0"}`, `{}`}},
		{"sint32", dt(types.BigInt, false), "sint32 c = 1;", 1, int64s(-7), []string{`{"c":-7}`}},
		{"sfixed64", dt(types.BigInt, false), "sfixed64 c = 1;", 1, int64s(-8), []string{`{"c":"-8"}`}},
		{"fixed32", dt(types.BigInt, false), "fixed32 c = 1;", 1, int64s(4294967295), []string{`{"c":4294967295}`}},
		{"int32 out of range", dt(types.BigInt, false), "int32 c = 1;", 1, int64s(1 << 40), []string{"error: value: column c: 1099511627776 does not fit Protobuf int32"}},
		{"uint64 negative", dt(types.BigInt, false), "uint64 c = 1;", 1, int64s(-1), []string{"error: value: column c: -1 does not fit Protobuf uint64"}},
		{"int as enum", dt(types.Int, false), "Color c = 1;", 1, func(b array.Builder, i int) { b.(*array.Int32Builder).Append(1) }, []string{`{"c":"BLUE"}`}},
		{"string", dt(types.String, true), "string c = 1;", 2, func(b array.Builder, i int) {
			if i == 0 {
				b.(*array.StringBuilder).Append("héllo")
			} else {
				b.AppendNull()
			}
		}, []string{`{"c":"héllo"}`, `{}`}},
		{"string as enum", dt(types.String, false), "Color c = 1;", 2, func(b array.Builder, i int) {
			b.(*array.StringBuilder).Append([]string{"BLUE", "GREEN"}[i])
		}, []string{`{"c":"BLUE"}`, `error: value: column c: "GREEN" is not a value of the Protobuf enum p.Color`}},
		{"bytes", dt(types.Bytes, false), "bytes c = 1;", 1, func(b array.Builder, i int) { b.(*array.BinaryBuilder).Append([]byte{1, 2}) }, []string{`{"c":"AQI="}`}},
		{"bool", dt(types.Boolean, false), "bool c = 1;", 1, func(b array.Builder, i int) { b.(*array.BooleanBuilder).Append(true) }, []string{`{"c":true}`}},
		{"double", dt(types.Double, false), "double c = 1;", 1, func(b array.Builder, i int) { b.(*array.Float64Builder).Append(2.5) }, []string{`{"c":2.5}`}},
		{"float", dt(types.Float, false), "float c = 1;", 1, func(b array.Builder, i int) { b.(*array.Float32Builder).Append(-0.25) }, []string{`{"c":-0.25}`}},
		{"float from DOUBLE", dt(types.Double, false), "float c = 1;", 2, func(b array.Builder, i int) { b.(*array.Float64Builder).Append([]float64{0.5, 0.1}[i]) },
			[]string{`{"c":0.5}`, "error: value: column c: 0.1 is not a Protobuf float exactly"}},
		{"int32 from TINYINT", dt(types.TinyInt, false), "int32 c = 1;", 1, func(b array.Builder, i int) { b.(*array.Int8Builder).Append(-128) }, []string{`{"c":-128}`}},
		{"sint32 from SMALLINT", dt(types.SmallInt, true), "sint32 c = 1;", 2, func(b array.Builder, i int) {
			if i == 1 {
				b.AppendNull()
				return
			}
			b.(*array.Int16Builder).Append(-32768)
		}, []string{`{"c":-32768}`, `{}`}},
		{"decimal", dec, "confluent.type.Decimal c = 1;", 4, func(b array.Builder, i int) {
			if i == 3 {
				b.AppendNull()
				return
			}
			b.(*array.Decimal128Builder).Append([]decimal128.Num{decimal128.FromI64(12345), decimal128.FromI64(-5), decimal128.FromI64(0)}[i])
		}, []string{`{"c":{"value":"MDk=","precision":5,"scale":2}}`, `{"c":{"value":"+w==","precision":1,"scale":2}}`, `{"c":{"value":"AA==","precision":1,"scale":2}}`, `{}`}},
		{"decimal(38)", dec38, "confluent.type.Decimal c = 1;", 1, func(b array.Builder, i int) {
			b.(*array.Decimal128Builder).Append(decimal128.GetMaxValue(38).Negate())
		}, []string{`{"c":{"value":"tMSzV6V5O4X2dd3AAAAAAQ==","precision":38}}`}},
		{"date", dt(types.Date, false), "google.type.Date c = 1;", 3, func(b array.Builder, i int) {
			b.(*array.Date32Builder).Append([]arrow.Date32{20513, -1, -719163}[i])
		}, []string{`{"c":{"year":2026,"month":3,"day":1}}`, `{"c":{"year":1969,"month":12,"day":31}}`, "error: value: column c: 0000-12-31 is not a date of years 1 to 9999, which google.type.Date holds"}},
		{"time(3)", tm3, "google.type.TimeOfDay c = 1;", 2, func(b array.Builder, i int) {
			b.(*array.Time32Builder).Append([]arrow.Time32{49530123, 0}[i])
		}, []string{`{"c":{"hours":13,"minutes":45,"seconds":30,"nanos":123000000}}`, `{"c":{}}`}},
		{"time(6)", tm6, "google.type.TimeOfDay c = 1;", 1, func(b array.Builder, i int) { b.(*array.Time64Builder).Append(86399999999) },
			[]string{`{"c":{"hours":23,"minutes":59,"seconds":59,"nanos":999999000}}`}},
		{"timestamp", ltz, "google.protobuf.Timestamp c = 1;", 3, func(b array.Builder, i int) {
			if i == 2 {
				b.AppendNull()
				return
			}
			b.(*array.TimestampBuilder).Append([]arrow.Timestamp{1767323045678901, -1500}[i])
		}, []string{`{"c":"2026-01-02T03:04:05.678901Z"}`, `{"c":"1969-12-31T23:59:59.998500Z"}`, `{}`}},
		{"timestamp(3)", ntz, "google.protobuf.Timestamp c = 1;", 1, func(b array.Builder, i int) { b.(*array.TimestampBuilder).Append(0) },
			[]string{`{"c":"1970-01-01T00:00:00Z"}`}},
		{"wrapper", dt(types.BigInt, true), "google.protobuf.Int64Value c = 1;", 3, int64s(5, nil, 0), []string{`{"c":"5"}`, `{}`, `{"c":"0"}`}},
		{"repeated packed", arr, "repeated int32 c = 1;", 3, func(b array.Builder, i int) {
			lb := b.(*array.ListBuilder)
			switch i {
			case 0:
				lb.Append(true)
				lb.ValueBuilder().(*array.Int32Builder).Append(1)
				lb.ValueBuilder().AppendNull()
				lb.ValueBuilder().(*array.Int32Builder).Append(-3)
			case 1:
				lb.Append(true)
			default:
				lb.AppendNull()
			}
		}, []string{`{"c":[1,0,-3]}`, `{}`, `{}`}},
		{"repeated string", strs, "repeated string c = 1;", 1, func(b array.Builder, i int) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.StringBuilder).Append("a")
			lb.ValueBuilder().AppendNull()
		}, []string{`{"c":["a",""]}`}},
		{"map", mp, "map<string, bytes> c = 1;", 1, func(b array.Builder, i int) {
			mb := b.(*array.MapBuilder)
			mb.Append(true)
			mb.KeyBuilder().(*array.StringBuilder).Append("k")
			mb.ItemBuilder().(*array.BinaryBuilder).Append([]byte{9})
			mb.KeyBuilder().(*array.StringBuilder).Append("null")
			mb.ItemBuilder().AppendNull()
		}, []string{`{"c":{"k":"CQ==","null":""}}`}},
		{"row", row, "Addr c = 1;", 3, func(b array.Builder, i int) {
			sb := b.(*array.StructBuilder)
			switch i {
			case 0:
				sb.Append(true)
				sb.FieldBuilder(0).(*array.StringBuilder).Append("Ghent")
				sb.FieldBuilder(1).(*array.Int32Builder).Append(-9000)
			case 1:
				sb.Append(true)
				sb.FieldBuilder(0).AppendNull()
				sb.FieldBuilder(1).(*array.Int32Builder).Append(0)
			default:
				sb.AppendNull()
			}
		}, []string{`{"c":{"city":"Ghent","zip":-9000}}`, `{"c":{}}`, `{}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, md, err := pbPlan(t, tc.typ, tc.decl)
			if err != nil {
				t.Fatal(err)
			}
			rec := build(t, tc.typ, tc.n, tc.fill)
			for i, want := range tc.want {
				var r Record
				if err := p.Rebuild(&r, rec, i, 0); err != nil {
					if got := "error: " + err.Error(); got != want {
						t.Errorf("row %d: %s, want %s", i, got, want)
					}
					continue
				}
				// Magic byte, id 258, message indexes [0] (the shorthand).
				if string(r.Value[:6]) != "\x00\x00\x00\x01\x02\x00" {
					t.Fatalf("row %d: framing %x", i, r.Value[:6])
				}
				got := dynamicpb.NewMessage(md)
				if err := proto.Unmarshal(r.Value[6:], got); err != nil {
					t.Fatalf("row %d: %x does not decode: %v", i, r.Value, err)
				}
				w := dynamicpb.NewMessage(md)
				if err := protojson.Unmarshal([]byte(want), w); err != nil {
					t.Fatalf("want %s: %v", want, err)
				}
				if !proto.Equal(got, w) {
					t.Errorf("row %d: got %v, want %s", i, got, want)
				}
			}
		})
	}
}

func TestProtobufSchemaRefused(t *testing.T) {
	for decl, want := range map[string]string{
		"string c = 1;":                    "field c: column c of type BIGINT NOT NULL cannot be written as Protobuf string",
		"repeated int64 c = 1;":            "cannot be written as Protobuf repeated int64",
		"google.protobuf.Timestamp c = 1;": "cannot be written as Protobuf google.protobuf.Timestamp",
		"float c = 1;":                     "cannot be written as Protobuf float",
		"google.type.Date c = 1;":          "cannot be written as Protobuf google.type.Date",
	} {
		if _, _, err := pbPlan(t, dt(types.BigInt, false), decl); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", decl, err, want)
		}
	}
	m := &catalogv1.TopicMapping{Topic: "t", Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF}}
	p, err := Compile(m, []types.Field{{Name: "c", Type: dt(types.BigInt, false)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WithProtobuf(1, compileProto(t, `syntax = "proto3"; enum E { A = 0; }`)); err == nil || !strings.Contains(err.Error(), "has no message") {
		t.Errorf("no message: %v", err)
	}
	var r Record
	rec := build(t, dt(types.BigInt, false), 1, func(b array.Builder, i int) { b.(*array.Int64Builder).Append(1) })
	if err := p.Rebuild(&r, rec, 0, 0); err == nil || !strings.Contains(err.Error(), "no Protobuf schema") {
		t.Errorf("plan without schema: %v", err)
	}
	// The file's first message, a field of it without a column left out.
	q, err := p.WithProtobuf(1, compileProto(t, `syntax = "proto3"; message A { int64 c = 1; B b = 2; } message B { int64 c = 1; A a = 2; }`))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Rebuild(&r, rec, 0, 0); err != nil || string(r.Value) != "\x00\x00\x00\x00\x01\x00\x08\x01" {
		t.Errorf("recursive messages: %x %v, want message indexes [0] and c = 1", r.Value, err)
	}
}

// The encoder writes exactly the pairs of column and field type that
// protoschema's rule table accepts (the registry checks schemas by it).
func TestProtobufFollowsTheRuleTable(t *testing.T) {
	decls := map[protoschema.ValueType]string{
		protoschema.Bool: "bool", protoschema.Int32: "sfixed32", protoschema.Uint32: "uint32", protoschema.Int64: "sint64",
		protoschema.Uint64: "fixed64", protoschema.Float: "float", protoschema.Double: "double", protoschema.String: "string",
		protoschema.Bytes: "bytes", protoschema.Enum: "Color", protoschema.Timestamp: "google.protobuf.Timestamp",
		protoschema.Decimal: "confluent.type.Decimal", protoschema.Date: "google.type.Date", protoschema.TimeOfDay: "google.type.TimeOfDay",
		protoschema.Message: "Addr",
	}
	for root := types.Boolean; root <= types.Row; root++ {
		if root == types.Array || root == types.Map {
			continue
		}
		col := dt(root, true)
		switch root {
		case types.Decimal:
			col.Precision, col.Scale = 10, 2
		case types.Char, types.Binary:
			col.Length = 2
		case types.Time, types.TimestampNTZ, types.TimestampLTZ:
			col.Precision = 3
		case types.Row:
			col.Fields = []types.Field{{Name: "city", Type: dt(types.String, true)}}
		}
		for v, decl := range decls {
			_, _, err := pbPlan(t, col, decl+" c = 1;")
			refused := err != nil && strings.Contains(err.Error(), "cannot be written as")
			if fits := protoschema.FitOf(v, root) != protoschema.NoFit; refused == fits || (err != nil && !refused) {
				t.Errorf("%s from %s: rule table says fits=%v, encoder %v", decl, root, fits, err)
			}
		}
	}
}
