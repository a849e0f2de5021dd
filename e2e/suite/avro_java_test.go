package suite

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestAvroProduceConsumeJava: Confluent's JVM KafkaAvroSerializer (e2e/clients/javaserde), in a
// kafka-clients 4.4 producer, registers its schema with Ferry's registry over REST and produces
// through Ferry into an avro table; the Fluss Java reader reads the typed values; the
// KafkaAvroDeserializer, in a kafka-clients consumer, decodes the records Ferry serves into the
// records sent. Once with auto.register.schemas, once with auto.register.schemas=false and
// use.latest.version on a table nobody registered a schema for (the serializer writes with the
// schema the registry derives from the table, after checking it reads the application's schema),
// and once for rows the Fluss Java writer wrote. Under use.latest.version the serializer's strict
// check refuses an application schema whose record name is not the table's.
func TestAvroProduceConsumeJava(t *testing.T) {
	e, f := need(t)
	root := e.stack.Config().Root
	run := filepath.Join(root, "e2e", "clients", "javaserde", "run")
	if _, err := os.Stat(filepath.Join(root, ".cache", "clients", "javaserde", "lib")); err != nil {
		t.Fatalf("Confluent's JVM serdes are not installed (tools/install-clients.sh): %v", err)
	}
	db := dbName(t, f, "avro_java")
	cols := []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}, {Name: "price", Type: "DECIMAL(10, 2)"},
		{Name: "at", Type: "TIMESTAMP_LTZ(3)"}, {Name: "day", Type: "DATE"}, {Name: "blob", Type: "BYTES"},
		{Name: "tags", Type: "ARRAY<STRING>"}, {Name: "qty", Type: "INT"}, {Name: "ok", Type: "BOOLEAN"},
		{Name: "score", Type: "DOUBLE"}, {Name: "seen", Type: "TIMESTAMP(6)"}, {Name: "attrs", Type: "MAP<STRING, INT>"},
	}
	// The application's schema; under use.latest.version its record name must be the table's, as
	// the derived schema's is: Avro's schema resolution compares record names.
	writer := func(name string) string {
		return `{"type":"record","name":"` + name + `","namespace":"com.example","fields":[
		{"name":"id","type":"long"},
		{"name":"name","type":["null","string"],"default":null},
		{"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null},
		{"name":"at","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},
		{"name":"day","type":["null",{"type":"int","logicalType":"date"}],"default":null},
		{"name":"blob","type":["null","bytes"],"default":null},
		{"name":"tags","type":["null",{"type":"array","items":["null","string"]}],"default":null},
		{"name":"qty","type":["null","int"],"default":null},
		{"name":"ok","type":["null","boolean"],"default":null},
		{"name":"score","type":["null","double"],"default":null},
		{"name":"seen","type":["null",{"type":"long","logicalType":"local-timestamp-micros"}],"default":null},
		{"name":"attrs","type":["null",{"type":"map","values":["null","int"]}],"default":null}]}`
	}
	nulls := map[string]any{"id": 2, "name": nil, "price": nil, "at": nil, "day": nil, "blob": nil, "tags": nil,
		"qty": nil, "ok": nil, "score": nil, "seen": nil, "attrs": nil}
	// What AvroRoundTrip.java makes GenericRecords of. The TIMESTAMP(6) value before 1970 has no
	// sub-millisecond digits: Fluss 0.9 cannot read those back (limits.md).
	records := []map[string]any{
		{"id": 1, "name": "kettle ✓", "price": "24.90", "at": "2026-01-02T03:04:05.678+00:00", "day": "2024-02-29",
			"blob": []int{0, 1, 255}, "tags": []any{"a", nil}, "qty": -7, "ok": true, "score": 2.5,
			"seen": "2026-01-02T03:04:05.123456", "attrs": map[string]any{"a": 1, "b": nil}},
		nulls,
		{"id": 3, "name": "", "price": "-0.05", "at": "1969-12-31T23:59:59.999+00:00", "day": "1970-01-01",
			"blob": []int{}, "tags": []any{}, "qty": 2147483647, "ok": false, "score": -0.125,
			"seen": "1969-12-31T23:59:59.999", "attrs": map[string]any{}},
	}
	// What the Java reader prints for each record's row (map pairs sorted by key).
	rows := []map[string]any{
		{"id": 1, "name": "kettle ✓", "price": "24.90", "at": "2026-01-02T03:04:05.678000000Z", "day": "2024-02-29",
			"blob": "AAH/", "tags": []any{"a", nil}, "qty": -7, "ok": true, "score": 2.5,
			"seen": "2026-01-02T03:04:05.123456000", "attrs": []any{[]any{"a", 1}, []any{"b", nil}}},
		nulls,
		{"id": 3, "name": "", "price": "-0.05", "at": "1969-12-31T23:59:59.999000000Z", "day": "1970-01-01",
			"blob": "", "tags": []any{}, "qty": 2147483647, "ok": false, "score": -0.125,
			"seen": "1969-12-31T23:59:59.999000000", "attrs": []any{}},
	}
	// What the deserializer gives back, in AvroRoundTrip.java's JSON forms.
	back := []map[string]any{
		{"id": 1, "name": "kettle ✓", "price": "24.90", "at": "2026-01-02T03:04:05.678Z", "day": "2024-02-29",
			"blob": []int{0, 1, 255}, "tags": []any{"a", nil}, "qty": -7, "ok": true, "score": 2.5,
			"seen": "2026-01-02T03:04:05.123456", "attrs": map[string]any{"a": 1, "b": nil}},
		nulls,
		{"id": 3, "name": "", "price": "-0.05", "at": "1969-12-31T23:59:59.999Z", "day": "1970-01-01",
			"blob": []int{}, "tags": []any{}, "qty": 2147483647, "ok": false, "score": -0.125,
			"seen": "1969-12-31T23:59:59.999", "attrs": map[string]any{}},
	}
	input, err := json.Marshal(records)
	if err != nil {
		t.Fatal(err)
	}
	registry := e.stack.Config().RegistryURL()
	for _, mode := range []string{"auto", "latest", "consume"} {
		t.Run(mode, func(t *testing.T) {
			table := "orders_" + mode
			topic := topicTable(t, f, db, table, 1, cols, map[string]string{"kafka.value.format": "avro"})
			subject := topic + "-value"
			args := []string{e.kafka, registry, topic, mode}
			switch mode {
			case "auto":
				args = append(args, writer("Order"))
			case "latest":
				args = append(args, writer(table))
			case "consume":
				// Rows of the Java writer, served in the schema derived from the table.
				f.Write(t, db, table, rows)
			}
			got, out, stderr := javaAvroRoundTrip(t, run, args, input)
			if mode != "consume" && len(got.Produced) != len(records) {
				t.Fatalf("produced %d records, want %d: %s\n%s", len(got.Produced), len(records), out, stderr)
			}
			for i, p := range got.Produced {
				if p.Error != "" || p.Offset == nil || *p.Offset != int64(i) {
					t.Fatalf("record %d: produced %+v, want offset %d\n%s\n%s", i, p, i, out, stderr)
				}
			}

			// The subject has one version: the serializer's schema (auto), or the one derived from
			// the table, which the serializer did not replace (latest) and Ferry frames rows
			// with (consume).
			var versions []int
			getJSON(t, registry+"/subjects/"+subject+"/versions", 200, &versions)
			var latest struct {
				ID     int32
				Schema string
			}
			getJSON(t, registry+"/subjects/"+subject+"/versions/latest", 200, &latest)
			if len(versions) != 1 {
				t.Errorf("subject %s has versions %v, want one", subject, versions)
			}
			wantName := `"name":"` + table + `"`
			if mode == "auto" {
				wantName = `"name":"Order"`
			}
			if !strings.Contains(latest.Schema, wantName) {
				t.Errorf("latest version of %s is %s, want the record %s", subject, latest.Schema, wantName)
			}

			// The Fluss Java reader sees the typed values.
			expectStoredRows(t, f, db, table, len(records), rows, "attrs")

			// The deserializer decodes what Ferry serves into the records sent.
			if len(got.Consumed) != len(records) {
				t.Fatalf("consumed %d records, want %d: %s\n%s", len(got.Consumed), len(records), out, stderr)
			}
			for i, c := range got.Consumed {
				if c.Error != "" || c.Offset != int64(i) {
					t.Errorf("consumed %d: offset %d error %q, want offset %d", i, c.Offset, c.Error, i)
				}
				if g, w := canonical(t, c.Value), canonical(t, back[i]); g != w {
					t.Errorf("consumed %d:\n got %s\nwant %s", i, g, w)
				}
			}
			// Each record is framed with the latest version's id: magic byte 0, then the id.
			for i, v := range rawValues(t, e.kafka, topic, len(records)) {
				if len(v) < 5 || v[0] != 0 || int32(binary.BigEndian.Uint32(v[1:5])) != latest.ID {
					t.Errorf("record %d is framed % x..., want 00 and id %d", i, v[:min(len(v), 5)], latest.ID)
				}
			}
		})
	}

	// use.latest.version with latest.compatibility.strict (the default) checks that the latest
	// version reads the application's records: a record named otherwise than the table is refused
	// by the serializer, and nothing is written or registered.
	t.Run("latest-other-name", func(t *testing.T) {
		table := "orders_strict"
		topic := topicTable(t, f, db, table, 1, cols, map[string]string{"kafka.value.format": "avro"})
		got, out, stderr := javaAvroRoundTrip(t, run, []string{e.kafka, registry, topic, "latest", writer("Order")}, input)
		if len(got.Produced) != len(records) {
			t.Fatalf("produced %d records, want %d: %s\n%s", len(got.Produced), len(records), out, stderr)
		}
		for i, p := range got.Produced {
			if p.Offset != nil || !strings.Contains(p.Error, "Incompatible schema") || !strings.Contains(p.Error, "latest.compatibility.strict") {
				t.Errorf("record %d: produced at offset %v, error %q; want the serializer's strict check to refuse it", i, p.Offset, p.Error)
			}
		}
		var versions []int
		getJSON(t, registry+"/subjects/"+topic+"-value/versions", 200, &versions)
		if len(versions) != 1 {
			t.Errorf("subject %s-value has versions %v, want the derived one", topic, versions)
		}
		if rows := f.Scan(t, db, table, testenv.ScanOptions{}); len(rows) != 0 {
			t.Errorf("Fluss holds %d rows, want none", len(rows))
		}
	})
}

// javaRoundTrip is what e2e/clients/javaserde's AvroRoundTrip prints.
type javaRoundTrip struct {
	Produced []struct {
		Partition *int32
		Offset    *int64
		Error     string
	}
	Consumed []struct {
		Offset int64
		Value  map[string]any
		Error  string
	}
}

// javaAvroRoundTrip runs `javaserde/run avro-roundtrip args...` with the records on stdin and
// returns what it printed, decoded, with its stdout and stderr.
func javaAvroRoundTrip(t *testing.T, run string, args []string, input []byte) (javaRoundTrip, []byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, run, append([]string{"avro-roundtrip"}, args...)...)
	cmd.Stdin = bytes.NewReader(input)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("javaserde avro-roundtrip: %v\n%s", err, stderr.String())
	}
	var got javaRoundTrip
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber() // exact longs
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("output %s: %v\n%s", out, err, stderr.String())
	}
	return got, out, stderr.String()
}

// rawValues reads the first n record values of partition 0 of topic through frontdoor.
func rawValues(t *testing.T, addr, topic string, n int) [][]byte {
	t.Helper()
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var vs [][]byte
	for len(vs) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil && ctx.Err() == nil {
			t.Fatalf("fetch %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) { vs = append(vs, r.Value) })
	}
	if len(vs) < n {
		t.Fatalf("read %d records of %s, want %d", len(vs), topic, n)
	}
	return vs[:n]
}
