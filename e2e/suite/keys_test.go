package suite

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/ferrygw/ferry/services/testenv"
)

// usersTable creates users(id BIGINT NOT NULL, name STRING, PRIMARY KEY (id)) with two buckets
// and the given key and value format, and returns its topic.
func usersTable(t *testing.T, f *testenv.Cluster, db, format string) string {
	t.Helper()
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "users", BucketCount: 2, PrimaryKey: []string{"id"},
		Columns:          []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "name", Type: "STRING"}},
		CustomProperties: map[string]string{"kafka.enabled": "true", "kafka.value.format": format, "kafka.key.format": format}})
	topic := db + ".users"
	waitTopic(t, topic, 2)
	return topic
}

// TestFramedKeysPython: confluent-kafka-python's Avro, Protobuf and JSON Schema serializers as
// key and value serializers upsert a primary-key table (kafka.key.format and
// kafka.value.format the same), update a row and delete one with a tombstone (a framed key,
// null value); the Fluss Java lookup sees each key's latest row and the deleted one gone. The
// matching deserializers then consume the table's changelog through Ferry: every key framed with
// the <topic>-key subject's id decodes to the key object sent, each value to its value, the
// delete as a tombstone. For Avro, a row the Fluss Java UpsertWriter wrote is consumed too.
func TestFramedKeysPython(t *testing.T) {
	e, f := need(t)
	py := confluentPython(t, e)
	type op struct {
		Key   map[string]any `json:"key"`
		Value map[string]any `json:"value"`
	}
	user := func(id int, name string) op {
		return op{Key: map[string]any{"id": id}, Value: map[string]any{"id": id, "name": name}}
	}
	ops := []op{user(1, "ann"), user(2, "bob"), user(1, "ann two"), {Key: map[string]any{"id": 2}}, user(3, "cid")}
	input, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"avro", "protobuf", "json-schema"} {
		t.Run(format, func(t *testing.T) {
			db := dbName(t, f, "keys_"+format)
			topic := usersTable(t, f, db, format)
			// Per key, the values a consumer reads in order ("" is the tombstone).
			want := map[int][]string{1: {"ann", "ann two"}, 2: {"bob", ""}, 3: {"cid"}}
			lookup := map[int]string{1: "ann two", 3: "cid"}
			if format == "avro" {
				f.Write(t, db, "users", []map[string]any{{"id": 4, "name": "dan"}})
				want[4], lookup[4] = []string{"dan"}, "dan"
			}
			expect := 0
			for _, vs := range want {
				expect += len(vs)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, py, "-B", filepath.Join(e.stack.Config().Root, "e2e", "clients", "python", "keyed_roundtrip.py"),
				e.kafka, e.stack.Config().RegistryURL(), topic, format, string(input), fmt.Sprint(expect))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("keyed_roundtrip.py: %v\n%s", err, stderr.String())
			}
			var got struct {
				Produced []struct{ Error string }
				Consumed []struct {
					Partition, Offset int64
					KeyMagic          *int  `json:"key_magic"`
					KeyID             int32 `json:"key_id"`
					Key, Value        map[string]any
					Error             string
				}
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output %s: %v", out, err)
			}
			for i, p := range got.Produced {
				if p.Error != "" {
					t.Fatalf("op %d: %s\n%s", i, p.Error, out)
				}
			}

			// The Fluss Java lookup: each key's latest row, the deleted key gone.
			var keys []map[string]any
			for id := 1; id <= 4; id++ {
				keys = append(keys, map[string]any{"id": id})
			}
			for i, g := range f.Lookup(t, db, "users", keys) {
				name, present := lookup[i+1]
				if g.Found != present || (present && fmt.Sprint(g.Row["name"]) != name) {
					t.Errorf("lookup id %d: found=%v row=%v, want found=%v name %q", i+1, g.Found, g.Row, present, name)
				}
			}

			// Consumed: keys framed with the key subject's latest id, decoded to the objects sent.
			var latest struct{ ID int32 }
			getJSON(t, e.stack.Config().RegistryURL()+"/subjects/"+topic+"-key/versions/latest", 200, &latest)
			if len(got.Consumed) != expect {
				t.Fatalf("consumed %d records, want %d: %s", len(got.Consumed), expect, out)
			}
			sort.SliceStable(got.Consumed, func(i, j int) bool {
				a, b := got.Consumed[i], got.Consumed[j]
				return a.Partition < b.Partition || (a.Partition == b.Partition && a.Offset < b.Offset)
			})
			seen := map[int][]string{}
			for _, c := range got.Consumed {
				if c.Error != "" || c.KeyMagic == nil || *c.KeyMagic != 0 || c.KeyID != latest.ID {
					t.Fatalf("consumed %+v: want a key of magic 0 and id %d that decodes\n%s", c, latest.ID, out)
				}
				id, ok := c.Key["id"].(float64)
				if !ok || len(c.Key) != 1 {
					t.Fatalf("consumed key %v, want {\"id\": n}", c.Key)
				}
				name := ""
				if c.Value != nil {
					name = fmt.Sprint(c.Value["name"])
					if c.Value["id"] != id {
						t.Errorf("key %v with value %v", c.Key, c.Value)
					}
				}
				seen[int(id)] = append(seen[int(id)], name)
			}
			if g, w := canonical(t, seen), canonical(t, want); g != w {
				t.Errorf("consumed values per key %s, want %s", g, w)
			}
		})
	}
}

// TestFramedKeysRefused: on a primary-key table with Avro keys, a batch with a key framed with
// an unknown schema id, a JSON key without the magic byte, a truncated key, and a key that names
// another primary key than its value is refused with INVALID_RECORD naming each record's
// reason, and none of it is written; the good record alone is then written.
func TestFramedKeysRefused(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "keys_bad")
	topic := usersTable(t, f, db, "avro")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rcl, err := sr.NewClient(sr.URLs(e.stack.Config().RegistryURL()))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := rcl.CreateSchema(ctx, topic+"-key", sr.Schema{Schema: `{"type":"record","name":"UserKey","fields":[{"name":"id","type":"long"}]}`})
	if err != nil {
		t.Fatalf("register key: %v", err)
	}
	vs, err := rcl.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: avroOrderSchema})
	if err != nil {
		t.Fatalf("register value: %v", err)
	}
	key := func(id int64) []byte {
		return binary.AppendVarint([]byte{0, byte(ks.ID >> 24), byte(ks.ID >> 16), byte(ks.ID >> 8), byte(ks.ID)}, id)
	}
	unknown := append([]byte{0, 0, 0x0f, 0x42, 0x3f}, 2) // id 999999
	good := avroOrder(int32(vs.ID), 1, "fine")
	now := time.Now()
	cl := newKgo(t, e.kafka)
	p := produceBatch(t, cl, topic, encodeKeyedBatch(now,
		[][]byte{key(1), unknown, []byte(`{"id": 3}`), key(4)[:5], key(5)},
		[][]byte{good, avroOrder(int32(vs.ID), 2, "unknown key id"), avroOrder(int32(vs.ID), 3, "json key"), nil, avroOrder(int32(vs.ID), 6, "other key")}))
	expectRecordErrors(t, p, map[int32]string{1: "record key: unknown schema id 999999", 2: "record key: missing magic byte", 3: "record key: truncated payload"})
	// Placement errors are found once every record converts.
	p = produceBatch(t, cl, topic, encodeKeyedBatch(now, [][]byte{key(1), key(5)}, [][]byte{good, avroOrder(int32(vs.ID), 6, "other key")}))
	expectRecordErrors(t, p, map[int32]string{1: "the record key names another primary key than the value holds"})

	keys := []map[string]any{{"id": 1}, {"id": 2}, {"id": 3}, {"id": 5}, {"id": 6}}
	for i, g := range f.Lookup(t, db, "users", keys) {
		if g.Found {
			t.Errorf("lookup %v: found %v, but its batch was refused", keys[i], g.Row)
		}
	}
	if p := produceBatch(t, cl, topic, encodeKeyedBatch(now, [][]byte{key(1)}, [][]byte{good})); p.ErrorCode != 0 {
		t.Fatalf("good batch: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if g := f.Lookup(t, db, "users", keys[:1]); len(g) != 1 || !g[0].Found || fmt.Sprint(g[0].Row["name"]) != "fine" {
		t.Fatalf("lookup id 1: %+v, want the good row", g)
	}
}

// srUserKey and srUser are the records of the schemas the registry derives for users' key and
// value subjects.
type srUserKey struct {
	ID int64 `avro:"id"`
}

type srUser struct {
	ID   int64   `avro:"id"`
	Name *string `avro:"name"`
}

// TestFramedKeysFranzGoDerived: on a primary-key table with Avro keys and values that nobody
// registered a schema for, rows the Fluss Java UpsertWriter wrote are consumed through Ferry with
// keys framed with the id of the key schema the registry derives (a record of the primary key);
// franz-go's pkg/sr Serde with the derived schemas decodes them, and produces an upsert and a
// tombstone that the Fluss Java lookup then sees.
func TestFramedKeysFranzGoDerived(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "keys_sr")
	topic := usersTable(t, f, db, "avro")
	f.Write(t, db, "users", []map[string]any{{"id": 1, "name": "ann"}, {"id": 2, "name": "bob"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rcl, err := sr.NewClient(sr.URLs(e.stack.Config().RegistryURL()))
	if err != nil {
		t.Fatal(err)
	}
	var serde sr.Serde
	ids := map[string]int{}
	for part, v := range map[string]any{"key": srUserKey{}, "value": srUser{}} {
		ss, err := rcl.SchemaByVersion(ctx, topic+"-"+part, -1)
		if err != nil {
			t.Fatalf("latest %s schema: %v", part, err)
		}
		schema, err := avro.Parse(ss.Schema.Schema)
		if err != nil {
			t.Fatalf("derived %s schema %s: %v", part, ss.Schema.Schema, err)
		}
		ids[part] = ss.ID
		serde.Register(ss.ID, v,
			sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }),
			sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }))
	}
	name := "cid"
	cl := newKgo(t, e.kafka)
	var recs []*kgo.Record
	for _, kv := range []struct {
		key   srUserKey
		value *srUser
	}{{srUserKey{3}, &srUser{ID: 3, Name: &name}}, {srUserKey{1}, nil}} {
		r := &kgo.Record{Topic: topic, Key: serde.MustEncode(kv.key)}
		if kv.value != nil {
			r.Value = serde.MustEncode(*kv.value)
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	lookup := map[int64]string{2: "bob", 3: "cid"}
	for i, g := range f.Lookup(t, db, "users", []map[string]any{{"id": 1}, {"id": 2}, {"id": 3}}) {
		want, present := lookup[int64(i+1)]
		if g.Found != present || (present && fmt.Sprint(g.Row["name"]) != want) {
			t.Errorf("lookup id %d: found=%v row=%v, want found=%v name %q", i+1, g.Found, g.Row, present, want)
		}
	}

	// Per key, the values consumed in order ("" a tombstone): the Java writer's rows, then franz-go's.
	want := map[int64][]string{1: {"ann", ""}, 2: {"bob"}, 3: {"cid"}}
	consumer := newKgo(t, e.kafka, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[int64][]string{}
	got := 0
	for got < 4 && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil && ctx.Err() == nil {
			t.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			var k srUserKey
			if len(r.Key) < 5 || int(binary.BigEndian.Uint32(r.Key[1:5])) != ids["key"] {
				t.Errorf("offset %d: key %x, want one framed with the derived key schema's id %d", r.Offset, r.Key, ids["key"])
				return
			}
			if err := serde.Decode(r.Key, &k); err != nil {
				t.Errorf("offset %d: key %x does not decode: %v", r.Offset, r.Key, err)
				return
			}
			v := ""
			if r.Value != nil {
				var u srUser
				if err := serde.Decode(r.Value, &u); err != nil || u.ID != k.ID || u.Name == nil {
					t.Errorf("offset %d: value %x: %+v %v, want the row of key %d", r.Offset, r.Value, u, err, k.ID)
					return
				}
				v = *u.Name
			}
			seen[k.ID] = append(seen[k.ID], v)
		})
	}
	if g, w := canonical(t, seen), canonical(t, want); g != w {
		t.Errorf("consumed values per key %s, want %s", g, w)
	}
}

// TestFramedKeyColumnFranzGo: a log table whose kafka.key.column takes Avro keys
// (kafka.key.format=avro) stores the string each framed key holds, as franz-go's pkg/sr Serde
// frames it with the "string" schema registered under the key subject; the Fluss Java reader
// sees the strings, and consumers get the keys framed again with that id (a null key stays null).
func TestFramedKeyColumnFranzGo(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "keys_column")
	topic := topicTable(t, f, db, "events", 1, []testenv.Column{{Name: "k", Type: "STRING"}, {Name: "id", Type: "BIGINT NOT NULL"}},
		map[string]string{"kafka.key.column": "k", "kafka.key.format": "avro"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rcl, err := sr.NewClient(sr.URLs(e.stack.Config().RegistryURL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rcl.CreateSchema(ctx, topic+"-key", sr.Schema{Schema: `"string"`, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	schema := avro.MustParse(`"string"`)
	var serde sr.Serde
	serde.Register(ss.ID, "",
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }))
	cl := newKgo(t, e.kafka)
	if err := cl.ProduceSync(ctx,
		&kgo.Record{Topic: topic, Partition: 0, Key: serde.MustEncode("user-1 ✓"), Value: []byte(`{"id": 1}`)},
		&kgo.Record{Topic: topic, Partition: 0, Value: []byte(`{"id": 2}`)},
	).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	rows := f.Scan(t, db, "events", testenv.ScanOptions{Expect: 2, Timeout: 30 * time.Second})
	if len(rows) != 2 || canonical(t, rows[0].Row) != `{"id":1,"k":"user-1 ✓"}` || canonical(t, rows[1].Row) != `{"id":2,"k":null}` {
		t.Fatalf("table holds %+v, want the unframed key and a null one", rows)
	}
	consumer := newKgo(t, e.kafka, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var keys []*string
	for len(keys) < 2 && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil && ctx.Err() == nil {
			t.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Key == nil {
				keys = append(keys, nil)
				return
			}
			var k string
			if err := serde.Decode(r.Key, &k); err != nil {
				t.Fatalf("offset %d: key %x does not decode: %v", r.Offset, r.Key, err)
			}
			keys = append(keys, &k)
		})
	}
	if len(keys) != 2 || keys[0] == nil || *keys[0] != "user-1 ✓" || keys[1] != nil {
		t.Fatalf("consumed keys %v, want \"user-1 ✓\" and null", keys)
	}
}
