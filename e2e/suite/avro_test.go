package suite

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestAvroProduceConsumePython: confluent-kafka-python's AvroSerializer produces through Ferry
// into an avro table, the Fluss Java reader reads the typed values, and its AvroDeserializer
// consumes the rows back through Ferry into the objects sent. Once with auto.register.schemas
// (the producer's schema registered), once with use.latest.version on a table nobody registered
// a schema for (the registry derives it from the table, for the producer and the consumer), and
// once for rows the Fluss Java writer wrote (served in the schema derived from the table).
func TestAvroProduceConsumePython(t *testing.T) {
	e, f := need(t)
	py := confluentPython(t, e)
	db := dbName(t, f, "avro")
	cols := []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}, {Name: "price", Type: "DECIMAL(10, 2)"},
		{Name: "at", Type: "TIMESTAMP_LTZ(3)"}, {Name: "day", Type: "DATE"}, {Name: "blob", Type: "BYTES"},
		{Name: "tags", Type: "ARRAY<STRING>"},
	}
	writer := `{"type":"record","name":"Order","namespace":"com.example","fields":[
		{"name":"id","type":"long"},
		{"name":"name","type":["null","string"],"default":null},
		{"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null},
		{"name":"at","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},
		{"name":"day","type":["null",{"type":"int","logicalType":"date"}],"default":null},
		{"name":"blob","type":["null","bytes"],"default":null},
		{"name":"tags","type":["null",{"type":"array","items":["null","string"]}],"default":null}]}`
	records := []map[string]any{
		{"id": 1, "name": "kettle ✓", "price": "24.90", "at": "2026-01-02T03:04:05.678+00:00", "day": "2024-02-29",
			"blob": []int{0, 1, 255}, "tags": []any{"a", nil}},
		{"id": 2, "name": nil, "price": nil, "at": nil, "day": nil, "blob": nil, "tags": nil},
		{"id": 3, "name": "", "price": "-0.05", "at": "1969-12-31T23:59:59.999+00:00", "day": "1970-01-01",
			"blob": []int{}, "tags": []any{}},
	}
	// What the Java reader prints for each record's row.
	rows := []map[string]any{
		{"id": 1, "name": "kettle ✓", "price": "24.90", "at": "2026-01-02T03:04:05.678000000Z", "day": "2024-02-29",
			"blob": "AAH/", "tags": []any{"a", nil}},
		{"id": 2, "name": nil, "price": nil, "at": nil, "day": nil, "blob": nil, "tags": nil},
		{"id": 3, "name": "", "price": "-0.05", "at": "1969-12-31T23:59:59.999000000Z", "day": "1970-01-01",
			"blob": "", "tags": []any{}},
	}
	// What the deserializer gives back (Python's forms, converted by the runner).
	back := []map[string]any{
		{"id": 1, "name": "kettle ✓", "price": "24.90", "at": "2026-01-02T03:04:05.678000+00:00", "day": "2024-02-29",
			"blob": []int{0, 1, 255}, "tags": []any{"a", nil}},
		records[1],
		{"id": 3, "name": "", "price": "-0.05", "at": "1969-12-31T23:59:59.999000+00:00", "day": "1970-01-01",
			"blob": []int{}, "tags": []any{}},
	}
	input, err := json.Marshal(records)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"auto", "latest", "consume"} {
		t.Run(mode, func(t *testing.T) {
			table := "orders_" + mode
			topic := topicTable(t, f, db, table, 1, cols, map[string]string{"kafka.value.format": "avro"})
			if mode == "consume" {
				// Rows of the Java writer, served in the schema derived from the table.
				f.Write(t, db, table, rows)
			}
			args := []string{"-B", filepath.Join(e.stack.Config().Root, "e2e", "clients", "python", "avro_roundtrip.py"),
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
				t.Fatalf("avro_roundtrip.py: %v\n%s", err, stderr.String())
			}
			var got struct {
				Produced []struct {
					Partition *int32
					Offset    *int64
					Error     string
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

			// The Fluss Java reader sees the typed values.
			expectStoredRows(t, f, db, table, len(records), rows)

			// The subject's latest version frames what Ferry serves.
			var latest struct{ ID int32 }
			getJSON(t, e.stack.Config().RegistryURL()+"/subjects/"+topic+"-value/versions/latest", 200, &latest)
			if len(got.Consumed) != len(records) {
				t.Fatalf("consumed %d records, want %d: %s", len(got.Consumed), len(records), out)
			}
			for i, c := range got.Consumed {
				if c.Error != "" || c.Offset != int64(i) || c.Magic != 0 || c.ID != latest.ID {
					t.Errorf("consumed %d: offset %d magic %d id %d error %q, want offset %d, magic 0, id %d", i, c.Offset, c.Magic, c.ID, c.Error, i, latest.ID)
				}
				if g, w := canonical(t, c.Value), canonical(t, back[i]); g != w {
					t.Errorf("consumed %d:\n got %s\nwant %s", i, g, w)
				}
			}
		})
	}
}

// avroOrder is the Avro binary of {"id": id, "name": name} for avroOrderSchema, framed with
// schema id: Go's zig-zag varints are Avro's longs.
func avroOrder(id int32, orderID int64, name string) []byte {
	b := []byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}
	b = binary.AppendVarint(b, orderID)
	b = binary.AppendVarint(b, 1) // the union's "string" branch
	b = binary.AppendVarint(b, int64(len(name)))
	return append(b, name...)
}

const avroOrderSchema = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null}]}`

// TestAvroBadRecordsRefuseTheirBatch: a batch of an avro topic with a record framed with an
// unknown schema id, one without the magic byte and one cut short is refused with
// INVALID_RECORD naming each record's reason, and none of it is written; a good batch then
// lands at offset 0.
func TestAvroBadRecordsRefuseTheirBatch(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "avro_bad")
	topic := topicTable(t, f, db, "orders", 1, []testenv.Column{{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}},
		map[string]string{"kafka.value.format": "avro"})
	id := int32(register(t, e.stack.Config().RegistryURL(), topic+"-value", avroOrderSchema))
	good := avroOrder(id, 1, "fine")

	now := time.Now()
	cl := newKgo(t, e.kafka)
	p := produceBatch(t, cl, topic, encodeBatch(now, [][]byte{good, avroOrder(999_999, 2, "unknown id"), []byte(`{"id": 3}`), good[:len(good)-2]}))
	expectRecordErrors(t, p, map[int32]string{1: "unknown schema id 999999", 2: "missing magic byte", 3: "truncated payload"})

	// Nothing of the refused batch was written: the next batch starts the log.
	if p := produceBatch(t, cl, topic, encodeBatch(now, [][]byte{good})); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("good batch: error %v, offset %d; want offset 0", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	rows := f.Scan(t, db, "orders", testenv.ScanOptions{Expect: 1, Timeout: 30 * time.Second})
	if len(rows) != 1 || canonical(t, rows[0].Row) != `{"id":1,"name":"fine"}` {
		t.Fatalf("table holds %+v, want the one good row", rows)
	}
}

// produceBatch sends one record batch to partition 0 of topic in a Produce request of its own
// (acks=all) and returns the partition's answer.
func produceBatch(t *testing.T, cl *kgo.Client, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.Topics[0].Partitions[0]
}

// expectRecordErrors checks that p is INVALID_RECORD with exactly the records of want in error,
// each with a message containing its text.
func expectRecordErrors(t *testing.T, p kmsg.ProduceResponseTopicPartition, want map[int32]string) {
	t.Helper()
	if err := kerr.ErrorForCode(p.ErrorCode); err != kerr.InvalidRecord {
		t.Fatalf("error %v, want INVALID_RECORD", err)
	}
	if len(p.ErrorRecords) != len(want) {
		t.Fatalf("record errors %+v, want records %v", p.ErrorRecords, want)
	}
	for _, r := range p.ErrorRecords {
		if w := want[r.RelativeOffset]; w == "" || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, w) {
			t.Errorf("record %d: %v, want a message with %q", r.RelativeOffset, deref(r.ErrorMessage), w)
		}
	}
}

// srOrder is the Go form of srOrderSchema for hamba/avro.
type srOrder struct {
	ID   int64   `avro:"id"`
	Name *string `avro:"name"`
	Qty  *int32  `avro:"qty"`
}

const srOrderSchema = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},` +
	`{"name":"name","type":["null","string"],"default":null},{"name":"qty","type":["null","int"],"default":null}]}`

// TestAvroFranzGoSerde: franz-go's pkg/sr registers a schema with Ferry's registry and its Serde
// frames hamba/avro records, produced with franz-go; the Fluss Java reader sees the rows, and the
// records consumed back through Ferry decode with the same Serde into the structs sent.
func TestAvroFranzGoSerde(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "avro_sr")
	topic := topicTable(t, f, db, "orders", 1, []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}, {Name: "qty", Type: "INT"}},
		map[string]string{"kafka.value.format": "avro"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	rcl, err := sr.NewClient(sr.URLs(e.stack.Config().RegistryURL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rcl.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: srOrderSchema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	schema := avro.MustParse(srOrderSchema)
	var serde sr.Serde
	serde.Register(ss.ID, srOrder{},
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }))

	const n = 50
	var orders []srOrder
	var recs []*kgo.Record
	for i := range n {
		o := srOrder{ID: int64(i)}
		if i%5 != 0 {
			name, qty := fmt.Sprintf("order %d", i), int32(i*3-40)
			o.Name, o.Qty = &name, &qty
		}
		v, err := serde.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		orders = append(orders, o)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: v})
	}
	cl := newKgo(t, e.kafka)
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	rows := f.Scan(t, db, "orders", testenv.ScanOptions{Expect: n, Timeout: 60 * time.Second})
	if len(rows) != n {
		t.Fatalf("Fluss holds %d rows, want %d", len(rows), n)
	}
	for _, r := range rows {
		o := orders[r.Offset]
		want := map[string]any{"id": o.ID, "name": o.Name, "qty": o.Qty}
		if g, w := canonical(t, r.Row), canonical(t, want); g != w {
			t.Errorf("offset %d: row %s, want %s", r.Offset, g, w)
		}
	}

	consumer := newKgo(t, e.kafka, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil && ctx.Err() == nil {
			t.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var o srOrder
			if err := serde.Decode(r.Value, &o); err != nil {
				t.Errorf("offset %d: %x does not decode: %v", r.Offset, r.Value, err)
			} else if g, w := canonical(t, o), canonical(t, orders[r.Offset]); g != w {
				t.Errorf("offset %d: consumed %s, want %s", r.Offset, g, w)
			}
			got++
		})
	}
	if got != n {
		t.Fatalf("consumed %d records, want %d", got, n)
	}
}

// TestAvroRegistryOutageIsRetried: with schemasvc killed, a batch framed with an id transcodesvc
// has not fetched yet is refused as retriable (REQUEST_TIMED_OUT, nothing written) and the
// producer keeps sending it; once schemasvc is back the same batch is written, once.
func TestAvroRegistryOutageIsRetried(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "avro_outage")
	topic := topicTable(t, f, db, "orders", 1, []testenv.Column{{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}},
		map[string]string{"kafka.value.format": "avro"})
	// A schema of its own: the registry gives equal schemas one id, which transcodesvc may have
	// cached for another test.
	schema := strings.Replace(avroOrderSchema, `"name":"Order"`, `"name":"Order","namespace":"`+db+`"`, 1)
	id := int32(register(t, e.stack.Config().RegistryURL(), topic+"-value", schema))
	logs := filepath.Join(e.stack.Dir(), "logs")
	refusals := func() int {
		n := 0
		for _, name := range []string{"transcodesvc.log", "transcodesvc-2.log"} {
			b, _ := os.ReadFile(filepath.Join(logs, name))
			n += strings.Count(string(b), "the schema registry could not be asked")
		}
		return n
	}
	before := refusals()

	schemasvc := process(e.stack, stack.Schema)
	if err := e.stack.Kill(schemasvc); err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() {
		time.Sleep(3 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		restarted <- e.stack.Restart(ctx, schemasvc)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := newKgo(t, e.kafka, kgo.RetryBackoffFn(func(int) time.Duration { return 200 * time.Millisecond }))
	start := time.Now()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: avroOrder(id, 42, "after the outage")}).FirstErr(); err != nil {
		t.Fatalf("produce across the outage: %v", err)
	}
	if err := <-restarted; err != nil {
		t.Fatalf("restart %s: %v", schemasvc, err)
	}
	if refusals() == before {
		t.Fatalf("the produce took %v and no batch was refused for the registry: the outage was not seen", time.Since(start))
	}
	rows := f.Scan(t, db, "orders", testenv.ScanOptions{Expect: 1, Timeout: 30 * time.Second})
	if len(rows) != 1 || canonical(t, rows[0].Row) != `{"id":42,"name":"after the outage"}` {
		t.Fatalf("table holds %+v, want the one row, once", rows)
	}
}
