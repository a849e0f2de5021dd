package registry

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ferrygw/ferry/schemasvc/internal/protomap"
	"github.com/ferrygw/ferry/schemasvc/internal/store"
	"github.com/ferrygw/ferry/schemasvc/internal/store/storetest"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
)

const itemsV1 = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";

message Item {
  int64 id = 1;
  optional string item = 2;
  google.protobuf.Timestamp at = 3;
}
`

// A Protobuf schema that fits the table registers; the same schema sent
// as a base64 descriptor (as confluent-kafka-python does) or reformatted
// is the same version; it is served as .proto source and, asked for
// "serialized", as the descriptor.
func TestProtobufRegistration(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t, &storetest.MemLog{}, protoCatalog())
	id, v, err := r.Register(ctx, "items-value", Input{Type: TypeProtobuf, Text: itemsV1})
	if err != nil || v != 1 {
		t.Fatalf("register: id %d v%d %v", id, v, err)
	}
	s, err := r.SchemaByID(ctx, id)
	if err != nil || s.Type != TypeProtobuf || s.Text != itemsV1 {
		t.Fatalf("schema %d: %+v %v", id, s, err)
	}
	ser, err := r.Formatted(ctx, s, FormatSerialized)
	if err != nil || strings.Contains(ser, "message") {
		t.Fatalf("serialized: %q %v", ser, err)
	}
	again, v, err := r.Register(ctx, "items-value", Input{Type: TypeProtobuf, Text: ser})
	if err != nil || again != id || v != 1 {
		t.Errorf("as a descriptor: id %d v%d %v, want %d v1", again, v, err, id)
	}
	squeezed := strings.Join(strings.Fields(itemsV1), " ")
	found, err := r.Lookup(ctx, "items-value", Input{Type: TypeProtobuf, Text: squeezed}, false)
	if err != nil || found.Schema.ID != id {
		t.Errorf("lookup of the reformatted schema: %+v %v", found, err)
	}
	if text, _ := r.Formatted(ctx, s, ""); text != itemsV1 {
		t.Errorf("unformatted: %q", text)
	}
	// A registered descriptor is stored as source, which transcodesvc and
	// Java deserializers compile.
	other := newRegistry(t, &storetest.MemLog{}, protoCatalog())
	did, _, err := other.Register(ctx, "items-value", Input{Type: TypeProtobuf, Text: ser})
	if err != nil || did != id {
		t.Fatalf("descriptor first: id %d %v, want %d", did, err, id)
	}
	ds, _ := other.SchemaByID(ctx, did)
	if !strings.Contains(ds.Text, "message Item {") {
		t.Errorf("stored descriptor text:\n%s", ds.Text)
	}
}

// Protobuf versions of a subject are compared at its level: BACKWARD
// refuses a field number whose type changed; NONE lets it through.
func TestProtobufCompatibility(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t, &storetest.MemLog{}, protoCatalog())
	if _, _, err := r.Register(ctx, "items-value", Input{Type: TypeProtobuf, Text: itemsV1}); err != nil {
		t.Fatal(err)
	}
	added := strings.Replace(itemsV1, "google.protobuf.Timestamp at = 3;", "google.protobuf.Timestamp at = 3;\n  optional string extra = 4;", 1)
	// The table refuses unknown fields, so the next version moves a
	// column's field to a new number instead (compatible: the old
	// number is unknown to it, the new one absent from old data).
	renumbered := `syntax = "proto3"; package shop; message Item { int64 id = 1; optional string item = 4; }`
	if _, _, err := r.Register(ctx, "items-value", Input{Type: TypeProtobuf, Text: added}); AsError(err).Code != CodeIncompatible || !strings.Contains(err.Error(), "field extra") {
		t.Errorf("unknown field: %v", err)
	}
	if _, v, err := r.Register(ctx, "items-value", Input{Type: TypeProtobuf, Text: renumbered}); err != nil || v != 2 {
		t.Fatalf("renumbered field: v%d %v", v, err)
	}
	changed := `syntax = "proto3"; package shop; message Item { optional string item = 1; int64 id = 4; }`
	_, _, err := r.Register(ctx, "items-value", Input{Type: TypeProtobuf, Text: changed})
	if e := AsError(err); e.Code != CodeIncompatible || !strings.Contains(e.Message, "field Item.item (number 1) is string, was int64") || !strings.Contains(e.Message, "BACKWARD") {
		t.Fatalf("BACKWARD: %v", err)
	}
	// FORWARD: the old version must read the new one's data; so must
	// FULL_TRANSITIVE for every version.
	if err := r.SetConfig(ctx, "items-value", "FULL_TRANSITIVE"); err != nil {
		t.Fatal(err)
	}
	if ok, msgs, err := r.Compatible(ctx, "items-value", 1, Input{Type: TypeProtobuf, Text: changed}); err != nil || ok || len(msgs) != 1 {
		t.Errorf("Compatible with v1 = %v %v %v", ok, msgs, err)
	}
	if err := r.SetConfig(ctx, "items-value", "NONE"); err != nil {
		t.Fatal(err)
	}
	if _, v, err := r.Register(ctx, "items-value", Input{Type: TypeProtobuf, Text: changed}); err != nil || v != 3 {
		t.Errorf("NONE: v%d %v", v, err)
	}
}

// A protobuf table's value subject nobody registered is derived in
// Protobuf, the same text and id on every registry; GetTopicSchema derives
// Protobuf when asked, and says why a table has no Protobuf schema.
func TestProtobufDerived(t *testing.T) {
	ctx := context.Background()
	v, err := newRegistry(t, &storetest.MemLog{}, protoCatalog()).Version(ctx, "items-value", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `syntax = "proto3";
package shop;

import "google/protobuf/timestamp.proto";

message items {
  int64 id = 1;
  optional string item = 2;
  google.protobuf.Timestamp at = 3;
}
`
	if v.Schema.Type != TypeProtobuf || v.Schema.Text != want {
		t.Errorf("derived %s:\n%s\nwant\n%s", v.Schema.Type, v.Schema.Text, want)
	}
	ps, err := protomap.Parse(want, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Schema.ID != candidateID(store.SchemaKey(TypeProtobuf, ps.Canonical(), "")) {
		t.Errorf("derived id %d is not the schema's hash", v.Schema.ID)
	}
	srv := NewServer(newRegistry(t, &storetest.MemLog{}, protoCatalog()))
	ts, err := srv.GetTopicSchema(ctx, &schemav1.GetTopicSchemaRequest{Topic: "items", Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF})
	if err != nil || ts.GetSchema().GetId() != v.Schema.ID || ts.GetSchema().GetType() != schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF {
		t.Errorf("GetTopicSchema: %v %v, want id %d", ts, err, v.Schema.ID)
	}
	// The key of a table without key column is not stored: nothing to
	// derive.
	if _, err := srv.GetTopicSchema(ctx, &schemav1.GetTopicSchemaRequest{Topic: "items", Key: true}); status.Code(err) != codes.NotFound {
		t.Errorf("key: %v", err)
	}
	// DECIMAL is a confluent.type.Decimal, imported without a reference.
	ts, err = NewServer(newRegistry(t, &storetest.MemLog{}, ordersCatalog())).GetTopicSchema(ctx,
		&schemav1.GetTopicSchemaRequest{Topic: "orders", Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF})
	if err != nil || !strings.Contains(ts.GetSchema().GetText(), "confluent.type.Decimal price = ") || len(ts.GetSchema().GetReferences()) != 0 {
		t.Errorf("orders in Protobuf: %v %v", ts, err)
	}
}

// A Protobuf schema imports files registered under other subjects, by
// reference, transitively; GetSchema hands them along.
func TestProtobufReferences(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t, &storetest.MemLog{}, protoCatalog())
	// The table stores no key: any schema goes under items-key.
	kinds := `syntax = "proto3"; package kinds; enum Kind { TEA = 0; COFFEE = 1; }`
	wrap := `syntax = "proto3"; package kinds; import "kinds.proto"; message Wrapped { kinds.Kind kind = 1; }`
	if _, _, err := r.Register(ctx, "items-key", Input{Type: TypeProtobuf, Text: kinds}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Register(ctx, "items-key", Input{Type: TypeProtobuf, Text: wrap, References: []Reference{{Name: "kinds.proto", Subject: "items-key", Version: 1}}}); err != nil {
		t.Fatal(err)
	}
	item := `syntax = "proto3"; import "wrap.proto"; import "kinds.proto"; message Item { int64 id = 1; kinds.Kind item = 2; }`
	if _, _, err := r.Register(ctx, "items-value", Input{Type: TypeProtobuf, Text: item}); AsError(err).Code != CodeInvalidSchema || !strings.Contains(err.Error(), `"wrap.proto"`) {
		t.Errorf("without references: %v", err)
	}
	// wrap.proto's own reference brings kinds.proto along.
	refs := []Reference{{Name: "wrap.proto", Subject: "items-key", Version: 2}}
	id, _, err := r.Register(ctx, "items-value", Input{Type: TypeProtobuf, Text: item, References: refs})
	if err != nil {
		t.Fatal(err)
	}
	res, err := NewServer(r).GetSchema(ctx, &schemav1.GetSchemaRequest{Id: id})
	if err != nil || len(res.GetReferenced()) != 2 || res.GetReferenced()[0].GetText() != kinds {
		t.Errorf("GetSchema(%d) = %v %v", id, res, err)
	}
	s, _ := r.SchemaByID(ctx, id)
	if ser, err := r.Formatted(ctx, s, FormatSerialized); err != nil || ser == "" {
		t.Errorf("serialized with references: %q %v", ser, err)
	}
}

// What Confluent's Java Protobuf serializer 5.5.3 registers for google/protobuf/timestamp.proto
// (printed from protobuf-java's descriptor: its options and layout).
const timestampAsJava = `syntax = "proto3";
package google.protobuf;

option cc_enable_arenas = true;
option go_package = "google.golang.org/protobuf/types/known/timestamppb";
option java_package = "com.google.protobuf";
option java_outer_classname = "TimestampProto";
option java_multiple_files = true;
option objc_class_prefix = "GPB";
option csharp_namespace = "Google.Protobuf.WellKnownTypes";

message Timestamp {
  int64 seconds = 1;
  int32 nanos = 2;
}
`

// A subject named after a built-in Protobuf import (a well-known google/protobuf file, or one of
// the value messages confluent/type/decimal.proto, google/type/date.proto,
// google/type/timeofday.proto) holds that file: it takes a copy of it, with its options and in
// another layout (as Confluent's Java serializer 5.5, and confluent-kafka-python with
// skip.known.types off, register each import before the schema that imports it), and a schema
// referencing it registers; anything else under that name is refused, naming what differs, and a
// subject that names neither a table nor a built-in import still is. The latest version of such a
// subject nobody registered is Ferry's own copy, so a deserializer that looks it up gets it.
func TestProtobufBuiltinImportSubjects(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t, &storetest.MemLog{}, protoCatalog())
	const ts = "google/protobuf/timestamp.proto"
	id, v, err := r.Register(ctx, ts, Input{Type: TypeProtobuf, Text: timestampAsJava})
	if err != nil || v != 1 {
		t.Fatalf("register %s: id %d v%d %v", ts, id, v, err)
	}
	if found, err := r.Lookup(ctx, ts, Input{Type: TypeProtobuf, Text: timestampAsJava}, false); err != nil || found.Version != 1 || found.Schema.ID != id {
		t.Errorf("lookup: %+v %v", found, err)
	}
	withRef := Input{Type: TypeProtobuf, Text: itemsV1, References: []Reference{{Name: ts, Subject: ts, Version: 1}}}
	if _, _, err := r.Register(ctx, "items-value", withRef); err != nil {
		t.Fatalf("schema referencing %s: %v", ts, err)
	}

	// Nobody registered these: their latest version is Ferry's own copy.
	for path, decl := range map[string]string{
		"google/protobuf/wrappers.proto": "message Int32Value {",
		"google/type/timeofday.proto":    "message TimeOfDay {",
		"confluent/type/decimal.proto":   "message Decimal {",
	} {
		w, err := r.Version(ctx, path, 0, false)
		if err != nil || w.Version != 1 || !strings.Contains(w.Schema.Text, decl) || w.Schema.Type != TypeProtobuf {
			t.Fatalf("%s latest: %+v %v", path, w, err)
		}
		// It is a copy the subject takes.
		if _, _, err := r.Register(ctx, path, Input{Type: TypeProtobuf, Text: w.Schema.Text}); err != nil {
			t.Errorf("%s: Ferry's own copy registered: %v", path, err)
		}
	}
	// google.protobuf.Struct's map spelled out, as 5.5.3 prints it.
	structAsJava := `syntax = "proto3";
package google.protobuf;

message Struct {
  repeated fieldsEntry fields = 1;

  message fieldsEntry {
    option map_entry = true;
    string key = 1;
    Value value = 2;
  }
}
message Value {
  oneof kind {
    NullValue null_value = 1;
    double number_value = 2;
    string string_value = 3;
    bool bool_value = 4;
    Struct struct_value = 5;
    ListValue list_value = 6;
  }
}
message ListValue {
  repeated Value values = 1;
}
enum NullValue {
  NULL_VALUE = 0;
}
`
	if _, _, err := r.Register(ctx, "google/protobuf/struct.proto", Input{Type: TypeProtobuf, Text: structAsJava}); err != nil {
		t.Errorf("struct.proto as 5.5.3 prints it: %v", err)
	}

	// What confluent-kafka-python registers for google/type/date.proto (googleapis' options).
	date := `syntax = "proto3";
package google.type;
option go_package = "google.golang.org/genproto/googleapis/type/date;date";
option java_multiple_files = true;
message Date { int32 year = 1; int32 month = 2; int32 day = 3; }
`
	if _, v, err := r.Register(ctx, "google/type/date.proto", Input{Type: TypeProtobuf, Text: date}); err != nil || v != 1 {
		t.Fatalf("register date.proto: v%d %v", v, err)
	}

	for name, c := range map[string]struct {
		subject string
		in      Input
		code    int
		want    string
	}{
		"field missing": {ts, Input{Type: TypeProtobuf, Text: strings.Replace(timestampAsJava, "int32 nanos = 2;", "", 1)}, CodeIncompatible, "message google.protobuf.Timestamp has 1 fields, want 2"},
		"field retyped": {ts, Input{Type: TypeProtobuf, Text: strings.Replace(timestampAsJava, "int32 nanos", "int64 nanos", 1)}, CodeIncompatible, "field google.protobuf.Timestamp.nanos: optional int64 nanos = 2, want optional int32 nanos = 2"},
		"other package": {ts, Input{Type: TypeProtobuf, Text: strings.Replace(timestampAsJava, "package google.protobuf;", "package shop;", 1)}, CodeIncompatible, "package shop is not google/protobuf/timestamp.proto's google.protobuf"},
		"not Protobuf":  {ts, Input{Text: `{"type":"record","name":"Timestamp","fields":[{"name":"seconds","type":"long"}]}`}, CodeIncompatible, "not a AVRO schema"},
		"date retyped": {"google/type/date.proto", Input{Type: TypeProtobuf, Text: `syntax = "proto3"; package google.type; message Date { int32 year = 1; int64 month = 2; int32 day = 3; }`}, CodeIncompatible,
			"subject google/type/date.proto: it is not the built-in Protobuf import of that name: field google.type.Date.month: optional int64 month = 2, want optional int32 month = 2"},
		"time of day elsewhere": {"google/type/timeofday.proto", Input{Type: TypeProtobuf, Text: `syntax = "proto3"; package other; message TimeOfDay { int32 hours = 1; }`}, CodeIncompatible, "package other is not google/type/timeofday.proto's google.type"},
		"decimal as Avro":       {"confluent/type/decimal.proto", Input{Type: TypeAvro, Text: `{"type": "string"}`}, CodeIncompatible, "not a AVRO schema"},
		"unknown file":          {"google/protobuf/nope.proto", Input{Type: TypeProtobuf, Text: timestampAsJava}, CodeInvalidSchema, "TopicNameStrategy"},
		"other google/type":     {"google/type/money.proto", Input{Type: TypeProtobuf, Text: `syntax = "proto3"; package google.type; message Money { int64 units = 1; }`}, CodeInvalidSchema, "TopicNameStrategy"},
		"other import":          {"shop/money.proto", Input{Type: TypeProtobuf, Text: `syntax = "proto3"; package shop; message Money { int64 units = 1; }`}, CodeInvalidSchema, "TopicNameStrategy"},
	} {
		if _, _, err := r.Register(ctx, c.subject, c.in); err == nil || AsError(err).Code != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: registered under %s: %v, want error code %d saying %q", name, c.subject, err, c.code, c.want)
		}
	}
	// A subject that names nothing is not found, as before.
	if _, err := r.Version(ctx, "google/type/money.proto", 0, false); AsError(err).Code != CodeSubjectNotFound {
		t.Errorf("latest of google/type/money.proto: %v, want subject not found", err)
	}

	item := `syntax = "proto3"; package shop; import "google/type/date.proto";
message Item { int64 id = 1; optional string item = 2; google.type.Date at = 3; }`
	// A DATE column would take it; this table's "at" is a TIMESTAMP_LTZ.
	_, _, err = r.Register(ctx, "items-value", Input{Type: TypeProtobuf, Text: item, References: []Reference{{Name: "google/type/date.proto", Subject: "google/type/date.proto", Version: 1}}})
	if err == nil || !strings.Contains(err.Error(), "field at: Protobuf google.type.Date does not fit column type TIMESTAMP_LTZ(3)") {
		t.Errorf("date into a timestamp column: %v", err)
	}
}
