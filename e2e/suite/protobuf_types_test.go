package suite

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestProtobufValueTypesPython: confluent-kafka-python's ProtobufSerializer writes DECIMAL, DATE,
// TIME, TINYINT and SMALLINT columns through Ferry as confluent.type.Decimal, google.type.Date,
// google.type.TimeOfDay and 32-bit integers; the Fluss Java reader reads the exact typed values
// and its ProtobufDeserializer consumes equal messages. The schema imports the three files
// without references (the serializer's default, skip.known.types), or with them registered under
// their paths (skip.known.types off); a table nobody registered a schema for gets one derived with
// those types; rows the Fluss Java writer wrote are served in it. A decimal of another scale is
// rescaled exactly, a TINYINT out of range fails its record, and a schema with a wrong type for
// the DECIMAL column is refused naming the field.
func TestProtobufValueTypesPython(t *testing.T) {
	e, f := need(t)
	py := confluentPython(t, e)
	db := dbName(t, f, "protobuf_types")
	cols := []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "price", Type: "DECIMAL(10, 2) NOT NULL"}, {Name: "day", Type: "DATE"},
		{Name: "at", Type: "TIME(3)"}, {Name: "tiny", Type: "TINYINT"}, {Name: "small", Type: "SMALLINT NOT NULL"},
	}
	// The messages sent (Protobuf JSON mapping: a Decimal's value is the base64 of its unscaled
	// big-endian two's complement): 12.30, 2024-02-29, 13:45:30.123 and the integer bounds; -0.05
	// alone; 12.3 at scale 1, which the DECIMAL(10, 2) column takes as 12.30.
	records := []map[string]any{
		{"id": "1", "price": map[string]any{"value": "BM4=", "precision": 4, "scale": 2}, "day": map[string]any{"year": 2024, "month": 2, "day": 29},
			"at": map[string]any{"hours": 13, "minutes": 45, "seconds": 30, "nanos": 123000000}, "tiny": -128, "small": 32767},
		{"id": "2", "price": map[string]any{"value": "+w==", "precision": 1, "scale": 2}},
		{"id": "3", "price": map[string]any{"value": "ew==", "precision": 3, "scale": 1}, "small": -32768},
	}
	// A TINYINT of 300 fails its record.
	bad := map[string]any{"id": "4", "price": map[string]any{"value": "AQ==", "scale": 2}, "tiny": 300}
	// What the Java reader prints.
	rows := []map[string]any{
		{"id": 1, "price": "12.30", "day": "2024-02-29", "at": "13:45:30.123", "tiny": -128, "small": 32767},
		{"id": 2, "price": "-0.05", "day": nil, "at": nil, "tiny": 0, "small": 0},
		{"id": 3, "price": "12.30", "day": nil, "at": nil, "tiny": 0, "small": -32768},
	}
	// What the deserializer gives back: the messages sent, but the third at the column's scale.
	back := []map[string]any{records[0], records[1],
		{"id": "3", "price": map[string]any{"value": "BM4=", "precision": 4, "scale": 2}, "small": -32768}}
	input, err := json.Marshal(records)
	if err != nil {
		t.Fatal(err)
	}
	badInput, err := json.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, topic, mode string, args ...string) []byte {
		t.Helper()
		args = append([]string{"-B", filepath.Join(e.stack.Config().Root, "e2e", "clients", "python", "protobuf_types_roundtrip.py"),
			e.kafka, e.stack.Config().RegistryURL(), topic, mode}, args...)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("protobuf_types_roundtrip.py %s: %v\n%s", mode, err, stderr.String())
		}
		return out
	}
	for _, mode := range []string{"auto", "refs", "latest", "consume"} {
		t.Run(mode, func(t *testing.T) {
			table := "readings_" + mode
			topic := topicTable(t, f, db, table, 1, cols, map[string]string{"kafka.value.format": "protobuf"})
			want := rows
			if mode == "latest" || mode == "consume" {
				// The derived schema gives the nullable TINYINT presence: absent is NULL.
				want = make([]map[string]any, len(rows))
				for i, r := range rows {
					want[i] = map[string]any{}
					for k, v := range r {
						want[i][k] = v
					}
				}
				want[1]["tiny"], want[2]["tiny"] = nil, nil
			}
			if mode == "consume" {
				f.Write(t, db, table, want)
			}
			args := []string{string(input)}
			if mode != "consume" {
				args = append(args, string(badInput))
			}
			out := run(t, topic, mode, args...)
			var got struct {
				SchemaID int32 `json:"schema_id"`
				Produced []struct {
					Offset *int64
					Error  string
				}
				Bad *struct {
					Offset *int64
					Error  string
				}
				Consumed []struct {
					Offset  int64
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
			if mode != "consume" && (got.Bad == nil || !strings.Contains(got.Bad.Error, "INVALID_RECORD")) {
				t.Errorf("a TINYINT of 300: %+v, want INVALID_RECORD\n%s", got.Bad, out)
			}

			// The Fluss Java reader sees the exact typed values (and not the refused record).
			expectStoredRows(t, f, db, table, len(records), want)

			var latest struct {
				ID         int32
				Schema     string
				References []struct{ Name, Subject string }
			}
			getJSON(t, e.stack.Config().RegistryURL()+"/subjects/"+topic+"-value/versions/latest", 200, &latest)
			if mode != "consume" && got.SchemaID != latest.ID {
				t.Errorf("the serializer framed id %d, the subject's latest is %d", got.SchemaID, latest.ID)
			}
			var refs []string
			for _, r := range latest.References {
				refs = append(refs, r.Name+"="+r.Subject)
			}
			wantRefs := ""
			if mode == "refs" {
				// Each imported file, registered by the serializer under its path.
				wantRefs = "confluent/type/decimal.proto=confluent/type/decimal.proto google/type/date.proto=google/type/date.proto google/type/timeofday.proto=google/type/timeofday.proto"
			}
			if strings.Join(refs, " ") != wantRefs {
				t.Errorf("references %v, want %q", refs, wantRefs)
			}
			if mode == "latest" && !strings.Contains(latest.Schema, "confluent.type.Decimal price = 2;") {
				t.Errorf("derived schema:\n%s", latest.Schema)
			}

			if len(got.Consumed) != len(records) {
				t.Fatalf("consumed %d records, want %d: %s", len(got.Consumed), len(records), out)
			}
			for i, c := range got.Consumed {
				if c.Error != "" || c.Offset != int64(i) || c.ID != latest.ID || len(c.Indexes) != 1 || c.Indexes[0] != 0 {
					t.Errorf("consumed %d: offset %d id %d indexes %v error %q, want offset %d, id %d, indexes [0]", i, c.Offset, c.ID, c.Indexes, c.Error, i, latest.ID)
				}
				if g, w := canonical(t, c.Value), canonical(t, back[i]); g != w {
					t.Errorf("consumed %d: %s, want %s", i, g, w)
				}
				// The third comes back at the column's scale: 12.30, not 12.3.
				if c.Equal != (i != 2) {
					t.Errorf("consumed %d: equal to the message sent is %v", i, c.Equal)
				}
			}
		})
	}
	t.Run("wrong", func(t *testing.T) {
		topic := topicTable(t, f, db, "readings_wrong", 1, cols, map[string]string{"kafka.value.format": "protobuf"})
		var got struct {
			RegisterError *string `json:"register_error"`
		}
		out := run(t, topic, "wrong", "[]")
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("output %s: %v", out, err)
		}
		want := "field price: Protobuf google.type.Date does not fit column type DECIMAL(10, 2) NOT NULL"
		if got.RegisterError == nil || !strings.Contains(*got.RegisterError, want) {
			t.Errorf("registration of a Date for the DECIMAL column: %s, want an error with %q", out, want)
		}
	})
}
