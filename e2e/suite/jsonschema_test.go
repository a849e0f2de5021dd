package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestJSONSchemaProduceConsumePython: confluent-kafka-python's JSONSerializer produces through
// Ferry into a json-schema table with its schema auto-registered, the Fluss Java reader reads the
// typed values, and its JSONDeserializer consumes the rows back through Ferry, framed with the
// subject's latest id, into the objects sent. In "latest" mode nothing is registered: the
// serializer (auto-register off, use.latest.version on) takes the JSON Schema the registry derives
// from the json-schema table. Rows the Fluss Java writer wrote are consumed the same way, in that
// derived JSON Schema.
func TestJSONSchemaProduceConsumePython(t *testing.T) {
	e, f := need(t)
	py := confluentPython(t, e)
	db := dbName(t, f, "json_schema")
	cols := []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}, {Name: "price", Type: "DECIMAL(10, 2)"},
		{Name: "at", Type: "TIMESTAMP_LTZ(3)"}, {Name: "tags", Type: "ARRAY<STRING>"},
	}
	writer := `{"type":"object","title":"Order","properties":{
		"id":{"type":"integer"},"name":{"type":["string","null"]},"price":{"type":["number","null"]},
		"at":{"type":["string","null"],"format":"date-time"},"tags":{"type":["array","null"],"items":{"type":["string","null"]}}},
		"required":["id"]}`
	records := []map[string]any{
		{"id": 1, "name": "kettle ✓", "price": 24.9, "at": "2026-01-02T03:04:05.678Z", "tags": []any{"a", nil}},
		{"id": 2, "name": nil, "price": nil, "at": nil, "tags": nil},
	}
	rows := []map[string]any{
		{"id": 1, "name": "kettle ✓", "price": "24.90", "at": "2026-01-02T03:04:05.678000000Z", "tags": []any{"a", nil}},
		{"id": 2, "name": nil, "price": nil, "at": nil, "tags": nil},
	}
	input, err := json.Marshal(records)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"auto", "latest", "consume"} {
		t.Run(mode, func(t *testing.T) {
			table := "orders_" + mode
			topic := topicTable(t, f, db, table, 1, cols, map[string]string{"kafka.value.format": "json-schema"})
			if mode == "consume" {
				f.Write(t, db, table, rows)
			}
			args := []string{"-B", filepath.Join(e.stack.Config().Root, "e2e", "clients", "python", "json_schema_roundtrip.py"),
				e.kafka, e.stack.Config().RegistryURL(), topic, mode, string(input)}
			if mode == "auto" {
				args = append(args, writer)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, py, args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("json_schema_roundtrip.py: %v\n%s", err, stderr.String())
			}
			var got struct {
				Produced []struct {
					Offset *int64
					Error  string
				}
				Consumed []struct {
					Offset int64
					Magic  int
					ID     int32
					Value  map[string]any
					Error  string
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
			expectStoredRows(t, f, db, table, len(records), rows)
			var latest struct {
				ID         int32
				SchemaType string
			}
			getJSON(t, e.stack.Config().RegistryURL()+"/subjects/"+topic+"-value/versions/latest", 200, &latest)
			if latest.SchemaType != "JSON" {
				t.Errorf("the subject's latest version is of type %q, want JSON", latest.SchemaType)
			}
			if len(got.Consumed) != len(records) {
				t.Fatalf("consumed %d records, want %d: %s", len(got.Consumed), len(records), out)
			}
			for i, c := range got.Consumed {
				if c.Error != "" || c.Offset != int64(i) || c.Magic != 0 || c.ID != latest.ID {
					t.Errorf("consumed %d: offset %d magic %d id %d error %q, want offset %d, magic 0, id %d", i, c.Offset, c.Magic, c.ID, c.Error, i, latest.ID)
				}
				if g, w := canonical(t, c.Value), canonical(t, records[i]); g != w {
					t.Errorf("consumed %d:\n got %s\nwant %s", i, g, w)
				}
			}
		})
	}
}

// TestJSONSchemaFranzGoSerde: franz-go's pkg/sr takes the latest schema of a json-schema table's
// subject nobody registered (the JSON Schema the registry derives from the table) and its Serde
// frames encoding/json records with that id; the Fluss Java reader sees the rows, and the
// records consumed back through Ferry carry the same id and decode into the values sent.
func TestJSONSchemaFranzGoSerde(t *testing.T) {
	type order struct {
		ID   int64   `json:"id"`
		Name *string `json:"name"`
		Qty  *int32  `json:"qty"`
	}
	e, f := need(t)
	db := dbName(t, f, "json_schema_sr")
	topic := topicTable(t, f, db, "orders", 1, []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}, {Name: "qty", Type: "INT"}},
		map[string]string{"kafka.value.format": "json-schema"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	rcl, err := sr.NewClient(sr.URLs(e.stack.Config().RegistryURL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rcl.SchemaByVersion(ctx, topic+"-value", -1)
	if err != nil {
		t.Fatalf("latest: %v", err)
	}
	if ss.Type != sr.TypeJSON || ss.Version != 1 {
		t.Fatalf("latest of %s-value is a %v schema, version %d; want the derived JSON Schema, version 1: %s", topic, ss.Type, ss.Version, ss.Schema.Schema)
	}
	var serde sr.Serde
	serde.Register(ss.ID, order{}, sr.EncodeFn(json.Marshal), sr.DecodeFn(json.Unmarshal))

	const n = 20
	var orders []order
	var recs []*kgo.Record
	for i := range n {
		o := order{ID: int64(i)}
		if i%4 != 0 {
			name, qty := fmt.Sprintf("order %d", i), int32(i*3-20)
			o.Name, o.Qty = &name, &qty
		}
		v, err := serde.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		orders = append(orders, o)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: v})
	}
	if err := newKgo(t, e.kafka).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	rows := f.Scan(t, db, "orders", testenv.ScanOptions{Expect: n, Timeout: 60 * time.Second})
	if len(rows) != n {
		t.Fatalf("Fluss holds %d rows, want %d", len(rows), n)
	}
	for _, r := range rows {
		o := orders[r.Offset]
		if g, w := canonical(t, r.Row), canonical(t, map[string]any{"id": o.ID, "name": o.Name, "qty": o.Qty}); g != w {
			t.Errorf("offset %d: row %s, want %s", r.Offset, g, w)
		}
	}
	for _, c := range consumeAll(t, e.kafka, topic, n) {
		var o order
		if err := serde.Decode(c.Value, &o); err != nil {
			t.Errorf("offset %d: %q does not decode with id %d: %v", c.Offset, c.Value, ss.ID, err)
		} else if g, w := canonical(t, o), canonical(t, orders[c.Offset]); g != w {
			t.Errorf("offset %d: consumed %s, want %s", c.Offset, g, w)
		}
	}
}
