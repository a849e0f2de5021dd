package rebuild

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// compileProto compiles .proto text (with the well-known imports).
func compileProto(t *testing.T, text string) protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: func(path string) (io.ReadCloser, error) {
			if path != "t.proto" {
				return nil, fmt.Errorf("no file %s", path) // the well-known ones come from WithStandardImports
			}
			return io.NopCloser(strings.NewReader(text)), nil
		},
	})}
	files, err := c.Compile(context.Background(), "t.proto")
	if err != nil {
		t.Fatal(err)
	}
	return files[0]
}

// pbFile has the message V first: the one rows are written as.
func pbFile(t *testing.T, decl string) protoreflect.FileDescriptor {
	return compileProto(t, `syntax = "proto3"; package p;
import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto";
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
