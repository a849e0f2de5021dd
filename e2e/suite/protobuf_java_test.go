package suite

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestProtobufProduceConsumeJava: Confluent's JVM KafkaProtobufSerializer 5.5.3
// (e2e/clients/javaprotobuf) serializes DynamicMessages with Ferry's registry over REST, their
// bytes go through Ferry in a kafka-clients 4.4 producer into a protobuf table, the Fluss Java
// reader reads the typed values, and the KafkaProtobufDeserializer decodes the records Ferry
// serves into the messages sent. Once with auto.register.schemas (the application's .proto, with
// an enum, a nested message, a map and a repeated field: 5.5.3 registers it printed from the
// message's descriptor, the map's entry message spelled out), once with
// auto.register.schemas=false and use.latest.version on a table nobody registered a schema for
// (the messages are of the schema the registry derives from the table), and once for rows the
// Fluss Java writer wrote. 5.5.3 reads proto3 `optional` as a field without presence, so the
// derived schema's NULL-able fields are not written when they hold their default: they land as
// NULL.
func TestProtobufProduceConsumeJava(t *testing.T) {
	e, f := need(t)
	root := e.stack.Config().Root
	run := filepath.Join(root, "e2e", "clients", "javaprotobuf", "run")
	if _, err := os.Stat(filepath.Join(root, ".cache", "clients", "javaprotobuf", "lib")); err != nil {
		t.Fatalf("Confluent's JVM Protobuf serdes are not installed (tools/install-clients.sh): %v", err)
	}
	db := dbName(t, f, "protobuf_java")
	cols := []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}, {Name: "qty", Type: "INT"},
		{Name: "price", Type: "DOUBLE"}, {Name: "blob", Type: "BYTES"}, {Name: "tags", Type: "ARRAY<STRING>"},
		{Name: "status", Type: "STRING"}, {Name: "attrs", Type: "MAP<STRING, INT>"},
		{Name: "addr", Type: "ROW<city STRING, zip INT>"}, {Name: "flag", Type: "BOOLEAN"},
	}
	// The application's schema in auto mode. Its enum fills the STRING column with the value's name.
	const orderProto = `syntax = "proto3";
package ferry.e2e;

enum Status {
  UNKNOWN = 0;
  NEW = 1;
  PAID = 2;
}

message Order {
  int64 id = 1;
  string name = 2;
  int32 qty = 3;
  double price = 4;
  bytes blob = 5;
  repeated string tags = 6;
  Status status = 7;
  map<string, int32> attrs = 8;
  Address addr = 9;
  bool flag = 10;

  message Address {
    string city = 1;
    int32 zip = 2;
  }
}
`
	// The messages sent, in the Protobuf JSON mapping: everything set; only the id; values that
	// are their type's default, and an empty message.
	records := []map[string]any{
		{"id": "1", "name": "kettle ✓", "qty": 3, "price": 24.9, "blob": "AAH/", "tags": []any{"a", "b"}, "status": "PAID",
			"attrs": map[string]any{"x": 1}, "addr": map[string]any{"city": "Ghent", "zip": 9000}, "flag": true},
		{"id": "2"},
		{"id": "3", "name": "", "qty": -7, "price": -0.125, "blob": "", "tags": []any{}, "status": "NEW", "attrs": map[string]any{},
			"addr": map[string]any{}, "flag": false},
	}
	// What the deserializer gives back, printed by JsonFormat (defaults left out), in every mode.
	back := []map[string]any{
		records[0],
		{"id": "2"},
		{"id": "3", "qty": -7, "price": -0.125, "status": "NEW", "addr": map[string]any{}},
	}
	// What the Java reader prints for each record's row in auto mode: the application's scalars
	// have no presence, so what the message leaves out is the default value; the message field
	// has presence (NULL when absent).
	autoRows := []map[string]any{
		{"id": 1, "name": "kettle ✓", "qty": 3, "price": 24.9, "blob": "AAH/", "tags": []any{"a", "b"}, "status": "PAID",
			"attrs": []any{[]any{"x", 1}}, "addr": map[string]any{"city": "Ghent", "zip": 9000}, "flag": true},
		{"id": 2, "name": "", "qty": 0, "price": json.Number("0.0"), "blob": "", "tags": []any{}, "status": "UNKNOWN", "attrs": []any{},
			"addr": nil, "flag": false},
		{"id": 3, "name": "", "qty": -7, "price": -0.125, "blob": "", "tags": []any{}, "status": "NEW", "attrs": []any{},
			"addr": map[string]any{"city": "", "zip": 0}, "flag": false},
	}
	// In latest mode the derived schema gives every nullable column presence, which 5.5.3 does
	// not see: a default value is not written, and lands as NULL. The consume mode's rows are
	// these too.
	derived := []map[string]any{
		autoRows[0],
		{"id": 2, "name": nil, "qty": nil, "price": nil, "blob": nil, "tags": []any{}, "status": nil, "attrs": []any{},
			"addr": nil, "flag": nil},
		{"id": 3, "name": nil, "qty": -7, "price": -0.125, "blob": nil, "tags": []any{}, "status": "NEW", "attrs": []any{},
			"addr": map[string]any{"city": nil, "zip": nil}, "flag": nil},
	}
	input, err := json.Marshal(records)
	if err != nil {
		t.Fatal(err)
	}
	registry := e.stack.Config().RegistryURL()
	for _, mode := range []string{"auto", "latest", "consume"} {
		t.Run(mode, func(t *testing.T) {
			table := "orders_" + mode
			topic := topicTable(t, f, db, table, 1, cols, map[string]string{"kafka.value.format": "protobuf"})
			subject := topic + "-value"
			args := []string{e.kafka, registry, topic, mode}
			rows := derived
			switch mode {
			case "auto":
				args, rows = append(args, orderProto), autoRows
			case "consume":
				f.Write(t, db, table, rows)
			}
			got, out, stderr := javaProtobufRoundTrip(t, run, args, input)
			if mode != "consume" && len(got.Produced) != len(records) {
				t.Fatalf("produced %d records, want %d: %s\n%s", len(got.Produced), len(records), out, stderr)
			}
			for i, p := range got.Produced {
				if p.Error != "" || p.Offset == nil || *p.Offset != int64(i) {
					t.Fatalf("record %d: produced %+v, want offset %d\n%s\n%s", i, p, i, out, stderr)
				}
			}

			// The subject has one version: the serializer's schema (auto), or the one derived from
			// the table, which the serializer did not replace (latest) and Ferry frames rows with
			// (consume).
			var versions []int
			getJSON(t, registry+"/subjects/"+subject+"/versions", 200, &versions)
			var latest struct {
				ID         int32
				SchemaType string
				Schema     string
			}
			getJSON(t, registry+"/subjects/"+subject+"/versions/latest", 200, &latest)
			if len(versions) != 1 || latest.SchemaType != "PROTOBUF" {
				t.Errorf("subject %s has versions %v, the latest of type %s, want one PROTOBUF version", subject, versions, latest.SchemaType)
			}
			wantMessage := "message " + table + " {"
			if mode == "auto" {
				// As 5.5.3 printed it from the message's descriptor: the map's entry spelled out.
				wantMessage = "message attrsEntry {"
			}
			if !strings.Contains(latest.Schema, wantMessage) {
				t.Errorf("latest version of %s is\n%s\nwant it to have %q", subject, latest.Schema, wantMessage)
			}
			// The serializer framed each message with that version's id and message indexes [0]
			// as the single 0 byte.
			for i, p := range got.Produced {
				if p.ID != latest.ID || !isFirstMessage(p.Indexes, p.IndexBytes) {
					t.Errorf("record %d: framed with id %d, indexes %v in %d bytes; want id %d, indexes [0] in one byte", i, p.ID, p.Indexes, p.IndexBytes, latest.ID)
				}
			}

			// The Fluss Java reader sees the typed values.
			expectStoredRows(t, f, db, table, len(records), rows, "attrs")

			// The deserializer decodes what Ferry serves, framed with the latest version's id and
			// [0], into the messages sent.
			if len(got.Consumed) != len(records) {
				t.Fatalf("consumed %d records, want %d: %s\n%s", len(got.Consumed), len(records), out, stderr)
			}
			wantType := "ferry.e2e.Order"
			if mode != "auto" {
				wantType = db + "." + table
			}
			for i, c := range got.Consumed {
				if c.Error != "" || c.Offset != int64(i) || c.Magic != 0 || c.ID != latest.ID || !isFirstMessage(c.Indexes, c.IndexBytes) || c.Type != wantType {
					t.Errorf("consumed %d: %+v, want offset %d, id %d, indexes [0] in one byte, a %s", i, c, i, latest.ID, wantType)
				}
				if g, w := canonical(t, c.Value), canonical(t, back[i]); g != w {
					t.Errorf("consumed %d:\n got %s\nwant %s", i, g, w)
				}
			}
			// What frontdoor serves is framed as the deserializer saw it.
			for i, v := range rawValues(t, e.kafka, topic, len(records)) {
				if len(v) < 6 || v[0] != 0 || int32(binary.BigEndian.Uint32(v[1:5])) != latest.ID || v[5] != 0 {
					t.Errorf("record %d is framed % x..., want 00, id %d, 00", i, v[:min(len(v), 6)], latest.ID)
				}
			}
		})
	}
}

// TestProtobufJavaWellKnownImports: Confluent's JVM KafkaProtobufSerializer 5.5.3 registers each
// file a schema imports under a subject named after it before the schema itself, references to
// them included, and its deserializer reads them back through those references (it has no copies
// of google/protobuf/*.proto of its own). Ferry takes the well-known files under their names, so
// a schema with a Timestamp and wrappers registers, its records land in Fluss as typed values,
// and they decode into the messages sent.
func TestProtobufJavaWellKnownImports(t *testing.T) {
	e, f := need(t)
	root := e.stack.Config().Root
	run := filepath.Join(root, "e2e", "clients", "javaprotobuf", "run")
	db := dbName(t, f, "protobuf_java_wkt")
	cols := []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "at", Type: "TIMESTAMP_LTZ(3)"}, {Name: "qty", Type: "INT"}, {Name: "note", Type: "STRING"},
	}
	const stampedProto = `syntax = "proto3";
package ferry.e2e;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Stamped {
  int64 id = 1;
  google.protobuf.Timestamp at = 2;
  google.protobuf.Int32Value qty = 3;
  google.protobuf.StringValue note = 4;
}
`
	// A wrapper holding its type's default is present: 0 and "" are not NULL.
	records := []map[string]any{
		{"id": "1", "at": "2026-01-02T03:04:05.678Z", "qty": 5, "note": "hi ✓"},
		{"id": "2"},
		{"id": "3", "at": "1969-12-31T23:59:59.999Z", "qty": 0, "note": ""},
	}
	rows := []map[string]any{
		{"id": 1, "at": "2026-01-02T03:04:05.678000000Z", "qty": 5, "note": "hi ✓"},
		{"id": 2, "at": nil, "qty": nil, "note": nil},
		{"id": 3, "at": "1969-12-31T23:59:59.999000000Z", "qty": 0, "note": ""},
	}
	input, err := json.Marshal(records)
	if err != nil {
		t.Fatal(err)
	}
	registry := e.stack.Config().RegistryURL()
	topic := topicTable(t, f, db, "stamped", 1, cols, map[string]string{"kafka.value.format": "protobuf"})
	got, out, stderr := javaProtobufRoundTrip(t, run, []string{e.kafka, registry, topic, "auto", stampedProto}, input)
	if len(got.Produced) != len(records) {
		t.Fatalf("produced %d records, want %d: %s\n%s", len(got.Produced), len(records), out, stderr)
	}
	for i, p := range got.Produced {
		if p.Error != "" || p.Offset == nil || *p.Offset != int64(i) {
			t.Fatalf("record %d: produced %+v, want offset %d\n%s\n%s", i, p, i, out, stderr)
		}
	}

	// The imported files have versions under their own names, and the topic's schema refers to
	// them.
	for _, file := range []string{"google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto"} {
		var versions []int
		getJSON(t, registry+"/subjects/"+url.PathEscape(file)+"/versions", 200, &versions)
		if len(versions) == 0 {
			t.Errorf("subject %s has no versions", file)
		}
	}
	var latest struct {
		ID         int32
		References []struct{ Name, Subject string }
	}
	getJSON(t, registry+"/subjects/"+topic+"-value/versions/latest", 200, &latest)
	refs := map[string]string{}
	for _, r := range latest.References {
		refs[r.Name] = r.Subject
	}
	if len(refs) != 2 || refs["google/protobuf/timestamp.proto"] != "google/protobuf/timestamp.proto" || refs["google/protobuf/wrappers.proto"] != "google/protobuf/wrappers.proto" {
		t.Errorf("the latest version of %s-value refers to %v, want the two files under their names", topic, latest.References)
	}

	expectStoredRows(t, f, db, "stamped", len(records), rows)

	back := []map[string]any{records[0], records[1], records[2]}
	if len(got.Consumed) != len(records) {
		t.Fatalf("consumed %d records, want %d: %s\n%s", len(got.Consumed), len(records), out, stderr)
	}
	for i, c := range got.Consumed {
		if c.Error != "" || c.Offset != int64(i) || c.ID != latest.ID || !isFirstMessage(c.Indexes, c.IndexBytes) || c.Type != "ferry.e2e.Stamped" {
			t.Errorf("consumed %d: %+v, want offset %d, id %d, indexes [0] in one byte, a ferry.e2e.Stamped", i, c, i, latest.ID)
		}
		if g, w := canonical(t, c.Value), canonical(t, back[i]); g != w {
			t.Errorf("consumed %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

func isFirstMessage(indexes []int, n int) bool { return len(indexes) == 1 && indexes[0] == 0 && n == 1 }

// javaProtobufFraming is the framing ProtobufRoundTrip.java read from a value.
type javaProtobufFraming struct {
	Magic      int
	ID         int32
	Indexes    []int
	IndexBytes int `json:"index_bytes"`
}

// javaProtobufRun is what e2e/clients/javaprotobuf's ProtobufRoundTrip prints.
type javaProtobufRun struct {
	Produced []struct {
		Partition *int32
		Offset    *int64
		Error     string
		javaProtobufFraming
	}
	Consumed []struct {
		Offset int64
		Type   string
		Value  map[string]any
		Error  string
		javaProtobufFraming
	}
}

// javaProtobufRoundTrip runs `javaprotobuf/run protobuf-roundtrip args...` with the records on
// stdin and returns what it printed, decoded, with its stdout and stderr.
func javaProtobufRoundTrip(t *testing.T, run string, args []string, input []byte) (javaProtobufRun, []byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, run, append([]string{"protobuf-roundtrip"}, args...)...)
	cmd.Stdin = bytes.NewReader(input)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("javaprotobuf protobuf-roundtrip: %v\n%s", err, stderr.String())
	}
	var got javaProtobufRun
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("output %s: %v\n%s", out, err, stderr.String())
	}
	return got, out, stderr.String()
}
