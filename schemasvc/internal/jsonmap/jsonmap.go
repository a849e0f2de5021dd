// Package jsonmap relates JSON Schemas to Fluss columns, as avromap does
// for Avro: Check says whether JSON values a schema describes can become
// rows of a table (by transcodesvc's JSON rules, docs/transcoding.md), and
// Derive writes the JSON Schema of a table's columns in the form fetchsvc
// writes rows as JSON.
package jsonmap

import (
	"bytes"
	"encoding/json"
	"fmt"
	neturl "net/url"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ferrygw/ferry/schemasvc/internal/tablefit"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// Schema is a compiled JSON Schema with its canonical form.
type Schema struct {
	root      *jsonschema.Schema
	canonical string
}

// Canonical is the schema's JSON with object keys sorted and no blanks:
// the form registrations are compared and ids derived by.
func (s *Schema) Canonical() string { return s.canonical }

// Parse compiles a JSON Schema (draft 7 unless it names another with
// $schema); refs are the texts of the schemas it references, by name.
func Parse(text string, refs map[string]string) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(text)))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	const url = "ferry:///schema.json"
	base, _ := neturl.Parse(url)
	for name, r := range refs {
		// A $ref resolves against the schema's own URL: a relative
		// reference name ("other.json") is found there.
		u, err := neturl.Parse(name)
		if err != nil {
			return nil, fmt.Errorf("reference name %q: %w", name, err)
		}
		rdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(r)))
		if err != nil {
			return nil, fmt.Errorf("referenced schema %s: %w", name, err)
		}
		if err := c.AddResource(base.ResolveReference(u).String(), rdoc); err != nil {
			return nil, fmt.Errorf("referenced schema %s: %w", name, err)
		}
	}
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	root, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, err
	}
	canon, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return nil, err
	}
	return &Schema{root: root, canonical: string(canon)}, nil
}

// Check reports the first reason JSON values of s could not become rows
// of t, or nil when they can.
func Check(s *Schema, t tablefit.Target) *tablefit.Mismatch {
	if t.Single != nil {
		return checkType("", s.root, t.Single.GetType(), true)
	}
	obj := deref(s.root)
	if !onlyTypes(obj, "object") || obj.Properties == nil {
		return &tablefit.Mismatch{Reason: "the schema is not an object with properties, one per column"}
	}
	return checkObject("", obj, t.Columns, t.IgnoreUnknown)
}

func checkObject(prefix string, obj *jsonschema.Schema, cols []*catalogv1.Field, ignoreUnknown bool) *tablefit.Mismatch {
	byName := map[string]*catalogv1.Field{}
	for _, c := range cols {
		byName[c.GetName()] = c
	}
	names := make([]string, 0, len(obj.Properties))
	for n := range obj.Properties {
		names = append(names, n)
	}
	slices.Sort(names) // the first mismatch is the same on every call
	for _, n := range names {
		col, ok := byName[n]
		if !ok {
			if ignoreUnknown {
				continue
			}
			return &tablefit.Mismatch{Field: prefix + n, Reason: "no column of that name (the table refuses unknown fields)"}
		}
		if m := checkType(prefix+n, obj.Properties[n], col.GetType(), slices.Contains(obj.Required, n)); m != nil {
			return m
		}
	}
	for _, c := range cols {
		if _, ok := obj.Properties[c.GetName()]; !ok && !c.GetType().GetNullable() {
			return &tablefit.Mismatch{Field: prefix + c.GetName(), Reason: fmt.Sprintf("column %s is %s and the schema has no property for it", c.GetName(), tablefit.TypeString(c.GetType()))}
		}
	}
	return nil
}

// checkType checks a property's schema against its column's type;
// required says whether the enclosing object requires the property.
func checkType(path string, s *jsonschema.Schema, col *catalogv1.DataType, required bool) *tablefit.Mismatch {
	s, nullable := unwrapNull(deref(s))
	if s == nil {
		return &tablefit.Mismatch{Field: path, Reason: "only a type, or one type or null (oneOf/anyOf), maps onto a column"}
	}
	if (nullable || !required) && !col.GetNullable() {
		why := "optional (not in required)"
		if nullable {
			why = "nullable"
		}
		return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("%s in the schema but the column is %s", why, tablefit.TypeString(col))}
	}
	if s.Types == nil || s.Types.IsEmpty() {
		return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("no type; column type %s needs one", tablefit.TypeString(col))}
	}
	var allowed []string
	switch col.GetRoot() {
	case catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN:
		allowed = []string{"boolean"}
	case catalogv1.TypeRoot_TYPE_ROOT_TINYINT, catalogv1.TypeRoot_TYPE_ROOT_SMALLINT, catalogv1.TypeRoot_TYPE_ROOT_INTEGER, catalogv1.TypeRoot_TYPE_ROOT_BIGINT:
		allowed = []string{"integer"}
	case catalogv1.TypeRoot_TYPE_ROOT_FLOAT, catalogv1.TypeRoot_TYPE_ROOT_DOUBLE, catalogv1.TypeRoot_TYPE_ROOT_DECIMAL:
		// Strings: "NaN" and the infinities for floats, exact decimals.
		allowed = []string{"number", "integer", "string"}
	case catalogv1.TypeRoot_TYPE_ROOT_CHAR, catalogv1.TypeRoot_TYPE_ROOT_STRING,
		catalogv1.TypeRoot_TYPE_ROOT_BINARY, catalogv1.TypeRoot_TYPE_ROOT_BYTES:
		allowed = []string{"string"}
	case catalogv1.TypeRoot_TYPE_ROOT_DATE, catalogv1.TypeRoot_TYPE_ROOT_TIME,
		catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ, catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ:
		allowed = []string{"string", "integer"}
	case catalogv1.TypeRoot_TYPE_ROOT_ARRAY:
		if !onlyTypes(s, "array") {
			return badType(path, s, col)
		}
		items, ok := s.Items.(*jsonschema.Schema)
		if s.Items2020 != nil {
			items, ok = s.Items2020, true
		}
		if !ok {
			return &tablefit.Mismatch{Field: path, Reason: "an array needs one items schema for column type " + tablefit.TypeString(col)}
		}
		return checkType(path+"[]", items, col.GetElement(), true)
	case catalogv1.TypeRoot_TYPE_ROOT_MAP:
		if k := col.GetKey().GetRoot(); k != catalogv1.TypeRoot_TYPE_ROOT_STRING && k != catalogv1.TypeRoot_TYPE_ROOT_CHAR {
			if !onlyTypes(s, "array") {
				return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("column type %s takes an array of [key, value] pairs", tablefit.TypeString(col))}
			}
			return nil
		}
		if !onlyTypes(s, "object") {
			return badType(path, s, col)
		}
		values, ok := s.AdditionalProperties.(*jsonschema.Schema)
		if !ok {
			return &tablefit.Mismatch{Field: path, Reason: "an object for column type " + tablefit.TypeString(col) + " needs an additionalProperties schema"}
		}
		return checkType(path+"{}", values, col.GetValue(), true)
	case catalogv1.TypeRoot_TYPE_ROOT_ROW:
		if !onlyTypes(s, "object") {
			return badType(path, s, col)
		}
		return checkObject(path+".", s, col.GetFields(), false)
	default:
		return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("column type %s has no JSON mapping", tablefit.TypeString(col))}
	}
	if !onlyTypes(s, allowed...) {
		return badType(path, s, col)
	}
	return nil
}

func badType(path string, s *jsonschema.Schema, col *catalogv1.DataType) *tablefit.Mismatch {
	return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("JSON type %s does not fit column type %s", strings.Join(s.Types.ToStrings(), ", "), tablefit.TypeString(col))}
}

// onlyTypes reports whether s has a type and every type it allows, null
// aside, is one of allowed.
func onlyTypes(s *jsonschema.Schema, allowed ...string) bool {
	if s.Types == nil || s.Types.IsEmpty() {
		return false
	}
	for _, t := range s.Types.ToStrings() {
		if t != "null" && !slices.Contains(allowed, t) {
			return false
		}
	}
	return true
}

// deref follows $ref to the schema it names.
func deref(s *jsonschema.Schema) *jsonschema.Schema {
	for s != nil && s.Ref != nil && s.Types == nil && s.Properties == nil {
		s = s.Ref
	}
	return s
}

// unwrapNull returns s without null: s itself (nullable when its types
// include null), or the one other branch of a oneOf/anyOf with a null
// branch; nil for a schema with several other branches.
func unwrapNull(s *jsonschema.Schema) (*jsonschema.Schema, bool) {
	branches := s.OneOf
	if len(branches) == 0 {
		branches = s.AnyOf
	}
	if len(branches) == 0 {
		return s, s.Types != nil && slices.Contains(s.Types.ToStrings(), "null")
	}
	var other *jsonschema.Schema
	nullable := false
	for _, b := range branches {
		b = deref(b)
		if b.Types != nil && slices.Equal(b.Types.ToStrings(), []string{"null"}) {
			nullable = true
			continue
		}
		if other != nil {
			return nil, false
		}
		other = b
	}
	if other == nil {
		return nil, false
	}
	inner, innerNull := unwrapNull(other)
	return inner, nullable || innerNull
}

// Derive writes the JSON Schema (draft 7) of an object of cols titled
// title: a property per column, NOT NULL columns required, nullable ones
// also allowing null.
func Derive(title string, cols []*catalogv1.Field) (string, error) {
	obj, err := deriveObject(cols)
	if err != nil {
		return "", err
	}
	obj["$schema"] = "http://json-schema.org/draft-07/schema#"
	obj["title"] = title
	return marshal(obj)
}

// DeriveSingle writes the JSON Schema of one column's values.
func DeriveSingle(col *catalogv1.Field) (string, error) {
	t, err := deriveType(col.GetType())
	if err != nil {
		return "", err
	}
	t["$schema"] = "http://json-schema.org/draft-07/schema#"
	return marshal(t)
}

func marshal(v map[string]any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	// A derived schema must be one the registry accepts.
	if _, err := Parse(string(b), nil); err != nil {
		return "", fmt.Errorf("derived schema does not compile: %w", err)
	}
	return string(b), nil
}

func deriveObject(cols []*catalogv1.Field) (map[string]any, error) {
	props := map[string]any{}
	required := []string{}
	for _, c := range cols {
		t, err := deriveType(c.GetType())
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.GetName(), err)
		}
		props[c.GetName()] = t
		if !c.GetType().GetNullable() {
			required = append(required, c.GetName())
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required}, nil
}

// deriveType is the JSON Schema of a column's values as fetchsvc writes
// them (fetchsvc/rebuild/json.go).
func deriveType(t *catalogv1.DataType) (map[string]any, error) {
	var out map[string]any
	typ := func(name string) map[string]any { return map[string]any{"type": name} }
	switch t.GetRoot() {
	case catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN:
		out = typ("boolean")
	case catalogv1.TypeRoot_TYPE_ROOT_TINYINT, catalogv1.TypeRoot_TYPE_ROOT_SMALLINT, catalogv1.TypeRoot_TYPE_ROOT_INTEGER, catalogv1.TypeRoot_TYPE_ROOT_BIGINT:
		out = typ("integer")
	case catalogv1.TypeRoot_TYPE_ROOT_FLOAT, catalogv1.TypeRoot_TYPE_ROOT_DOUBLE:
		// NaN and the infinities are written as strings.
		out = map[string]any{"type": []any{"number", "string"}}
	case catalogv1.TypeRoot_TYPE_ROOT_DECIMAL:
		out = typ("number")
	case catalogv1.TypeRoot_TYPE_ROOT_CHAR, catalogv1.TypeRoot_TYPE_ROOT_STRING:
		out = typ("string")
	case catalogv1.TypeRoot_TYPE_ROOT_BINARY, catalogv1.TypeRoot_TYPE_ROOT_BYTES:
		out = map[string]any{"type": "string", "contentEncoding": "base64"}
	case catalogv1.TypeRoot_TYPE_ROOT_DATE:
		out = map[string]any{"type": "string", "format": "date"}
	case catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ:
		out = map[string]any{"type": "string", "format": "date-time"}
	case catalogv1.TypeRoot_TYPE_ROOT_TIME, catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ:
		// Without a zone: not the RFC 3339 formats "time" and "date-time".
		out = typ("string")
	case catalogv1.TypeRoot_TYPE_ROOT_ARRAY:
		items, err := deriveType(t.GetElement())
		if err != nil {
			return nil, err
		}
		out = map[string]any{"type": "array", "items": items}
	case catalogv1.TypeRoot_TYPE_ROOT_MAP:
		values, err := deriveType(t.GetValue())
		if err != nil {
			return nil, err
		}
		if k := t.GetKey().GetRoot(); k == catalogv1.TypeRoot_TYPE_ROOT_STRING || k == catalogv1.TypeRoot_TYPE_ROOT_CHAR {
			out = map[string]any{"type": "object", "additionalProperties": values}
		} else {
			keys, err := deriveType(t.GetKey())
			if err != nil {
				return nil, err
			}
			pair := map[string]any{"type": "array", "items": []any{keys, values}, "minItems": 2, "maxItems": 2}
			out = map[string]any{"type": "array", "items": pair}
		}
	case catalogv1.TypeRoot_TYPE_ROOT_ROW:
		obj, err := deriveObject(t.GetFields())
		if err != nil {
			return nil, err
		}
		out = obj
	default:
		return nil, fmt.Errorf("column type %s has no JSON mapping", tablefit.TypeString(t))
	}
	if t.GetNullable() {
		switch tt := out["type"].(type) {
		case string:
			out["type"] = []any{tt, "null"}
		case []any:
			out["type"] = append(tt, "null")
		}
	}
	return out, nil
}
