package route

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protowire"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/protoschema"
	"github.com/ferrygw/ferry/transcodesvc/internal/convert"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

// Writer schemas of the framed-key tests, by id.
var (
	avroKeySchema   = avro.MustParse(`{"type":"record","name":"k","fields":[{"name":"id","type":"long"}]}`)
	avroValueSchema = avro.MustParse(`{"type":"record","name":"r","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"]}]}`)
	// A key schema without the primary key: it fits no record.
	avroNoIDSchema = avro.MustParse(`{"type":"record","name":"k","fields":[{"name":"other","type":"long"}]}`)
)

func avroFramed(t testing.TB, id int32, schema avro.Schema, v any) *string {
	t.Helper()
	b, err := avro.Marshal(schema, v)
	if err != nil {
		t.Fatal(err)
	}
	return s(string(append(schemas.AppendFrame(nil, id), b...)))
}

// sameKV checks that pieces hold the same KV records, in the same buckets,
// as want: the framed keys name the rows the JSON keys name.
func sameKV(t *testing.T, pieces, want []Piece, records int) {
	t.Helper()
	if len(pieces) != len(want) {
		t.Fatalf("%d pieces, JSON keys give %d", len(pieces), len(want))
	}
	n := 0
	for i, p := range pieces {
		got, exp := kvRecords(t, p), kvRecords(t, want[i])
		if p.Bucket != want[i].Bucket || len(got) != len(exp) {
			t.Fatalf("piece %d: bucket %d with %d records, JSON: bucket %d with %d", i, p.Bucket, len(got), want[i].Bucket, len(exp))
		}
		for j := range got {
			if !bytes.Equal(got[j].Key, exp[j].Key) || !bytes.Equal(got[j].Row, exp[j].Row) || (got[j].Row == nil) != (exp[j].Row == nil) {
				t.Errorf("piece %d record %d: key %x row %x, JSON: key %x row %x", i, j, got[j].Key, got[j].Row, exp[j].Key, exp[j].Row)
			}
			n++
		}
	}
	if n != records {
		t.Fatalf("%d KV records, want %d", n, records)
	}
}

// jsonKeyPieces splits the JSON-keyed equivalent of the framed tests'
// batch: upsert 5 with its key, upsert 5 without, delete 5, upsert 6.
func jsonKeyPieces(t *testing.T) []Piece {
	t.Helper()
	pieces, fail := compile(t, pkMapping(), time.Now()).split(t, 0,
		rec{key: s(`{"id": 5}`), value: s(`{"id": 5, "name": "a"}`)},
		rec{value: s(`{"id": 5, "name": "b"}`)},
		rec{key: s(`{"id": 5}`)},
		rec{key: s(`{"id": 6}`), value: s(`{"id": 6, "name": "c"}`)},
	)
	if fail != nil {
		t.Fatalf("JSON failure: %v %v", fail.Message, fail.Records)
	}
	return pieces
}

// TestAvroKeys: Avro-framed keys of a record of the primary key name the
// same rows as JSON keys, tombstones included; a key with an unknown id,
// without magic byte, truncated, without the primary key, or naming
// another primary key than its value fails its record and the batch.
func TestAvroKeys(t *testing.T) {
	m := pkMapping()
	m.Mapping = &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO, KeyFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO}
	f := compile(t, m, time.Now())
	known := map[int32]*schemas.Schema{3: {ID: 3, Avro: avroValueSchema}, 4: {ID: 4, Avro: avroKeySchema}, 5: {ID: 5, Avro: avroNoIDSchema}}
	f.values.UseSchemas(known)
	f.keys.UseSchemas(known)
	key := func(id int64) *string { return avroFramed(t, 4, avroKeySchema, map[string]any{"id": id}) }
	value := func(id int64, name string) *string {
		return avroFramed(t, 3, avroValueSchema, map[string]any{"id": id, "name": name})
	}
	recs := []rec{
		{key: key(5), value: value(5, "a")},
		{value: value(5, "b")},
		{key: key(5)}, // tombstone
		{key: key(6), value: value(6, "c")},
	}
	pieces, fail := f.split(t, 0, recs...)
	if fail != nil {
		t.Fatalf("failure: %v %v", fail.Message, fail.Records)
	}
	sameKV(t, pieces, jsonKeyPieces(t), len(recs))

	if ids := f.router.KeyPlan().KeySchemaIDs(batchOf(recs...), nil); len(ids) != 1 || ids[0] != 4 {
		t.Errorf("key schema ids %v, want [4]", ids)
	}
	unknown := string(append(schemas.AppendFrame(nil, 99), 10))
	_, fail = f.split(t, 0,
		rec{key: key(7), value: value(7, "d")},
		rec{key: s(unknown)},                                                          // tombstone, unknown id
		rec{key: s(`{"id": 8}`), value: value(8, "e")},                                // JSON, not framed
		rec{key: s(string(schemas.AppendFrame(nil, 4)))},                              // no Avro record after the frame
		rec{key: avroFramed(t, 5, avroNoIDSchema, map[string]any{"other": int64(9)})}, // no primary key
	)
	checkRecordErrors(t, fail, map[int]string{
		1: "record key: unknown schema id 99",
		2: "record key: missing magic byte",
		3: "record key: truncated payload",
		4: "record key: schema id 5 does not fit topic t: column id is BIGINT NOT NULL but the schema has no field id",
	})
	// Placement errors are found once every record converts.
	_, fail = f.split(t, 0, rec{key: key(7), value: value(7, "d")}, rec{key: key(10), value: value(11, "f")})
	checkRecordErrors(t, fail, map[int]string{1: "the record key names another primary key than the value holds"})
}

// TestProtobufAndJSONSchemaKeys: Protobuf and JSON Schema framed keys name
// the same rows as JSON keys; a JSON Schema key with a field that is not
// part of the primary key fails its record.
func TestProtobufAndJSONSchemaKeys(t *testing.T) {
	fd, err := protoschema.Registered(context.Background(), &schemav1.Schema{Id: 4, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
		Text: `syntax = "proto3"; message Key { int64 id = 1; }`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		format catalogv1.ValueFormat
		schema *schemas.Schema
		key    func(id int64) *string
	}{
		{"protobuf", catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF, &schemas.Schema{ID: 4, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Proto: fd},
			func(id int64) *string {
				b := append(schemas.AppendFrame(nil, 4), 0)
				return s(string(protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), uint64(id))))
			}},
		{"json-schema", catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA, &schemas.Schema{ID: 4, Type: schemav1.SchemaType_SCHEMA_TYPE_JSON},
			func(id int64) *string { return s(string(schemas.AppendFrame(nil, 4)) + fmt.Sprintf(`{"id": %d}`, id)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := pkMapping()
			m.Mapping.KeyFormat = tc.format
			f := compile(t, m, time.Now())
			f.keys.UseSchemas(map[int32]*schemas.Schema{4: tc.schema})
			recs := []rec{
				{key: tc.key(5), value: s(`{"id": 5, "name": "a"}`)},
				{value: s(`{"id": 5, "name": "b"}`)},
				{key: tc.key(5)},
				{key: tc.key(6), value: s(`{"id": 6, "name": "c"}`)},
			}
			pieces, fail := f.split(t, 0, recs...)
			if fail != nil {
				t.Fatalf("failure: %v %v", fail.Message, fail.Records)
			}
			sameKV(t, pieces, jsonKeyPieces(t), len(recs))
		})
	}
	m := pkMapping()
	m.Mapping.KeyFormat = catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA
	f := compile(t, m, time.Now())
	f.keys.UseSchemas(map[int32]*schemas.Schema{4: {ID: 4, Type: schemav1.SchemaType_SCHEMA_TYPE_JSON}, 5: {ID: 5, Avro: avroKeySchema}})
	_, fail := f.split(t, 0,
		rec{key: s(string(schemas.AppendFrame(nil, 4)) + `{"id": 1, "name": "x"}`)},
		rec{key: s(string(schemas.AppendFrame(nil, 5)) + `{"id": 1}`)},
	)
	checkRecordErrors(t, fail, map[int]string{0: "record key: ", 1: "record key: schema id 5 is of type AVRO, not a JSON Schema"})
}

// TestFramedKeyColumn: with kafka.key.column, an Avro or JSON Schema framed
// key is one value that fills the column (unframed before the batch is
// split, as transcodesvc's server does); a schema of another type than the
// column's fails the record.
func TestFramedKeyColumn(t *testing.T) {
	avroString := avro.MustParse(`"string"`)
	for _, tc := range []struct {
		name   string
		format catalogv1.ValueFormat
		known  map[int32]*schemas.Schema
		key    func(v string) *string
		bad    *string
		badMsg string
	}{
		{"avro", catalogv1.ValueFormat_VALUE_FORMAT_AVRO, map[int32]*schemas.Schema{4: {ID: 4, Avro: avroString}, 5: {ID: 5, Avro: avro.MustParse(`"long"`)}},
			func(v string) *string { return avroFramed(t, 4, avroString, v) },
			avroFramed(t, 5, avro.MustParse(`"long"`), int64(3)), "record key: schema id 5 does not fit topic t: field id: Avro int or long cannot fill column id of type STRING NOT NULL"},
		{"json-schema", catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA, map[int32]*schemas.Schema{4: {ID: 4, Type: schemav1.SchemaType_SCHEMA_TYPE_JSON}},
			func(v string) *string { return s(string(schemas.AppendFrame(nil, 4)) + `"` + v + `"`) },
			s(string(schemas.AppendFrame(nil, 4)) + `{"id": "user-1"}`), "record key: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mapping(2, col("id", tString, false), col("name", tString, true))
			m.Kind = catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY
			m.PrimaryKeys = []string{"id"}
			m.BucketKeys = []string{"id"}
			m.Mapping.KeyColumn = "id"
			m.Mapping.KeyFormat = tc.format
			kp, err := convert.CompileFramedKeys(m)
			if err != nil || kp == nil {
				t.Fatalf("CompileFramedKeys: %v, %v", kp, err)
			}
			unframer := kp.NewConverter(memory.DefaultAllocator)
			unframer.UseSchemas(tc.known)
			b, err := unframer.UnframeKeys(batchOf(rec{key: tc.key("user-1"), value: s(`{"name": "a"}`)}, rec{key: tc.key("")}, rec{value: s(`{}`)}))
			if err != nil {
				t.Fatal(err)
			}
			if string(b.Records[0].Key) != "user-1" || b.Records[1].Key == nil || len(b.Records[1].Key) != 0 || b.Records[2].Key != nil {
				t.Fatalf("unframed keys %q, %q, %v; want user-1, an empty key and none", b.Records[0].Key, b.Records[1].Key, b.Records[2].Key)
			}
			b.Records = b.Records[:2] // a record without key fails: the key is the NOT NULL primary key
			f := compile(t, m, time.Now())
			pieces, err := f.router.Split(b, 0, f.values, f.keys, convert.EncodingIPC)
			if err != nil {
				t.Fatal(err)
			}
			m.Mapping.KeyFormat = catalogv1.ValueFormat_VALUE_FORMAT_RAW
			raw, fail := compile(t, m, time.Now()).split(t, 0, rec{key: s("user-1"), value: s(`{"name": "a"}`)}, rec{key: s("")})
			if fail != nil {
				t.Fatalf("raw keys: %v %v", fail.Message, fail.Records)
			}
			sameKV(t, pieces, raw, 2)
			_, err = unframer.UnframeKeys(batchOf(rec{key: tc.key("x")}, rec{key: tc.bad}))
			var cf *convert.Failure
			if !errors.As(err, &cf) {
				t.Fatalf("bad key: %v, want a record failure", err)
			}
			checkRecordErrors(t, cf, map[int]string{1: tc.badMsg})
		})
	}
}

// BenchmarkSplitAvroKeys is BenchmarkSplit's primary-key table with Avro
// keys and values, to compare with its JSON keys and values.
func BenchmarkSplitAvroKeys(b *testing.B) {
	m := pkMapping()
	m.Mapping = &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO, KeyFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO}
	valueSchema := avro.MustParse(`{"type":"record","name":"r","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"]},{"name":"v","type":["null","int"]}]}`)
	p, err := convert.Compile(m)
	if err != nil {
		b.Fatal(err)
	}
	r, err := Compile(m, p)
	if err != nil {
		b.Fatal(err)
	}
	known := map[int32]*schemas.Schema{3: {ID: 3, Avro: valueSchema}, 4: {ID: 4, Avro: avroKeySchema}}
	values, keys := p.NewConverter(memory.DefaultAllocator), r.KeyPlan().NewConverter(memory.DefaultAllocator)
	values.UseSchemas(known)
	keys.UseSchemas(known)
	var recs []rec
	for i := range 1000 {
		recs = append(recs, rec{key: avroFramed(b, 4, avroKeySchema, map[string]any{"id": int64(i)}),
			value: avroFramed(b, 3, valueSchema, map[string]any{"id": int64(i), "name": fmt.Sprintf("name-%d", i), "v": i % 100})})
	}
	batch := batchOf(recs...)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Split(batch, 0, values, keys, convert.EncodingIPC); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/record")
}
