package protomap

import (
	"encoding/base64"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"

	"github.com/ferrygw/ferry/schemasvc/internal/tablefit"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

func typ(root catalogv1.TypeRoot, nullable bool) *catalogv1.DataType {
	return &catalogv1.DataType{Root: root, Nullable: nullable}
}

// every is a column of each Fluss type Protobuf maps, nested ones
// included; NOT NULL only where a proto3 scalar can always fill it.
func every() []*catalogv1.Field {
	ltz := typ(catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ, true)
	ltz.Precision = 3
	local := typ(catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ, true)
	local.Precision = 6
	arr := typ(catalogv1.TypeRoot_TYPE_ROOT_ARRAY, false)
	arr.Element = typ(catalogv1.TypeRoot_TYPE_ROOT_INTEGER, true)
	m := typ(catalogv1.TypeRoot_TYPE_ROOT_MAP, true)
	m.Key, m.Value = typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, false), typ(catalogv1.TypeRoot_TYPE_ROOT_DOUBLE, false)
	row := typ(catalogv1.TypeRoot_TYPE_ROOT_ROW, true)
	row.Fields = []*catalogv1.Field{{Name: "city", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, false)}, {Name: "zip", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_CHAR, true)}}
	rows := typ(catalogv1.TypeRoot_TYPE_ROOT_ARRAY, true)
	rows.Element = typ(catalogv1.TypeRoot_TYPE_ROOT_ROW, false)
	rows.Element.Fields = []*catalogv1.Field{{Name: "sku", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_BIGINT, false)}}
	return []*catalogv1.Field{
		{Name: "b", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN, false)},
		{Name: "i32", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_INTEGER, false)},
		{Name: "i64", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_BIGINT, false)},
		{Name: "f", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_FLOAT, true)},
		{Name: "d", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_DOUBLE, false)},
		{Name: "s", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)},
		{Name: "raw", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_BYTES, false)},
		{Name: "at", Type: ltz},
		{Name: "local", Type: local},
		{Name: "tags", Type: arr},
		{Name: "scores", Type: m},
		{Name: "addr", Type: row},
		{Name: "lines", Type: rows},
	}
}

const wantDerived = `syntax = "proto3";
package shop.eu;

import "google/protobuf/timestamp.proto";

message my_table {
  bool b = 1;
  int32 i32 = 2;
  int64 i64 = 3;
  optional float f = 4;
  double d = 5;
  optional string s = 6;
  bytes raw = 7;
  google.protobuf.Timestamp at = 8;
  google.protobuf.Timestamp local = 9;
  repeated int32 tags = 10;
  map<string, double> scores = 11;
  Addr addr = 12;
  repeated Lines lines = 13;
  message Addr {
    string city = 1;
    optional string zip = 2;
  }
  message Lines {
    int64 sku = 1;
  }
}
`

// Derive writes each type as documented, the same text every time, and
// the derived schema maps back onto its own columns.
func TestDeriveEveryType(t *testing.T) {
	text, err := Derive("my-table", "shop.eu", every())
	if err != nil {
		t.Fatal(err)
	}
	if text != wantDerived {
		t.Errorf("derived\n%s\nwant\n%s", text, wantDerived)
	}
	if again, _ := Derive("my-table", "shop.eu", every()); again != text {
		t.Errorf("derived twice, two texts:\n%s\n%s", text, again)
	}
	s, err := Parse(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := Check(s, tablefit.Target{Columns: every()}); m != nil {
		t.Errorf("derived schema does not fit its table: %v", m)
	}
	if got := s.Message().FullName(); got != "shop.eu.my_table" {
		t.Errorf("message %s", got)
	}
}

// Column types without a Protobuf type, and names that are no field
// names, are refused naming the column.
func TestDeriveRefuses(t *testing.T) {
	nested := typ(catalogv1.TypeRoot_TYPE_ROOT_ARRAY, false)
	nested.Element = typ(catalogv1.TypeRoot_TYPE_ROOT_ARRAY, false)
	nested.Element.Element = typ(catalogv1.TypeRoot_TYPE_ROOT_INTEGER, false)
	for _, tc := range []struct {
		col  *catalogv1.Field
		want string
	}{
		{&catalogv1.Field{Name: "grid", Type: nested}, "column grid: ARRAY<ARRAY<INTEGER NOT NULL> NOT NULL> NOT NULL: Protobuf has no repeated field of repeated fields"},
		{&catalogv1.Field{Name: "my-col", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)}, `column name "my-col" is not a Protobuf field name`},
	} {
		_, err := Derive("t", "db", []*catalogv1.Field{tc.col})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.col.GetName(), err, tc.want)
		}
	}
}

// A ROW column's message does not take a name already used in its scope.
func TestDeriveNestedNames(t *testing.T) {
	row := typ(catalogv1.TypeRoot_TYPE_ROOT_ROW, true)
	row.Fields = []*catalogv1.Field{{Name: "x", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_INTEGER, true)}}
	text, err := Derive("t", "", []*catalogv1.Field{
		{Name: "Point", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)},
		{Name: "point", Type: row},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "PointRow point = 2;") || strings.Contains(text, "package") {
		t.Errorf("derived:\n%s", text)
	}
}

// ordersColumns: id BIGINT NOT NULL, item STRING, qty INT, at
// TIMESTAMP_LTZ(3), tags ARRAY<STRING>, addr ROW<city STRING NOT NULL>.
func ordersColumns() []*catalogv1.Field {
	at := typ(catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ, true)
	at.Precision = 3
	tags := typ(catalogv1.TypeRoot_TYPE_ROOT_ARRAY, true)
	tags.Element = typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)
	addr := typ(catalogv1.TypeRoot_TYPE_ROOT_ROW, true)
	addr.Fields = []*catalogv1.Field{{Name: "city", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, false)}}
	return []*catalogv1.Field{
		{Name: "id", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_BIGINT, false)},
		{Name: "item", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)},
		{Name: "qty", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_INTEGER, true)},
		{Name: "at", Type: at},
		{Name: "tags", Type: tags},
		{Name: "addr", Type: addr},
	}
}

const ordersProto = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

// An order, as the shop's producers write it.
message Order {
  int64 id = 1;
  google.protobuf.StringValue item = 2;
  optional int32 qty = 3;
  google.protobuf.Timestamp at = 4;
  repeated string tags = 5;
  Address addr = 6;
  message Address { string city = 1; }
}

message Other { string ignored = 1; }
`

func mustParse(t *testing.T, text string, imports map[string]string) *Schema {
	t.Helper()
	s, err := Parse(text, imports)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return s
}

// The first message maps onto the table: wrappers, proto3 optional,
// Timestamp, repeated and nested messages each onto their column.
func TestCheckFits(t *testing.T) {
	s := mustParse(t, ordersProto, nil)
	if m := Check(s, tablefit.Target{Columns: ordersColumns()}); m != nil {
		t.Fatalf("Check = %v", m)
	}
	// A field of an enum fits a STRING (its name) or an INT (its number).
	enum := `syntax = "proto3"; enum Kind { TEA = 0; COFFEE = 1; } message M { int64 id = 1; Kind item = 2; Kind qty = 3; }`
	if m := Check(mustParse(t, enum, nil), tablefit.Target{Columns: ordersColumns()}); m != nil {
		t.Errorf("enum: %v", m)
	}
}

// A message that does not fit the table is refused naming the field and
// why.
func TestCheckRefuses(t *testing.T) {
	cols := ordersColumns()
	for _, tc := range []struct {
		name, fields string
		want         string
	}{
		{"wrong type", `string id = 1;`, "field id: Protobuf string does not fit column type BIGINT NOT NULL"},
		{"optional NOT NULL", `optional int64 id = 1;`, "field id: int64 may be absent (it is declared with presence: optional, a wrapper or in a oneof) but the column is BIGINT NOT NULL"},
		{"wrapper NOT NULL", `google.protobuf.Int64Value id = 1;`, "field id: google.protobuf.Int64Value may be absent"},
		{"oneof NOT NULL", `oneof k { int64 id = 1; string item = 2; }`, "field id: int64 may be absent"},
		{"missing NOT NULL", `string item = 2;`, "field id: column id is BIGINT NOT NULL and message M has no field for it"},
		{"unknown field", `int64 id = 1; int32 extra = 9;`, "field extra: no column of that name (the table refuses unknown fields)"},
		{"narrower column", `int64 id = 1; int64 qty = 3;`, "field qty: Protobuf int64 does not fit column type INTEGER"},
		{"uint32 into INT", `int64 id = 1; uint32 qty = 3;`, "field qty: Protobuf uint32 does not fit column type INTEGER"},
		{"timestamp as int", `int64 id = 1; int64 at = 4;`, "field at: Protobuf int64 does not fit column type TIMESTAMP_LTZ(3)"},
		{"repeated into scalar", `int64 id = 1; repeated string item = 2;`, "field item: Protobuf repeated string does not fit column type STRING"},
		{"map into array", `int64 id = 1; map<string, string> tags = 5;`, "field tags: Protobuf map<string, string> does not fit column type ARRAY<STRING>"},
		{"element type", `int64 id = 1; repeated int64 tags = 5;`, "field tags[]: Protobuf int64 does not fit column type STRING"},
		{"nested unknown", `int64 id = 1; A addr = 6; message A { string city = 1; string street = 2; }`, "field addr.street: no column of that name"},
		{"nested NOT NULL", `int64 id = 1; A addr = 6; message A { optional string city = 1; }`, "field addr.city: string may be absent"},
		{"message into scalar", `int64 id = 1; A item = 2; message A { string city = 1; }`, "field item: Protobuf M.A does not fit column type STRING"},
		{"wrapper type", `int64 id = 1; google.protobuf.BoolValue item = 2;`, "field item: Protobuf google.protobuf.BoolValue does not fit column type STRING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := `syntax = "proto3"; import "google/protobuf/wrappers.proto"; message M { ` + tc.fields + ` }`
			m := Check(mustParse(t, text, nil), tablefit.Target{Columns: cols})
			if m == nil || !strings.Contains(m.Error(), tc.want) {
				t.Errorf("Check = %v, want %q", m, tc.want)
			}
		})
	}
	// With unknown fields ignored, an extra field is fine.
	extra := mustParse(t, `syntax = "proto3"; message M { int64 id = 1; int32 extra = 9; }`, nil)
	if m := Check(extra, tablefit.Target{Columns: cols, IgnoreUnknown: true}); m != nil {
		t.Errorf("ignored unknown field: %v", m)
	}
	if m := Check(mustParse(t, `syntax = "proto3"; enum E { A = 0; }`, nil), tablefit.Target{Columns: cols}); m == nil || !strings.Contains(m.Error(), "defines no message") {
		t.Errorf("no message: %v", m)
	}
	if m := Check(extra, tablefit.Target{Single: cols[0]}); m == nil || !strings.Contains(m.Error(), "column id is one value") {
		t.Errorf("single column: %v", m)
	}
}

// A schema sent as a base64 FileDescriptorProto (confluent-kafka-python)
// is the same schema as its source: one canonical form, stored as source,
// and Serialized gives the descriptor back.
func TestDescriptorInput(t *testing.T) {
	src := mustParse(t, ordersProto, nil)
	b, err := proto.Marshal(protodesc.ToFileDescriptorProto(src.file))
	if err != nil {
		t.Fatal(err)
	}
	desc := mustParse(t, base64.StdEncoding.EncodeToString(b), nil)
	if desc.Canonical() != src.Canonical() {
		t.Errorf("canonical forms differ:\n%s\n%s", desc.Canonical(), src.Canonical())
	}
	if desc.Text() != desc.Canonical() || !strings.Contains(desc.Text(), "message Order {") {
		t.Errorf("a descriptor is stored as source:\n%s", desc.Text())
	}
	if src.Text() != ordersProto || strings.Contains(src.Canonical(), "An order") {
		t.Errorf("source text %q, canonical %q", src.Text(), src.Canonical())
	}
	ser, err := src.Serialized()
	if err != nil {
		t.Fatal(err)
	}
	back := mustParse(t, ser, nil)
	if back.Canonical() != src.Canonical() || back.Message().FullName() != "shop.Order" {
		t.Errorf("serialized round trip:\n%s", back.Canonical())
	}
	// Reformatting and comments do not make another schema.
	squeezed := strings.Join(strings.Fields(strings.ReplaceAll(ordersProto, "// An order, as the shop's producers write it.", "")), " ")
	if mustParse(t, squeezed, nil).Canonical() != src.Canonical() {
		t.Errorf("reformatted source has another canonical form")
	}
}

// Imports resolve from the texts of the references, transitively; an
// import that is not given is refused naming it.
func TestImports(t *testing.T) {
	common := `syntax = "proto3"; package common; import "kinds.proto"; message Money { int64 units = 1; kinds.Currency currency = 2; }`
	kinds := `syntax = "proto3"; package kinds; enum Currency { EUR = 0; USD = 1; }`
	order := `syntax = "proto3"; import "common.proto"; message Order { int64 id = 1; common.Money total = 2; }`
	if _, err := Parse(order, map[string]string{"common.proto": common}); err == nil || !strings.Contains(err.Error(), `"kinds.proto"`) {
		t.Errorf("missing import: %v", err)
	}
	s := mustParse(t, order, map[string]string{"common.proto": common, "kinds.proto": kinds})
	if f := s.Message().Fields().ByName("total"); f == nil || f.Message().FullName() != "common.Money" {
		t.Errorf("total: %v", f)
	}
	if _, err := Parse(`syntax = "proto3"; message M { Nope x = 1; }`, nil); err == nil || !strings.Contains(err.Error(), "Nope") {
		t.Errorf("unknown type: %v", err)
	}
}

// Compatible matches fields by number: types kept within Confluent's wire
// groups, the same message and enum types, cardinality kept, required
// fields kept.
func TestCompatible(t *testing.T) {
	base := `syntax = "proto3"; package p; message M { int64 id = 1; string name = 2; N n = 3; repeated int32 xs = 4; message N { int32 a = 1; } }`
	for _, tc := range []struct {
		name, reader string
		want         string // "" compatible
	}{
		{"same", base, ""},
		{"field added", `syntax = "proto3"; package p; message M { int64 id = 1; string name = 2; N n = 3; repeated int32 xs = 4; bool more = 5; message N { int32 a = 1; } }`, ""},
		{"field removed", `syntax = "proto3"; package p; message M { int64 id = 1; }`, ""},
		{"renamed", `syntax = "proto3"; package p; message M { int64 key = 1; }`, ""},
		{"varint group", `syntax = "proto3"; package p; message M { uint64 id = 1; bytes name = 2; }`, ""},
		{"type changed", `syntax = "proto3"; package p; message M { string id = 1; }`, "field M.id (number 1) is string, was int64"},
		{"zigzag", `syntax = "proto3"; package p; message M { sint64 id = 1; }`, "field M.id (number 1) is sint64, was int64"},
		{"made repeated", `syntax = "proto3"; package p; message M { repeated string name = 2; }`, "field M.name (number 2) is repeated string, was string"},
		{"nested type changed", `syntax = "proto3"; package p; message M { N n = 3; message N { string a = 1; } }`, "field p.M.N.a (number 1) is string, was int32"},
		{"message renamed", `syntax = "proto3"; package p; message Renamed { int64 id = 1; }`, "message p.M is gone"},
		{"package changed", `syntax = "proto3"; package q; message M { int64 id = 1; }`, "message p.M is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Compatible(mustParse(t, tc.reader, nil), mustParse(t, base, nil))
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Compatible = %v, want %q", err, tc.want)
			}
		})
	}
	// proto2: a required field the writer may lack cannot be read.
	old := mustParse(t, `syntax = "proto2"; message M { optional int64 id = 1; }`, nil)
	strict := mustParse(t, `syntax = "proto2"; message M { required int64 id = 1; }`, nil)
	if err := Compatible(strict, old); err == nil || !strings.Contains(err.Error(), "field M.id (number 1) is required") {
		t.Errorf("required added: %v", err)
	}
	if err := Compatible(old, strict); err != nil {
		t.Errorf("required dropped, read with the old schema: %v", err)
	}
}

// Source and descriptor give one canonical form for files with every kind
// of declaration (proto2 groups and extensions, services, options, oneofs,
// reserved ranges, nested enums, maps).
func TestCanonicalOfEveryConstruct(t *testing.T) {
	for _, text := range []string{
		`syntax = "proto2";
package p2;
import "google/protobuf/descriptor.proto";
option java_package = "com.example.p2";
extend google.protobuf.FieldOptions { optional string label = 50001; }
message M {
  required int64 id = 1 [(label) = "key"];
  optional string name = 2 [default = "none"];
  repeated group Line = 3 { optional int32 qty = 4; }
  extensions 100 to 199;
  reserved 5, 8 to 9;
  reserved "old";
  enum Kind { A = 0; B = 1; }
  optional Kind kind = 6 [deprecated = true];
  oneof choice { string s = 10; int32 i = 11; }
  map<string, M> children = 12;
}
extend M { optional bool flag = 100; }
service S { rpc Get(M) returns (M); }
`,
		`edition = "2023";
package e;
message M { int64 id = 1; string name = 2 [features.field_presence = IMPLICIT]; }
`,
	} {
		src := mustParse(t, text, nil)
		ser, err := src.Serialized()
		if err != nil {
			t.Fatal(err)
		}
		if got := mustParse(t, ser, nil).Canonical(); got != src.Canonical() {
			t.Errorf("descriptor and source differ:\n%s\n%s", got, src.Canonical())
		}
		if again := mustParse(t, src.Canonical(), nil).Canonical(); again != src.Canonical() {
			t.Errorf("canonical form is not stable:\n%s\n%s", again, src.Canonical())
		}
	}
}

// valueColumns: DECIMAL(10, 2) NOT NULL, DATE, TIME(3), TINYINT, SMALLINT
// NOT NULL, TIMESTAMP(6) NOT NULL.
func valueColumns() []*catalogv1.Field {
	dec := typ(catalogv1.TypeRoot_TYPE_ROOT_DECIMAL, false)
	dec.Precision, dec.Scale = 10, 2
	tm := typ(catalogv1.TypeRoot_TYPE_ROOT_TIME, true)
	tm.Precision = 3
	ts := typ(catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ, false)
	ts.Precision = 6
	return []*catalogv1.Field{
		{Name: "price", Type: dec},
		{Name: "day", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_DATE, true)},
		{Name: "at", Type: tm},
		{Name: "tiny", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_TINYINT, true)},
		{Name: "small", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_SMALLINT, false)},
		{Name: "ts", Type: ts},
	}
}

// DECIMAL, DATE and TIME derive to the value messages, imported without
// references; TINYINT and SMALLINT to int32; NOT NULL message columns to
// plain message fields, which the check accepts.
func TestDeriveValueMessages(t *testing.T) {
	text, err := Derive("prices", "shop", valueColumns())
	if err != nil {
		t.Fatal(err)
	}
	want := `syntax = "proto3";
package shop;

import "confluent/type/decimal.proto";
import "google/protobuf/timestamp.proto";
import "google/type/date.proto";
import "google/type/timeofday.proto";

message prices {
  confluent.type.Decimal price = 1;
  google.type.Date day = 2;
  google.type.TimeOfDay at = 3;
  optional int32 tiny = 4;
  int32 small = 5;
  google.protobuf.Timestamp ts = 6;
}
`
	if text != want {
		t.Errorf("derived\n%s\nwant\n%s", text, want)
	}
	if m := Check(mustParse(t, text, nil), tablefit.Target{Columns: valueColumns()}); m != nil {
		t.Errorf("derived schema does not fit its table: %v", m)
	}
}

// The value messages fit only their column types; an optional scalar or a
// wrapper still needs a nullable column; a value message in a oneof too.
func TestCheckValueMessages(t *testing.T) {
	head := `syntax = "proto3"; import "confluent/type/decimal.proto"; import "google/type/date.proto";
import "google/type/timeofday.proto"; import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto"; message M { `
	ok := `confluent.type.Decimal price = 1; google.type.Date day = 2; google.type.TimeOfDay at = 3; sint32 tiny = 4; int32 small = 5; google.protobuf.Timestamp ts = 6;`
	if m := Check(mustParse(t, head+ok+` }`, nil), tablefit.Target{Columns: valueColumns()}); m != nil {
		t.Errorf("Check = %v", m)
	}
	for _, tc := range []struct{ fields, want string }{
		{`google.type.Date price = 1; int32 small = 5; google.protobuf.Timestamp ts = 6;`, "field price: Protobuf google.type.Date does not fit column type DECIMAL(10, 2) NOT NULL"},
		{`confluent.type.Decimal price = 1; google.type.TimeOfDay day = 2; int32 small = 5; google.protobuf.Timestamp ts = 6;`, "field day: Protobuf google.type.TimeOfDay does not fit column type DATE"},
		{`confluent.type.Decimal price = 1; string at = 3; int32 small = 5; google.protobuf.Timestamp ts = 6;`, "field at: Protobuf string does not fit column type TIME(3)"},
		{`confluent.type.Decimal price = 1; int64 tiny = 4; int32 small = 5; google.protobuf.Timestamp ts = 6;`, "field tiny: Protobuf int64 does not fit column type TINYINT"},
		{`confluent.type.Decimal price = 1; uint32 small = 5; google.protobuf.Timestamp ts = 6;`, "field small: Protobuf uint32 does not fit column type SMALLINT NOT NULL"},
		{`confluent.type.Decimal price = 1; optional int32 small = 5; google.protobuf.Timestamp ts = 6;`, "field small: int32 may be absent"},
		{`confluent.type.Decimal price = 1; google.protobuf.Int32Value small = 5; google.protobuf.Timestamp ts = 6;`, "field small: google.protobuf.Int32Value may be absent"},
		{`oneof o { confluent.type.Decimal price = 1; string other = 9; } int32 small = 5; google.protobuf.Timestamp ts = 6;`, "field price: confluent.type.Decimal may be absent"},
		{`double price = 1; int32 small = 5; google.protobuf.Timestamp ts = 6;`, "field price: Protobuf double does not fit column type DECIMAL(10, 2) NOT NULL"},
	} {
		m := Check(mustParse(t, head+tc.fields+` }`, nil), tablefit.Target{Columns: valueColumns(), IgnoreUnknown: true})
		if m == nil || !strings.Contains(m.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want %q", tc.fields, m, tc.want)
		}
	}
}
