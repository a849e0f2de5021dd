package suite

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestProtobufProduceConsumePython: confluent-kafka-python's ProtobufSerializer produces through
// Ferry into a protobuf table, the Fluss Java reader reads the typed values, and its
// ProtobufDeserializer consumes the rows back through Ferry into messages equal to those sent.
// There is no protoc here: the script builds its message class at run time from a
// FileDescriptorProto. Once with auto.register.schemas (the producer's schema, with a nested
// message, an enum, a map, a Timestamp, a wrapper and proto3 optionals, registered by the
// serializer), once with use.latest.version on a table nobody registered a schema for (the
// registry derives it from the table; the script builds its class from that schema), and once for
// rows the Fluss Java writer wrote (served in that derived schema).
func TestProtobufProduceConsumePython(t *testing.T) {
	e, f := need(t)
	py := confluentPython(t, e)
	db := dbName(t, f, "protobuf")
	cols := []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}, {Name: "qty", Type: "INT"},
		{Name: "price", Type: "DOUBLE"}, {Name: "at", Type: "TIMESTAMP_LTZ(3)"}, {Name: "blob", Type: "BYTES"},
		{Name: "tags", Type: "ARRAY<STRING>"}, {Name: "status", Type: "STRING"}, {Name: "attrs", Type: "MAP<STRING, INT>"},
		{Name: "addr", Type: "ROW<city STRING, zip INT>"}, {Name: "flag", Type: "BOOLEAN"},
	}
	// The messages sent, in the Protobuf JSON mapping: everything set; only the id; values that
	// are their type's default but present (proto3 optional, a wrapper, an empty message).
	records := []map[string]any{
		{"id": "1", "name": "kettle ✓", "qty": 3, "price": 24.9, "at": "2026-01-02T03:04:05.678Z", "blob": "AAH/",
			"tags": []any{"a", "b"}, "status": "PAID", "attrs": map[string]any{"x": 1}, "addr": map[string]any{"city": "Ghent", "zip": 9000}, "flag": true},
		{"id": "2"},
		{"id": "3", "name": "", "qty": 0, "price": 0, "blob": "", "status": "NEW", "addr": map[string]any{}},
	}
	// What the Java reader prints for each record's row in auto mode. A field with presence that
	// is absent is NULL; a proto3 field without presence is its default (an absent enum is its
	// first value, a repeated field or map an empty one).
	rows := []map[string]any{
		{"id": 1, "name": "kettle ✓", "qty": 3, "price": 24.9, "at": "2026-01-02T03:04:05.678000000Z", "blob": "AAH/",
			"tags": []any{"a", "b"}, "status": "PAID", "attrs": []any{[]any{"x", 1}}, "addr": map[string]any{"city": "Ghent", "zip": 9000}, "flag": true},
		{"id": 2, "name": nil, "qty": nil, "price": nil, "at": nil, "blob": nil, "tags": []any{}, "status": "UNKNOWN", "attrs": []any{},
			"addr": nil, "flag": false},
		{"id": 3, "name": "", "qty": 0, "price": json.Number("0.0"), "at": nil, "blob": "", "tags": []any{}, "status": "NEW", "attrs": []any{},
			"addr": map[string]any{"city": "", "zip": 0}, "flag": false},
	}
	input, err := json.Marshal(records)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"auto", "latest", "consume"} {
		t.Run(mode, func(t *testing.T) {
			table := "orders_" + mode
			topic := topicTable(t, f, db, table, 1, cols, map[string]string{"kafka.value.format": "protobuf"})
			want := rows
			if mode != "auto" {
				want = derivedRows(rows)
			}
			if mode == "consume" {
				f.Write(t, db, table, want)
			}
			args := []string{"-B", filepath.Join(e.stack.Config().Root, "e2e", "clients", "python", "protobuf_roundtrip.py"),
				e.kafka, e.stack.Config().RegistryURL(), topic, mode, string(input)}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, py, args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("protobuf_roundtrip.py: %v\n%s", err, stderr.String())
			}
			var got struct {
				SchemaID int32 `json:"schema_id"`
				Produced []struct {
					Offset *int64
					Error  string
				}
				Consumed []struct {
					Offset  int64
					Magic   int
					ID      int32
					Indexes []int
					Equal   bool
					Value   map[string]any
					Error   string
				}
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output %s: %v", out, err)
			}
			for i, p := range got.Produced {
				if p.Error != "" || p.Offset == nil || *p.Offset != int64(i) {
					t.Fatalf("record %d: produced %+v, want offset %d\n%s", i, p, i, out)
				}
			}

			// The Fluss Java reader sees the typed values.
			expectStoredRows(t, f, db, table, len(records), want)

			// Ferry serves the rows framed with the subject's latest version, message indexes [0],
			// and they decode into the messages sent.
			var latest struct {
				ID         int32
				SchemaType string
			}
			getJSON(t, e.stack.Config().RegistryURL()+"/subjects/"+topic+"-value/versions/latest", 200, &latest)
			if latest.SchemaType != "PROTOBUF" {
				t.Errorf("the subject's latest version is of type %q, want PROTOBUF", latest.SchemaType)
			}
			if mode != "consume" && got.SchemaID != latest.ID {
				t.Errorf("the serializer framed id %d, the subject's latest is %d", got.SchemaID, latest.ID)
			}
			if len(got.Consumed) != len(records) {
				t.Fatalf("consumed %d records, want %d: %s", len(got.Consumed), len(records), out)
			}
			for i, c := range got.Consumed {
				if c.Error != "" || c.Offset != int64(i) || c.Magic != 0 || c.ID != latest.ID || len(c.Indexes) != 1 || c.Indexes[0] != 0 {
					t.Errorf("consumed %d: offset %d magic %d id %d indexes %v error %q, want offset %d, magic 0, id %d, indexes [0]",
						i, c.Offset, c.Magic, c.ID, c.Indexes, c.Error, i, latest.ID)
				}
				if !c.Equal {
					t.Errorf("consumed %d: %s is not the message sent, %s", i, canonical(t, c.Value), canonical(t, records[i]))
				}
			}
		})
	}
}

// derivedRows are rows as a producer using the schema derived from the table writes them, and
// as the Java writer writes them for the consume mode: the derived schema gives every nullable
// column presence, so what the message leaves out is NULL.
func derivedRows(rows []map[string]any) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = map[string]any{}
		for k, v := range r {
			out[i][k] = v
		}
	}
	out[1]["status"], out[1]["flag"] = nil, nil
	out[2]["flag"], out[2]["addr"] = nil, map[string]any{"city": nil, "zip": nil}
	return out
}

// protoOrder is Order{id, name} of protoOrderSchema in the Protobuf wire format (field 1 a varint,
// field 2 length-delimited), framed with schema id and the message-index bytes indexes.
func protoOrder(id int32, indexes []byte, orderID int64, name string) []byte {
	b := append([]byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, indexes...)
	b = binary.AppendUvarint(append(b, 0x08), uint64(orderID))
	b = binary.AppendUvarint(append(b, 0x12), uint64(len(name)))
	return append(b, name...)
}

const protoOrderSchema = `syntax = "proto3"; message Order { int64 id = 1; optional string name = 2; }`

// TestProtobufBadRecordsRefuseTheirBatch: a batch of a protobuf topic with a record framed with
// an unknown schema id, one naming a message the schema does not have, one without the magic
// byte, one cut short and one whose field has the wrong wire type is refused with INVALID_RECORD
// naming each record's reason, and none of it is written; a good batch then lands at offset 0.
func TestProtobufBadRecordsRefuseTheirBatch(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "protobuf_bad")
	topic := topicTable(t, f, db, "orders", 1, []testenv.Column{{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}},
		map[string]string{"kafka.value.format": "protobuf"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rcl, err := sr.NewClient(sr.URLs(e.stack.Config().RegistryURL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rcl.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: protoOrderSchema, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	id := int32(ss.ID)
	good := protoOrder(id, []byte{0}, 1, "fine")
	wrongWireType := append(protoOrder(id, []byte{0}, 5, ""), 0x0d, 1, 2, 3, 4) // field 1 again, as fixed32

	now := time.Now()
	cl := newKgo(t, e.kafka)
	p := produceBatch(t, cl, topic, encodeBatch(now, [][]byte{good, protoOrder(999_999, []byte{0}, 2, "unknown id"),
		protoOrder(id, []byte{2, 4}, 3, "no such message"), []byte(`{"id": 4}`), good[:len(good)-2], wrongWireType}))
	expectRecordErrors(t, p, map[int32]string{1: "unknown schema id 999999", 2: "message index 2 out of range", 3: "missing magic byte",
		4: "truncated payload", 5: "malformed Protobuf"})

	// Nothing of the refused batch was written: the next batch starts the log.
	if p := produceBatch(t, cl, topic, encodeBatch(now, [][]byte{good})); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("good batch: error %v, offset %d; want offset 0", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	rows := f.Scan(t, db, "orders", testenv.ScanOptions{Expect: 1, Timeout: 30 * time.Second})
	if len(rows) != 1 || canonical(t, rows[0].Row) != `{"id":1,"name":"fine"}` {
		t.Fatalf("table holds %+v, want the one good row", rows)
	}
}

// TestProtobufPrimaryKeyTable: framed Protobuf values upsert the rows of a primary-key table
// (keys are the JSON object of the primary key, as for every format) and a tombstone deletes
// one; the Fluss Java lookup sees each key's latest row.
func TestProtobufPrimaryKeyTable(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "protobuf_pk")
	info := f.NewTable(t, testenv.TableSpec{Database: db, Table: "users", BucketCount: 2, PrimaryKey: []string{"id"},
		Columns: []testenv.Column{
			{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
			{Name: "name", Type: "STRING"},
		},
		CustomProperties: map[string]string{"kafka.enabled": "true", "kafka.value.format": "protobuf"}})
	if len(info.PrimaryKey) != 1 {
		t.Fatalf("table info %+v: want primary key id", info)
	}
	topic := db + ".users"
	waitTopic(t, topic, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rcl, err := sr.NewClient(sr.URLs(e.stack.Config().RegistryURL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rcl.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: protoOrderSchema, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	rec := func(id int64, name string, tombstone bool) *kgo.Record {
		r := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, `{"id": %d}`, id)}
		if !tombstone {
			r.Value = protoOrder(int32(ss.ID), []byte{0}, id, name)
		}
		return r
	}
	cl := newKgo(t, e.kafka)
	for _, r := range []*kgo.Record{rec(1, "ann", false), rec(2, "bob", false), rec(1, "ann two", false), rec(2, "", true), rec(3, "cid", false)} {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", r.Key, err)
		}
	}
	want := map[int64]string{1: "ann two", 3: "cid"}
	keys := []map[string]any{{"id": 1}, {"id": 2}, {"id": 3}}
	for i, g := range f.Lookup(t, db, "users", keys) {
		id := int64(i + 1)
		name, present := want[id]
		if g.Found != present || (present && fmt.Sprint(g.Row["name"]) != name) {
			t.Errorf("lookup id %d: found=%v row=%v, want found=%v name %q", id, g.Found, g.Row, present, name)
		}
	}
}
