package rebuild

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/protoschema"
)

// TestFramedKeys: keys are written in kafka.key.format, framed with the
// key schema's id: a record of the primary key (Avro, Protobuf, JSON
// Schema), or the key column's one value (Avro, JSON Schema); a NULL key
// column is a null key.
func TestFramedKeys(t *testing.T) {
	cols := []types.Field{{Name: "id", Type: dt(types.BigInt, false)}, {Name: "k", Type: dt(types.String, true)}, {Name: "v", Type: dt(types.String, true)}}
	schema, err := types.ArrowSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	rb.Field(0).(*array.Int64Builder).AppendValues([]int64{42, 7}, nil)
	rb.Field(1).(*array.StringBuilder).AppendValues([]string{"user-1", ""}, []bool{true, false})
	rb.Field(2).(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
	rec := rb.NewRecordBatch()
	defer rec.Release()
	frame := func(id int32, payload ...byte) string {
		return string(append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), payload...))
	}
	pk := func(f catalogv1.ValueFormat) *catalogv1.TopicMapping {
		return &catalogv1.TopicMapping{Topic: "t", Kind: catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, PrimaryKeys: []string{"id"},
			Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON, KeyFormat: f}}
	}
	keyColumn := func(f catalogv1.ValueFormat) *catalogv1.TopicMapping {
		return &catalogv1.TopicMapping{Topic: "t", Kind: catalogv1.TableKind_TABLE_KIND_LOG,
			Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON, KeyColumn: "k", KeyFormat: f}}
	}
	fd, err := protoschema.Registered(context.Background(), &schemav1.Schema{Id: 9, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
		Text: `syntax = "proto3"; message Key { int64 id = 1; }`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    *catalogv1.TopicMapping
		with func(*Plan) (*Plan, error)
		want []any // per row: the key as a string, or nil
	}{
		{"json primary key", pk(catalogv1.ValueFormat_VALUE_FORMAT_JSON), nil, []any{`{"id":42}`, `{"id":7}`}},
		{"avro primary key", pk(catalogv1.ValueFormat_VALUE_FORMAT_AVRO), func(p *Plan) (*Plan, error) {
			return p.WithAvroKey(9, avro.MustParse(`{"type":"record","name":"k","fields":[{"name":"id","type":"long"}]}`))
		}, []any{frame(9, 84), frame(9, 14)}},
		{"protobuf primary key", pk(catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF), func(p *Plan) (*Plan, error) { return p.WithProtobufKey(9, fd) },
			[]any{frame(9, 0, 8, 42), frame(9, 0, 8, 7)}},
		{"json-schema primary key", pk(catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA), func(p *Plan) (*Plan, error) { return p.WithJSONSchemaKey(9), nil },
			[]any{frame(9) + `{"id":42}`, frame(9) + `{"id":7}`}},
		{"raw key column", keyColumn(catalogv1.ValueFormat_VALUE_FORMAT_RAW), nil, []any{"user-1", nil}},
		{"avro key column", keyColumn(catalogv1.ValueFormat_VALUE_FORMAT_AVRO), func(p *Plan) (*Plan, error) { return p.WithAvroKey(9, avro.MustParse(`"string"`)) },
			[]any{frame(9, 12) + "user-1", nil}},
		{"json-schema key column", keyColumn(catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA), func(p *Plan) (*Plan, error) { return p.WithJSONSchemaKey(9), nil },
			[]any{frame(9) + `"user-1"`, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(tc.m, cols)
			if err != nil {
				t.Fatal(err)
			}
			if tc.with != nil {
				var r Record
				if err := p.Rebuild(&r, rec, 0, 0); err == nil {
					t.Error("a framed key was written without its schema")
				}
				if p, err = tc.with(p); err != nil {
					t.Fatal(err)
				}
			}
			for row, want := range tc.want {
				var r Record
				if err := p.Rebuild(&r, rec, row, 0); err != nil {
					t.Fatal(err)
				}
				switch {
				case want == nil && r.Key != nil:
					t.Errorf("row %d: key %q, want null", row, r.Key)
				case want != nil && string(r.Key) != want.(string):
					t.Errorf("row %d: key %q, want %q", row, r.Key, want)
				}
			}
		})
	}
}
