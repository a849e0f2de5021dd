package jsonmap

import (
	"strings"
	"testing"

	"github.com/ferrygw/ferry/schemasvc/internal/tablefit"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

func typ(root catalogv1.TypeRoot, nullable bool) *catalogv1.DataType {
	return &catalogv1.DataType{Root: root, Nullable: nullable}
}

func columns() []*catalogv1.Field {
	arr := typ(catalogv1.TypeRoot_TYPE_ROOT_ARRAY, true)
	arr.Element = typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, false)
	m := typ(catalogv1.TypeRoot_TYPE_ROOT_MAP, true)
	m.Key, m.Value = typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, false), typ(catalogv1.TypeRoot_TYPE_ROOT_BIGINT, true)
	im := typ(catalogv1.TypeRoot_TYPE_ROOT_MAP, true)
	im.Key, im.Value = typ(catalogv1.TypeRoot_TYPE_ROOT_INTEGER, false), typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)
	row := typ(catalogv1.TypeRoot_TYPE_ROOT_ROW, true)
	row.Fields = []*catalogv1.Field{{Name: "city", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, false)}}
	ltz := typ(catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ, true)
	ltz.Precision = 3
	return []*catalogv1.Field{
		{Name: "id", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_BIGINT, false)},
		{Name: "ok", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN, true)},
		{Name: "score", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_DOUBLE, true)},
		{Name: "raw", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_BYTES, true)},
		{Name: "day", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_DATE, true)},
		{Name: "at", Type: ltz},
		{Name: "tags", Type: arr},
		{Name: "counts", Type: m},
		{Name: "names", Type: im},
		{Name: "addr", Type: row},
	}
}

// Derive writes each type as fetchsvc writes it in JSON, and the derived
// schema fits its own columns.
func TestDerive(t *testing.T) {
	text, err := Derive("orders", columns())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"$schema":"http://json-schema.org/draft-07/schema#"`, `"title":"orders"`, `"required":["id"]`,
		`"id":{"type":"integer"}`, `"ok":{"type":["boolean","null"]}`, `"score":{"type":["number","string","null"]}`,
		`"raw":{"contentEncoding":"base64","type":["string","null"]}`, `"day":{"format":"date","type":["string","null"]}`,
		`"at":{"format":"date-time","type":["string","null"]}`, `"tags":{"items":{"type":"string"},"type":["array","null"]}`,
		`"counts":{"additionalProperties":{"type":["integer","null"]},"type":["object","null"]}`,
		`"names":{"items":{"items":[{"type":"integer"},{"type":["string","null"]}],"maxItems":2,"minItems":2,"type":"array"},"type":["array","null"]}`,
		`"addr":{"properties":{"city":{"type":"string"}},"required":["city"],"type":["object","null"]}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("derived schema lacks %s:\n%s", want, text)
		}
	}
	s, err := Parse(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := Check(s, tablefit.Target{Columns: columns()}); m != nil {
		t.Errorf("the derived schema does not fit its table: %v", m)
	}
}

func TestCheck(t *testing.T) {
	cols := columns()
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"integer"}}},"required":["id"]}`,
			"field tags[]: JSON type integer does not fit column type STRING NOT NULL"},
		{`{"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":["string","null"]}}},"required":["id"]}`,
			"field tags[]: nullable in the schema but the column is STRING NOT NULL"},
		{`{"type":"object","properties":{"id":{"type":"integer"},"addr":{"type":"object","properties":{"zip":{"type":"string"}}}},"required":["id"]}`,
			"field addr.zip: no column of that name (the table refuses unknown fields)"},
		{`{"type":"object","properties":{"id":{"$ref":"#/definitions/ID"}},"required":["id"],"definitions":{"ID":{"type":"string"}}}`,
			"field id: JSON type string does not fit column type BIGINT NOT NULL"},
		{`{"type":"object","properties":{"id":{"type":"integer"},"ok":{}},"required":["id"]}`,
			"field ok: no type; column type BOOLEAN needs one"},
		{`{"type":"array"}`, "the schema is not an object with properties, one per column"},
	} {
		s, err := Parse(tc.schema, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		if m := Check(s, tablefit.Target{Columns: cols}); m == nil || m.Error() != tc.want {
			t.Errorf("%s: got %v, want %s", tc.schema, m, tc.want)
		}
	}
	// $ref to a definition of the right type, and unknown fields a table ignores.
	s, err := Parse(`{"type":"object","properties":{"id":{"$ref":"#/definitions/ID"},"extra":{"type":"string"}},"required":["id"],"definitions":{"ID":{"type":"integer"}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := Check(s, tablefit.Target{Columns: cols, IgnoreUnknown: true}); m != nil {
		t.Errorf("fitting schema refused: %v", m)
	}
}

// A $ref to a referenced schema (registered under another subject) by its
// reference name resolves, and its type is checked.
func TestReferences(t *testing.T) {
	s, err := Parse(`{"type":"object","properties":{"id":{"$ref":"id.json"}},"required":["id"]}`, map[string]string{"id.json": `{"type":"string"}`})
	if err != nil {
		t.Fatal(err)
	}
	if m := Check(s, tablefit.Target{Columns: columns()}); m == nil || m.Error() != "field id: JSON type string does not fit column type BIGINT NOT NULL" {
		t.Errorf("got %v", m)
	}
}
