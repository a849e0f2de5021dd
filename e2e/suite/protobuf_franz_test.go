package suite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/ferrygw/ferry/services/testenv"
)

// protoFranzSchema is what the producer application compiled in: proto3 optionals for the
// nullable columns, a repeated field for the array.
const protoFranzSchema = `syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  optional string name = 2;
  optional int32 qty = 3;
  double price = 4;
  repeated string tags = 5;
  bool paid = 6;
}`

// TestProtobufFranzGoSerde: franz-go's pkg/sr registers a Protobuf schema in Ferry's registry and
// its Serde frames messages (id and message index [0]); the Fluss Java reader reads the typed
// rows and the records consumed through Ferry decode with the same Serde into equal messages.
// Then, on a table nobody registered a schema for, the application takes the latest version of
// the subject — the one the registry derives from the table — and does the same with it.
func TestProtobufFranzGoSerde(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "protobuf_sr")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}, {Name: "qty", Type: "INT"},
		{Name: "price", Type: "DOUBLE"}, {Name: "tags", Type: "ARRAY<STRING>"}, {Name: "paid", Type: "BOOLEAN"}}
	props := map[string]string{"kafka.value.format": "protobuf"}
	registered := topicTable(t, f, db, "orders", 1, cols, props)
	derived := topicTable(t, f, db, "orders_latest", 1, cols, props)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rcl, err := sr.NewClient(sr.URLs(e.stack.Config().RegistryURL()))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("registered", func(t *testing.T) {
		ss, err := rcl.CreateSchema(ctx, registered+"-value", sr.Schema{Schema: protoFranzSchema, Type: sr.TypeProtobuf})
		if err != nil {
			t.Fatalf("register: %v", err)
		}
		protoSerdeRoundTrip(t, e.kafka, f, db, "orders", registered, ss)
	})
	t.Run("latest", func(t *testing.T) {
		ss, err := rcl.SchemaByVersion(ctx, derived+"-value", -1)
		if err != nil {
			t.Fatalf("latest: %v", err)
		}
		if ss.Type != sr.TypeProtobuf || ss.Version != 1 {
			t.Fatalf("latest of %s-value is a %v schema, version %d; want the derived Protobuf schema, version 1: %s", derived, ss.Type, ss.Version, ss.Schema.Schema)
		}
		protoSerdeRoundTrip(t, e.kafka, f, db, "orders_latest", derived, ss)
	})
}

// protoSerdeRoundTrip produces orders in the schema ss through a franz-go Serde, checks the rows
// Fluss holds and decodes the records consumed back through Ferry.
func protoSerdeRoundTrip(t *testing.T, addr string, f *testenv.Cluster, db, table, topic string, ss sr.SubjectSchema) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	md := compileFirstMessage(t, ss.Schema.Schema)
	var serde sr.Serde
	serde.Register(ss.ID, &dynamicpb.Message{},
		sr.EncodeFn(func(v any) ([]byte, error) { return proto.Marshal(v.(*dynamicpb.Message)) }),
		sr.DecodeFn(func(b []byte, v any) error { return proto.Unmarshal(b, v.(*dynamicpb.Message)) }),
		sr.Index(0))

	const n = 12
	var sent []*dynamicpb.Message
	var rows []map[string]any
	var recs []*kgo.Record
	for i := range n {
		m := dynamicpb.NewMessage(md)
		set := func(name string, v any) {
			fd := md.Fields().ByName(protoreflect.Name(name))
			if fd == nil {
				t.Fatalf("schema %s has no field %s", ss.Schema.Schema, name)
			}
			if l, ok := v.([]string); ok {
				list := m.Mutable(fd).List()
				for _, s := range l {
					list.Append(protoreflect.ValueOfString(s))
				}
				return
			}
			m.Set(fd, protoreflect.ValueOf(v))
		}
		set("id", int64(i))
		// Always a price: a default 0 would read back from Fluss as 0.0. Every third order has
		// no other field: NULL or the default, as the schema says.
		set("price", float64(i)+0.25)
		if i%3 != 0 {
			set("name", fmt.Sprintf("order %d", i))
			set("qty", int32(i*7-30))
			set("tags", []string{"a", fmt.Sprint(i)})
			set("paid", i%2 == 0)
		}
		v, err := serde.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if v[0] != 0 || v[5] != 0 {
			t.Fatalf("Serde framed %x: want magic byte 0, the id and message index [0] (a single 0)", v[:6])
		}
		sent, rows = append(sent, m), append(rows, protoRow(m))
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: v})
	}
	if err := newKgo(t, addr).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	got := f.Scan(t, db, table, testenv.ScanOptions{Expect: n, Timeout: 60 * time.Second})
	if len(got) != n {
		t.Fatalf("Fluss holds %d rows, want %d", len(got), n)
	}
	for _, r := range got {
		if g, w := canonical(t, r.Row), canonical(t, rows[r.Offset]); g != w {
			t.Errorf("offset %d: row %s, want %s", r.Offset, g, w)
		}
	}
	for _, c := range consumeAll(t, addr, topic, n) {
		m := dynamicpb.NewMessage(md)
		if err := serde.Decode(c.Value, m); err != nil {
			t.Errorf("offset %d: %x does not decode with id %d: %v", c.Offset, c.Value, ss.ID, err)
			continue
		}
		if g, w := canonical(t, protoRow(m)), canonical(t, protoRow(sent[c.Offset])); g != w {
			t.Errorf("offset %d: consumed %v, want %v", c.Offset, g, w)
		}
	}
}

// compileFirstMessage compiles a registered .proto (google/protobuf imports built in) and returns
// its first message, the one message index [0] names.
func compileFirstMessage(t *testing.T, text string) protoreflect.MessageDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"schema.proto": text}),
	})}
	files, err := c.Compile(context.Background(), "schema.proto")
	if err != nil {
		t.Fatalf("compile %s: %v", text, err)
	}
	msgs := files[0].Messages()
	if msgs.Len() == 0 {
		t.Fatalf("schema %s has no message", text)
	}
	return msgs.Get(0)
}

// protoRow is the row a message should become: absent fields with presence NULL, other scalars
// their value or default, a repeated field its list (empty when absent).
func protoRow(m protoreflect.Message) map[string]any {
	row := map[string]any{}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsList():
			l := []string{}
			list := m.Get(fd).List()
			for j := range list.Len() {
				l = append(l, list.Get(j).String())
			}
			row[string(fd.Name())] = l
		case fd.HasPresence() && !m.Has(fd):
			row[string(fd.Name())] = nil
		default:
			row[string(fd.Name())] = m.Get(fd).Interface()
		}
	}
	return row
}
