package registry

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferrygw/ferry/schemasvc/internal/store"
	"github.com/ferrygw/ferry/schemasvc/internal/store/storetest"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
)

const ordersV1 = `{"type":"record","name":"Order","fields":[
	{"name":"id","type":"long"},
	{"name":"item","type":["null","string"],"default":null}]}`

const ordersV2 = `{"type":"record","name":"Order","fields":[
	{"name":"id","type":"long"},
	{"name":"item","type":["null","string"],"default":null},
	{"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null}]}`

// Two instances over one log give a schema the same id, whichever
// registers first, and a restarted instance (a fresh one over the same
// log) still knows it.
func TestIDsAgreeAcrossInstances(t *testing.T) {
	ctx := context.Background()
	log := &storetest.MemLog{}
	a, b := newRegistry(t, log, ordersCatalog()), newRegistry(t, log, ordersCatalog())
	idA, vA, err := a.Register(ctx, "orders-value", Input{Text: ordersV1})
	if err != nil {
		t.Fatal(err)
	}
	idB, vB, err := b.Register(ctx, "orders-value", Input{Text: ordersV1})
	if err != nil || idB != idA || vB != vA || vA != 1 {
		t.Fatalf("instance b: id %d v%d %v; a: id %d v%d", idB, vB, err, idA, vA)
	}
	if idA != candidateID(store.SchemaKey(TypeAvro, mustCanonical(t, ordersV1), "")) {
		t.Errorf("id %d is not the schema's hash", idA)
	}
	restarted := newRegistry(t, log, ordersCatalog())
	s, err := restarted.SchemaByID(ctx, idA)
	if err != nil || s.Text != ordersV1 {
		t.Fatalf("after restart: %v %v", s, err)
	}
	// Whitespace does not make another schema.
	id2, v2, err := restarted.Register(ctx, "orders-value", Input{Text: strings.Join(strings.Fields(ordersV1), "")})
	if err != nil || id2 != idA || v2 != 1 {
		t.Errorf("reformatted schema: id %d v%d %v", id2, v2, err)
	}
}

func mustCanonical(t *testing.T, text string) string {
	t.Helper()
	p, err := prepare(store.NewState(), Input{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return p.canonical
}

// A concurrent writer that claims the registration's hashed id for another
// schema first makes the registration probe on to the next id; one that
// takes its version number makes it take the next version.
func TestLostClaimsAreRetried(t *testing.T) {
	ctx := context.Background()
	log := &storetest.MemLog{}
	r := newRegistry(t, log, ordersCatalog())
	want := candidateID(store.SchemaKey(TypeAvro, mustCanonical(t, ordersV1), ""))
	log.BeforeAppend = func([]store.Row) {
		other := mustCanonical(t, ordersV2)
		_ = log.Append(ctx, []store.Row{
			{Kind: store.KindSchema, ID: want, Type: TypeAvro, Text: ordersV2, Canonical: other},
			{Kind: store.KindVersion, Subject: "orders-value", Version: 1, ID: want, Type: TypeAvro, Canonical: other},
		})
	}
	id, v, err := r.Register(ctx, "orders-value", Input{Text: ordersV1})
	if err != nil {
		t.Fatal(err)
	}
	if id != want+1 || v != 2 {
		t.Errorf("id %d v%d, want %d v2", id, v, want+1)
	}
	s, _ := r.SchemaByID(ctx, want)
	if s.Text != ordersV2 {
		t.Errorf("id %d changed meaning: %s", want, s.Text)
	}
}

// Registrations that do not fit the table are refused naming the field.
func TestRegistrationChecksTheTable(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t, &storetest.MemLog{}, ordersCatalog())
	for _, tc := range []struct {
		name, schema string
		code         int
		want         string
	}{
		{"wrong type", `{"type":"record","name":"O","fields":[{"name":"id","type":"string"}]}`, CodeIncompatible, "field id: Avro string does not fit column type BIGINT NOT NULL"},
		{"optional NOT NULL", `{"type":"record","name":"O","fields":[{"name":"id","type":["null","long"]}]}`, CodeIncompatible, "field id: optional in the schema but the column is BIGINT NOT NULL"},
		{"missing NOT NULL", `{"type":"record","name":"O","fields":[{"name":"item","type":"string"}]}`, CodeIncompatible, "field id: column id is BIGINT NOT NULL and the schema has no field for it"},
		{"unknown field", `{"type":"record","name":"O","fields":[{"name":"id","type":"long"},{"name":"qty","type":"int"}]}`, CodeIncompatible, "field qty: no column of that name"},
		{"decimal scale", `{"type":"record","name":"O","fields":[{"name":"id","type":"long"},{"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":3}}]}`, CodeIncompatible, "field price: decimal(10, 3) does not fit column type DECIMAL(10, 2)"},
		{"timestamp", `{"type":"record","name":"O","fields":[{"name":"id","type":"long"},{"name":"at","type":"long"}]}`, CodeIncompatible, "field at: Avro long does not fit column type TIMESTAMP_LTZ(3)"},
		{"not a record", `"string"`, CodeIncompatible, "the schema is string, not a record"},
		{"not Avro", `{"type":"record"`, CodeInvalidSchema, "Invalid schema"},
		{"protobuf invalid", `syntax = "proto3"; message O { int64 id = 1`, CodeInvalidSchema, "Invalid schema"},
		{"protobuf wrong type", `syntax = "proto3"; message O { string id = 1; }`, CodeIncompatible, "field id: Protobuf string does not fit column type BIGINT NOT NULL"},
		{"protobuf optional NOT NULL", `syntax = "proto3"; message O { optional int64 id = 1; }`, CodeIncompatible, "field id: int64 may be absent"},
		{"protobuf unknown", `syntax = "proto3"; message O { int64 id = 1; int32 qty = 2; }`, CodeIncompatible, "field qty: no column of that name"},
		{"protobuf decimal", `syntax = "proto3"; message O { int64 id = 1; string price = 2; }`, CodeIncompatible, "field price: Protobuf string does not fit column type DECIMAL(10, 2)"},
		{"json wrong type", `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`, CodeIncompatible, "field id: JSON type string does not fit column type BIGINT NOT NULL"},
		{"json optional NOT NULL", `{"type":"object","properties":{"id":{"type":"integer"}}}`, CodeIncompatible, "field id: optional (not in required) in the schema but the column is BIGINT NOT NULL"},
		{"json nullable NOT NULL", `{"type":"object","properties":{"id":{"oneOf":[{"type":"null"},{"type":"integer"}]}},"required":["id"]}`, CodeIncompatible, "field id: nullable in the schema but the column is BIGINT NOT NULL"},
		{"json unknown", `{"type":"object","properties":{"id":{"type":"integer"},"qty":{"type":"integer"}},"required":["id"]}`, CodeIncompatible, "field qty: no column of that name"},
		{"json invalid", `{"type":"object","properties":{"id":{"type":"integr"}}}`, CodeInvalidSchema, "Invalid schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Text: tc.schema}
			if strings.HasPrefix(tc.name, "protobuf") {
				in.Type = TypeProtobuf
			}
			if strings.HasPrefix(tc.name, "json") {
				in.Type = TypeJSON
			}
			_, _, err := r.Register(ctx, "orders-value", in)
			e := AsError(err)
			if err == nil || e.Code != tc.code || !strings.Contains(e.Message, tc.want) {
				t.Errorf("got %v (code %d), want %d containing %q", err, e.Code, tc.code, tc.want)
			}
		})
	}
	if _, _, err := r.Register(ctx, "nosuch-value", Input{Text: ordersV1}); AsError(err).Code != CodeInvalidSchema || !strings.Contains(err.Error(), "not a Ferry topic") {
		t.Errorf("unknown topic: %v", err)
	}
	if _, _, err := r.Register(ctx, "com.example.Order", Input{Text: ordersV1}); AsError(err).Code != CodeInvalidSchema || !strings.Contains(err.Error(), "TopicNameStrategy") {
		t.Errorf("record-name subject: %v", err)
	}
	if subs, _ := r.Subjects(ctx, true); len(subs) != 0 {
		t.Errorf("refused registrations left subjects %v", subs)
	}
}

// The latest version of a subject nobody registered is derived from the
// table, registered once, and does not constrain later registrations
// beyond the table.
func TestLatestIsDerived(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t, &storetest.MemLog{}, ordersCatalog())
	v, err := r.Version(ctx, "orders-value", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(v.Schema.Text), &got); err != nil {
		t.Fatal(err)
	}
	want := `{"fields":[{"name":"id","type":"long"},{"default":null,"name":"item","type":["null","string"]},` +
		`{"default":null,"name":"price","type":["null",{"logicalType":"decimal","precision":10,"scale":2,"type":"bytes"}]},` +
		`{"default":null,"name":"at","type":["null",{"logicalType":"timestamp-millis","type":"long"}]}],"name":"orders","namespace":"shop","type":"record"}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("derived\n %s\nwant\n %s", b, want)
	}
	again, err := r.Version(ctx, "orders-value", 0, false)
	if err != nil || again.Schema.ID != v.Schema.ID || again.Version != 1 {
		t.Errorf("second latest: %+v %v", again, err)
	}
	// A client schema of another record name registers on top (BACKWARD
	// would refuse it against a client-registered version).
	if _, ver, err := r.Register(ctx, "orders-value", Input{Text: ordersV1}); err != nil || ver != 2 {
		t.Errorf("register after derived: v%d %v", ver, err)
	}
	if _, err := r.Version(ctx, "nosuch-value", 0, false); AsError(err).Code != CodeSubjectNotFound {
		t.Errorf("latest of an unknown topic: %v", err)
	}
}

// A subject nobody registered is derived in the language the table's value
// format reads: JSON Schema for json-schema tables, Avro for the others and
// for keys. The id is the same on every registry that derives it.
func TestLatestIsDerivedInTheTableFormat(t *testing.T) {
	ctx := context.Background()
	catalog := func(f catalogv1.ValueFormat) *fakeCatalog {
		c := ordersCatalog()
		c.topics["orders"].Mapping.ValueFormat = f
		c.topics["orders"].Mapping.KeyColumn = "id"
		return c
	}
	for _, tc := range []struct {
		format catalogv1.ValueFormat
		want   string
	}{
		{catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA, TypeJSON},
		{catalogv1.ValueFormat_VALUE_FORMAT_AVRO, TypeAvro},
		{catalogv1.ValueFormat_VALUE_FORMAT_JSON, TypeAvro},
	} {
		r := newRegistry(t, &storetest.MemLog{}, catalog(tc.format))
		v, err := r.Version(ctx, "orders-value", 0, false)
		if err != nil {
			t.Fatalf("%v: %v", tc.format, err)
		}
		if v.Schema.Type != tc.want {
			t.Errorf("%v: derived a %s schema, want %s", tc.format, v.Schema.Type, tc.want)
		}
		other, err := newRegistry(t, &storetest.MemLog{}, catalog(tc.format)).Version(ctx, "orders-value", 0, false)
		if err != nil || other.Schema.ID != v.Schema.ID || other.Schema.Text != v.Schema.Text {
			t.Errorf("%v: another registry derived %+v %v, want id %d", tc.format, other, err, v.Schema.ID)
		}
		if k, err := r.Version(ctx, "orders-key", 0, false); err != nil || k.Schema.Type != TypeAvro {
			t.Errorf("%v: key derived %+v %v, want AVRO", tc.format, k, err)
		}
	}
	// A JSON Schema client looking its schema up finds the derived version.
	r := newRegistry(t, &storetest.MemLog{}, catalog(catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA))
	v, err := r.Version(ctx, "orders-value", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	found, err := r.Lookup(ctx, "orders-value", Input{Type: TypeJSON, Text: v.Schema.Text}, false)
	if err != nil || found.Version != 1 || found.Schema.ID != v.Schema.ID {
		t.Errorf("lookup of the derived JSON Schema: %+v %v", found, err)
	}
}

// TestKeySubjectInTheKeyFormat: a primary-key table's -key subject is
// derived in its kafka.key.format (a record of the primary key), and a
// key registration is checked against the primary key.
func TestKeySubjectInTheKeyFormat(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		format catalogv1.ValueFormat
		want   string
		text   string // a fragment of the derived schema
	}{
		{catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF, TypeProtobuf, "int64 id = 1;"},
		{catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA, TypeJSON, `"id"`},
		{catalogv1.ValueFormat_VALUE_FORMAT_AVRO, TypeAvro, `"name":"id","type":"long"`},
		{catalogv1.ValueFormat_VALUE_FORMAT_JSON, TypeAvro, `"name":"id","type":"long"`},
	} {
		c := ordersCatalog()
		m := c.topics["orders"]
		m.Kind, m.PrimaryKeys = catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, []string{"id"}
		m.Mapping.KeyFormat = tc.format
		r := newRegistry(t, &storetest.MemLog{}, c)
		k, err := r.Version(ctx, "orders-key", 0, false)
		if err != nil || k.Schema.Type != tc.want || !strings.Contains(k.Schema.Text, tc.text) || strings.Contains(k.Schema.Text, "item") {
			t.Errorf("%v: key derived %+v %v, want %s of the primary key alone", tc.format, k, err, tc.want)
		}
	}
	c := ordersCatalog()
	m := c.topics["orders"]
	m.Kind, m.PrimaryKeys = catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, []string{"id"}
	m.Mapping.KeyFormat = catalogv1.ValueFormat_VALUE_FORMAT_AVRO
	r := newRegistry(t, &storetest.MemLog{}, c)
	if _, _, err := r.Register(ctx, "orders-key", Input{Text: `{"type":"record","name":"k","fields":[{"name":"id","type":"string"}]}`}); err == nil {
		t.Error("a key schema whose id is a string was registered")
	}
	if _, _, err := r.Register(ctx, "orders-key", Input{Text: `{"type":"record","name":"k","fields":[{"name":"id","type":"long"}]}`}); err != nil {
		t.Errorf("the primary key's record: %v", err)
	}
}

// BACKWARD (the default) refuses a version the earlier one cannot be read
// with; NONE lets it through.
func TestCompatibilityLevels(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t, &storetest.MemLog{}, ordersCatalog())
	if _, _, err := r.Register(ctx, "orders-value", Input{Text: ordersV2}); err != nil {
		t.Fatal(err)
	}
	// item required without a default: data written with an optional
	// item cannot be read with it.
	strict := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"}]}`
	_, _, err := r.Register(ctx, "orders-value", Input{Text: strict})
	if e := AsError(err); e.Code != CodeIncompatible || !strings.Contains(e.Message, "BACKWARD") {
		t.Fatalf("BACKWARD: %v", err)
	}
	ok, msgs, err := r.Compatible(ctx, "orders-value", 0, Input{Text: strict})
	if err != nil || ok || len(msgs) != 1 {
		t.Errorf("Compatible = %v %v %v", ok, msgs, err)
	}
	// Against version 1 by number, as the compatibility endpoint asks.
	if ok, _, err := r.Compatible(ctx, "orders-value", 1, Input{Text: strict}); err != nil || ok {
		t.Errorf("Compatible with v1 = %v %v", ok, err)
	}
	if _, _, err := r.Compatible(ctx, "orders-value", 7, Input{Text: strict}); AsError(err).Code != CodeVersionNotFound {
		t.Errorf("Compatible with v7: %v", err)
	}
	if err := r.SetConfig(ctx, "orders-value", "NONE"); err != nil {
		t.Fatal(err)
	}
	if _, v, err := r.Register(ctx, "orders-value", Input{Text: strict}); err != nil || v != 2 {
		t.Errorf("NONE: v%d %v", v, err)
	}
	if err := r.SetConfig(ctx, "", "SIDEWAYS"); AsError(err).Code != CodeInvalidCompatibility {
		t.Errorf("bad level: %v", err)
	}
}

// A JSON Schema that fits the table registers, with its own id, and a
// reformatted copy of it is the same schema.
func TestJSONSchemaRegistration(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t, &storetest.MemLog{}, ordersCatalog())
	js := `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Order","type":"object",
		"properties":{"id":{"type":"integer"},"item":{"type":["string","null"]},"price":{"type":"number"},"at":{"type":"string","format":"date-time"}},
		"required":["id"]}`
	id, v, err := r.Register(ctx, "orders-value", Input{Type: TypeJSON, Text: js})
	if err != nil || v != 1 {
		t.Fatalf("register: id %d v%d %v", id, v, err)
	}
	again, _, err := r.Register(ctx, "orders-value", Input{Type: TypeJSON, Text: strings.Join(strings.Fields(js), "")})
	if err != nil || again != id {
		t.Errorf("reformatted: id %d %v, want %d", again, err, id)
	}
	s, err := r.SchemaByID(ctx, id)
	if err != nil || s.Type != TypeJSON {
		t.Errorf("schema %d: %+v %v", id, s, err)
	}
}

// A schema may use a named type registered under another subject, by
// reference; GetSchema hands the referenced schema along.
func TestReferences(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t, &storetest.MemLog{}, ordersCatalog())
	// The table stores no key: any schema goes under orders-key.
	kind := `{"type":"enum","name":"Kind","namespace":"com.example","symbols":["TEA","COFFEE"]}`
	kindID, _, err := r.Register(ctx, "orders-key", Input{Text: kind})
	if err != nil {
		t.Fatal(err)
	}
	order := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":["null","com.example.Kind"],"default":null}]}`
	refs := []Reference{{Name: "com.example.Kind", Subject: "orders-key", Version: 1}}
	if _, _, err := r.Register(ctx, "orders-value", Input{Text: order}); AsError(err).Code != CodeInvalidSchema {
		t.Errorf("without the reference: %v", err)
	}
	id, _, err := r.Register(ctx, "orders-value", Input{Text: order, References: refs})
	if err != nil {
		t.Fatal(err)
	}
	res, err := NewServer(r).GetSchema(ctx, &schemav1.GetSchemaRequest{Id: id})
	if err != nil || len(res.GetReferenced()) != 1 || res.GetReferenced()[0].GetId() != kindID ||
		len(res.GetSchema().GetReferences()) != 1 || res.GetSchema().GetReferences()[0].GetSubject() != "orders-key" {
		t.Errorf("GetSchema(%d) = %v %v", id, res, err)
	}
	// A reference that is not registered is refused.
	bad := []Reference{{Name: "com.example.Kind", Subject: "orders-key", Version: 9}}
	if _, _, err := r.Register(ctx, "orders-value", Input{Text: order, References: bad}); AsError(err).Code != CodeInvalidSchema {
		t.Errorf("unknown reference: %v", err)
	}
}
