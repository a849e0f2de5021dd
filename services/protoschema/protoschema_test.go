package protoschema

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
)

func TestRegisteredWithReferences(t *testing.T) {
	common := &schemav1.Schema{Id: 1, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
		Text: `syntax = "proto3"; package c; message Money { int64 units = 1; }`}
	mid := &schemav1.Schema{Id: 2, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
		Text:       `syntax = "proto3"; package m; import "c/money.proto"; message Line { c.Money price = 1; }`,
		References: []*schemav1.SchemaReference{{Name: "c/money.proto", Subject: "money", Version: 1}}}
	other := &schemav1.Schema{Id: 3, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
		Text: `syntax = "proto3"; package o; message Tag { string v = 1; }`}
	top := &schemav1.Schema{Id: 4, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
		Text: `syntax = "proto3"; package t; import "m/line.proto"; import "o/tag.proto";
import "google/protobuf/timestamp.proto";
message Order { m.Line line = 1; o.Tag tag = 2; google.protobuf.Timestamp at = 3;
  message Inner { int32 x = 1; } }
message Second { string s = 1; }`,
		References: []*schemav1.SchemaReference{
			{Name: "m/line.proto", Subject: "line", Version: 1},
			{Name: "o/tag.proto", Subject: "tag", Version: 2},
		}}
	// The registry's order: dependencies first, then the schema using them.
	fd, err := Registered(context.Background(), top, []*schemav1.Schema{common, mid, other})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		idx  []int
		want string
	}{{[]int{0}, "t.Order"}, {[]int{1}, "t.Second"}, {[]int{0, 0}, "t.Order.Inner"}} {
		md, err := MessageAt(fd, tc.idx)
		if err != nil || string(md.FullName()) != tc.want {
			t.Fatalf("MessageAt(%v) = %v, %v; want %s", tc.idx, md, err, tc.want)
		}
	}
	if line := fd.Messages().Get(0).Fields().ByName("line").Message(); line.Fields().ByName("price").Message().FullName() != "c.Money" {
		t.Fatalf("the nested reference did not resolve: %v", line.FullName())
	}
	for _, idx := range [][]int{{2}, {0, 1}, {1, 0}} {
		if _, err := MessageAt(fd, idx); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Fatalf("MessageAt(%v) = %v, want out of range", idx, err)
		}
	}
	if _, err := Registered(context.Background(), top, []*schemav1.Schema{mid}); err == nil {
		t.Fatal("compiling without every referenced schema should fail")
	}
	bad := &schemav1.Schema{Id: 9, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Text: `syntax = "proto3"; message X { int32 a = 1`}
	if _, err := Registered(context.Background(), bad, nil); err == nil || !strings.Contains(err.Error(), "schema id 9 does not compile") {
		t.Fatalf("bad schema: %v", err)
	}
	if _, err := Registered(context.Background(), &schemav1.Schema{Id: 5, Type: schemav1.SchemaType_SCHEMA_TYPE_AVRO}, nil); err == nil {
		t.Fatal("an Avro schema should be refused")
	}
}

// serialized is fd as confluent-kafka-python registers a schema: the
// base64 of its FileDescriptorProto.
func serialized(t *testing.T, fd protoreflect.FileDescriptor) string {
	t.Helper()
	b, err := proto.Marshal(protodesc.ToFileDescriptorProto(fd))
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// TestRegisteredDescriptors: schemas registered as serialized
// FileDescriptorProtos (the schema and its reference) compile as their
// .proto source does.
func TestRegisteredDescriptors(t *testing.T) {
	pb := schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF
	commonText := &schemav1.Schema{Id: 1, Type: pb, Text: `syntax = "proto3"; package c; message Money { int64 units = 1; }`}
	common, err := Registered(context.Background(), commonText, nil)
	if err != nil {
		t.Fatal(err)
	}
	refs := []*schemav1.SchemaReference{{Name: "c/money.proto", Subject: "money", Version: 1}}
	topText := &schemav1.Schema{Id: 2, Type: pb, References: refs, Text: `syntax = "proto3"; package t; import "c/money.proto";
import "google/protobuf/timestamp.proto"; message Order { c.Money price = 1; google.protobuf.Timestamp at = 2; }`}
	// The text form resolves the import by the reference's name; so must
	// the descriptor form, whose own name for it is replaced.
	top, err := Registered(context.Background(), topText, []*schemav1.Schema{commonText})
	if err != nil {
		t.Fatal(err)
	}
	asDescriptor := &schemav1.Schema{Id: 3, Type: pb, References: refs, Text: serialized(t, top)}
	fd, err := Registered(context.Background(), asDescriptor, []*schemav1.Schema{{Id: 1, Type: pb, Text: serialized(t, common)}})
	if err != nil {
		t.Fatal(err)
	}
	order := fd.Messages().ByName("Order")
	if order == nil || order.Fields().ByName("price").Message().FullName() != "c.Money" ||
		order.Fields().ByName("at").Message().FullName() != "google.protobuf.Timestamp" {
		t.Fatalf("compiled %v", fd)
	}
	// A descriptor built by hand (no protoc) may leave json_name out; the
	// runtime derives it, as protoc would have written it.
	bare := protodesc.ToFileDescriptorProto(fd)
	for _, m := range bare.MessageType {
		for _, f := range m.Field {
			f.JsonName = nil
		}
	}
	b, err := proto.Marshal(bare)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Registered(context.Background(), &schemav1.Schema{Id: 4, Type: pb, References: refs, Text: base64.StdEncoding.EncodeToString(b)},
		[]*schemav1.Schema{{Id: 1, Type: pb, Text: serialized(t, common)}}); err != nil {
		t.Fatalf("descriptor without json_name: %v", err)
	}
	for _, text := range []string{"", `syntax = "proto3";`, "AAAA AAAA", "not base64!"} {
		if descriptor(text, RootName) != nil {
			t.Errorf("%q taken for a descriptor", text)
		}
	}
}

// TestCompileSpelledOutMapEntry: a map whose entry message is spelled out, as Confluent's Java
// Protobuf serializer 5.5 prints a message's schema for registration, compiles to a map field;
// protoc's other checks still apply to such a file, and a message marked as a map entry that is
// not one is refused.
func TestCompileSpelledOutMapEntry(t *testing.T) {
	// What KafkaProtobufSerializer 5.5.3 registered for `map<string, int32> attrs = 4;` (its layout).
	text := "syntax = \"proto3\";\npackage shop;\n\nmessage orders {\n  int64 id = 1;\n  repeated attrsEntry attrs = 4;\n\n" +
		"  message attrsEntry {\n    option map_entry = true;\n  \n    string key = 1;\n    int32 value = 2;\n  }\n}\n"
	fd, _, err := Compile(context.Background(), text, nil)
	if err != nil {
		t.Fatal(err)
	}
	attrs := fd.Messages().Get(0).Fields().ByName("attrs")
	if !attrs.IsMap() || attrs.MapKey().Kind() != protoreflect.StringKind || attrs.MapValue().Kind() != protoreflect.Int32Kind {
		t.Fatalf("attrs compiled as %v, want map<string, int32>", attrs)
	}
	// The same schema written with map<>, imported by another, compiles the same way.
	importer := `syntax = "proto3"; package t; import "shop/orders.proto"; message Line { shop.orders order = 1; }`
	if _, _, err := Compile(context.Background(), importer, map[string]string{"shop/orders.proto": text}); err != nil {
		t.Fatalf("import of a spelled-out map entry: %v", err)
	}
	for name, c := range map[string]struct{ text, want string }{
		// Another fault protoc reports in the same file is still reported.
		"extension range in proto3": {strings.Replace(text, "int64 id = 1;", "int64 id = 1;\n  extensions 100 to 200;", 1), "extension ranges are not allowed"},
		// A map_entry message that is not an entry (three fields) is not a map.
		"not an entry": {strings.Replace(text, "int32 value = 2;", "int32 value = 2;\n    int32 extra = 3;", 1), "two fields"},
		// map_entry where no map can be: the top-level message.
		"top-level entry": {"syntax = \"proto3\";\nmessage E {\n  option map_entry = true;\n  string key = 1;\n  string value = 2;\n}\n", "must be nested"},
		// A float key is no map key.
		"float key": {strings.Replace(text, "string key = 1;", "float key = 1;", 1), "map key cannot be"},
	} {
		if _, _, err := Compile(context.Background(), c.text, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
	}
}

// Every column type a schema is derived for gets a field type the rule
// table says fits it, importing the file that defines it.
func TestDerivedTypesFit(t *testing.T) {
	for r := types.Boolean; r <= types.Row; r++ {
		name, imp, ok := Derived(r)
		if !ok {
			if r != types.Array && r != types.Map && r != types.Row {
				t.Errorf("%s has no derived type", r)
			}
			continue
		}
		src := `syntax = "proto3"; message M { ` + name + ` f = 1; }`
		if imp != "" {
			src = `syntax = "proto3"; import "` + imp + `"; message M { ` + name + ` f = 1; }`
		}
		fd, _, err := Compile(context.Background(), src, nil)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		v, wrapped := ValueTypeOf(fd.Messages().Get(0).Fields().Get(0))
		if fit := FitOf(v, r); fit == NoFit || wrapped {
			t.Errorf("%s derives %s (%s), which does not fit it", r, name, v)
		}
	}
}

// The built-in imports compile without references, with the fields the
// Confluent and Google definitions document; a file registered under a
// built-in path must have them.
func TestBuiltinImports(t *testing.T) {
	src := `syntax = "proto3"; import "confluent/type/decimal.proto"; import "google/type/date.proto"; import "google/type/timeofday.proto";
message M { confluent.type.Decimal d = 1; google.type.Date day = 2; google.type.TimeOfDay t = 3; }`
	fd, _, err := Compile(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"d": "value:1:bytes precision:2:uint32 scale:3:int32", "day": "year:1:int32 month:2:int32 day:3:int32",
		"t": "hours:1:int32 minutes:2:int32 seconds:3:int32 nanos:4:int32"}
	fs := fd.Messages().Get(0).Fields()
	for i := range fs.Len() {
		var got []string
		m := fs.Get(i).Message()
		for j := range m.Fields().Len() {
			f := m.Fields().Get(j)
			got = append(got, fmt.Sprintf("%s:%d:%s", f.Name(), f.Number(), f.Kind()))
		}
		if g := strings.Join(got, " "); g != want[string(fs.Get(i).Name())] {
			t.Errorf("%s: %s", m.FullName(), g)
		}
		if v, _ := ValueTypeOf(fs.Get(i)); v != []ValueType{Decimal, Date, TimeOfDay}[i] {
			t.Errorf("%s is value type %s", m.FullName(), v)
		}
	}
	for _, tc := range []struct{ path, text, want string }{
		{DateImport, `syntax = "proto3"; package google.type; option java_package = "com.google.type"; message Date { int32 year = 1; int32 month = 2; int32 day = 3; }`, ""},
		{DateImport, `syntax = "proto3"; package google.type; message Date { int32 year = 1; int32 month = 2; }`, "message google.type.Date has 2 fields, want 3"},
		{DateImport, `syntax = "proto3"; package google.type; message Date { int32 year = 1; int32 month = 2; int32 day = 3; int32 era = 4; }`, "message google.type.Date has 4 fields, want 3"},
		{DateImport, `syntax = "proto3"; package google.type; message Date { int32 year = 1; int32 month = 2; repeated int32 day = 3; }`, "field google.type.Date.day: repeated int32 day = 3, want optional int32 day = 3"},
		{DateImport, `syntax = "proto3"; package google.type; message Date { int32 year = 1; int32 month = 2; int32 day = 3; } message Extra {}`, "2 messages where the built-in file has 1"},
		{DecimalImport, `syntax = "proto3"; package confluent.type; message Decimal { string value = 1; uint32 precision = 2; int32 scale = 3; }`, "field confluent.type.Decimal.value: optional string value = 1, want optional bytes value = 1"},
		{TimeOfDayImport, `syntax = "proto3"; package google.type; message Time { int32 hours = 1; }`, "no message google.type.TimeOfDay"},
		{TimeOfDayImport, `syntax = "proto3"; package other; message TimeOfDay { int32 hours = 1; int32 minutes = 2; int32 seconds = 3; int32 nanos = 4; }`, "package other is not google/type/timeofday.proto's google.type"},
		// The well-known files are built-in imports too, checked the same way.
		{"google/protobuf/timestamp.proto", `syntax = "proto3"; package google.protobuf; option java_package = "com.google.protobuf"; message Timestamp { int64 seconds = 1; int32 nanos = 2; }`, ""},
		{"google/protobuf/timestamp.proto", `syntax = "proto3"; package google.protobuf; message Timestamp { int64 seconds = 1; int64 nanos = 2; }`, "field google.protobuf.Timestamp.nanos: optional int64 nanos = 2, want optional int32 nanos = 2"},
		{"other.proto", `syntax = "proto3"; message X {}`, ""},
	} {
		fd, _, err := Compile(context.Background(), tc.text, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckBuiltinFile(tc.path, fd)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
	// BuiltinFile is what Compile links an import without a reference to.
	for _, path := range []string{DecimalImport, DateImport, TimeOfDayImport, "google/protobuf/timestamp.proto", "google/protobuf/struct.proto"} {
		if f := BuiltinFile(path); f == nil || f.Path() != path {
			t.Errorf("BuiltinFile(%s) = %v", path, f)
		}
	}
	for _, path := range []string{"google/protobuf/nope.proto", "google/type/money.proto", "shop/item.proto", RootName} {
		if f := BuiltinFile(path); f != nil {
			t.Errorf("BuiltinFile(%s) = %s, want nil", path, f.Path())
		}
	}
	if imp := fd.Imports(); imp.Len() != 3 || imp.Get(1).FileDescriptor != BuiltinFile(DateImport) {
		t.Errorf("the schema's date.proto import is not BuiltinFile's")
	}
}
