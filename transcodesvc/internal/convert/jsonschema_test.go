package convert

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

func jsonSchemaFramed(id int32, v string) []byte { return append(schemas.AppendFrame(nil, id), v...) }

// TestJSONSchemaValues: framed JSON of a registered JSON Schema fills the
// columns as plain JSON does; the framing, the id and its type are checked
// per record, and one bad record refuses the batch.
func TestJSONSchemaValues(t *testing.T) {
	m := avroMapping(fld("id", tBig(false)), fld("name", tString(true)))
	m.Mapping.ValueFormat = catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA
	m.Mapping.UnknownFields = catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT
	p := mustCompile(t, m)
	if !p.Framed() {
		t.Fatal("a JSON Schema plan must be framed")
	}
	c := p.NewConverter(memory.DefaultAllocator)
	c.UseSchemas(map[int32]*schemas.Schema{
		4: {ID: 4, Type: schemav1.SchemaType_SCHEMA_TYPE_JSON},
		5: {ID: 5, Type: schemav1.SchemaType_SCHEMA_TYPE_AVRO},
	})

	_, err := c.Convert(valuesBatch(
		jsonSchemaFramed(4, `{"id":1,"name":"a"}`),
		[]byte(`{"id":2}`),
		jsonSchemaFramed(9, `{"id":3}`),
		jsonSchemaFramed(5, `{"id":4}`),
		jsonSchemaFramed(4, `{"id":5,"extra":true}`),
		jsonSchemaFramed(4, `{"id":"six"}`),
		nil,
	))
	var f *Failure
	if !errors.As(err, &f) || len(f.Records) != 6 {
		t.Fatalf("want 6 record errors, got %v", err)
	}
	for i, want := range []string{"missing magic byte", "unknown schema id 9", "schema id 5 is of type AVRO, not a JSON Schema",
		`unknown field "extra"`, "field id:", "record value is null (a tombstone)"} {
		if r := f.Records[i]; r.BatchIndex != i+1 || !strings.Contains(r.Message, want) {
			t.Errorf("record error %d: %+v, want record %d with %q", i, r, i+1, want)
		}
	}

	out, err := c.Convert(valuesBatch(jsonSchemaFramed(4, `{"id":1,"name":"a"}`), jsonSchemaFramed(4, `{"id":2}`)))
	if err != nil {
		t.Fatal(err)
	}
	rec := readIPC(t, out.IPC, p.Schema)
	defer rec.Release()
	var got [][]any
	for i := 0; i < int(rec.NumRows()); i++ {
		got = append(got, []any{cell(rec.Column(0), i), cell(rec.Column(1), i)})
	}
	if want := [][]any{{int64(1), "a"}, {int64(2), nil}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}
