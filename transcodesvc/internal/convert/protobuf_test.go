package convert

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

func TestProtoFits(t *testing.T) {
	fd, err := schemas.CompileProtobuf(context.Background(), &schemav1.Schema{Id: 1, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Text: `
syntax = "proto3";
package p;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
enum Color { RED = 0; BLUE = 1; }
message Addr { string city = 1; int32 zip = 2; }
message V {
  int32 i32 = 1; sint64 s64 = 2; uint64 u64 = 3; fixed32 f32 = 4;
  bool b = 5; string s = 6; bytes raw = 7; float f = 8; double d = 9;
  Color color = 10; Addr addr = 11; repeated string tags = 12;
  map<string, int64> counts = 13; google.protobuf.Timestamp at = 14;
  google.protobuf.Int32Value maybe = 15; optional string opt = 16;
}`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Messages().ByName("V")
	str, i64 := types.DataType{Root: types.String}, types.DataType{Root: types.BigInt}
	nullable := func(t types.DataType) types.DataType { t.Nullable = true; return t }
	fits := map[string][]types.DataType{
		"i32":    {{Root: types.Int}, i64},
		"s64":    {i64},
		"u64":    {i64},
		"f32":    {i64},
		"b":      {{Root: types.Boolean}},
		"s":      {str, {Root: types.Char, Length: 3}},
		"raw":    {{Root: types.Bytes}, {Root: types.Binary, Length: 4}},
		"f":      {{Root: types.Float}, {Root: types.Double}},
		"d":      {{Root: types.Double}},
		"color":  {str, {Root: types.Int}},
		"addr":   {nullable(types.DataType{Root: types.Row, Fields: []types.Field{{Name: "city", Type: str}, {Name: "zip", Type: types.DataType{Root: types.Int}}, {Name: "extra", Type: nullable(str)}}})},
		"tags":   {{Root: types.Array, Element: &str}},
		"counts": {{Root: types.Map, Key: &str, Value: &i64}},
		"at":     {nullable(types.DataType{Root: types.TimestampNTZ, Precision: 6}), nullable(types.DataType{Root: types.TimestampLTZ, Precision: 3})},
		"maybe":  {nullable(types.DataType{Root: types.Int})},
		"opt":    {nullable(str)},
	}
	for name, ts := range fits {
		for _, ct := range ts {
			if err := protoFits(md.Fields().ByName(protoreflect.Name(name)), name, ct); err != nil {
				t.Errorf("%s into %s: %v", name, ct, err)
			}
		}
	}
	misfits := map[string]struct {
		t    types.DataType
		want string
	}{
		"i32":    {str, "does not fit column i32"},
		"u64":    {types.DataType{Root: types.Int}, "does not fit"},
		"d":      {types.DataType{Root: types.Float}, "does not fit"},
		"color":  {types.DataType{Root: types.Boolean}, "does not fit"},
		"addr":   {nullable(types.DataType{Root: types.Row, Fields: []types.Field{{Name: "nope", Type: str}}}), "NOT NULL but message p.Addr has no field nope"},
		"tags":   {str, "repeated string"},
		"counts": {types.DataType{Root: types.Map, Key: &str, Value: &str}, "counts (value)"},
		"at":     {nullable(i64), "google.protobuf.Timestamp"},
		"maybe":  {types.DataType{Root: types.Int}, "may be absent"},
		"opt":    {str, "may be absent"},
	}
	for name, m := range misfits {
		err := protoFits(md.Fields().ByName(protoreflect.Name(name)), name, m.t)
		if err == nil || !strings.Contains(err.Error(), m.want) {
			t.Errorf("%s into %s: %v, want an error with %q", name, m.t, err, m.want)
		}
	}
}
