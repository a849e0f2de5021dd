// Package avromap relates Avro schemas to Fluss columns: Check says whether
// records written with a schema can become rows of a table (and, when not,
// which field and why), Derive writes the Avro schema of a table's columns.
// Both follow the type table of docs/schema-registry.md.
package avromap

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/ferrygw/ferry/schemasvc/internal/tablefit"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// Parse parses an Avro schema text with the named types of refs (the texts
// of the schemas it references) known, without touching hamba's global
// cache: two subjects may define the same record name differently.
func Parse(text string, refs []string) (avro.Schema, error) {
	cache := &avro.SchemaCache{}
	for _, r := range refs {
		if _, err := avro.ParseWithCache(r, "", cache); err != nil {
			return nil, fmt.Errorf("referenced schema: %w", err)
		}
	}
	return avro.ParseWithCache(text, "", cache)
}

// Canonical is the form two registrations are compared and ids derived by:
// hamba's normalized JSON, which keeps logical types (unlike the Parsing
// Canonical Form) so that a decimal and plain bytes stay different schemas.
func Canonical(s avro.Schema) string { return s.String() }

// Check reports the first reason records of schema s could not become rows
// of t, or nil when they can.
func Check(s avro.Schema, t tablefit.Target) *tablefit.Mismatch {
	if t.Single != nil {
		return checkType("", s, t.Single.GetType())
	}
	rec, ok := deref(s).(*avro.RecordSchema)
	if !ok {
		return &tablefit.Mismatch{Reason: fmt.Sprintf("the schema is %s, not a record of the table's columns", s.Type())}
	}
	return checkFields("", rec, t.Columns, t.IgnoreUnknown)
}

func checkFields(prefix string, rec *avro.RecordSchema, cols []*catalogv1.Field, ignoreUnknown bool) *tablefit.Mismatch {
	byName := map[string]*catalogv1.Field{}
	for _, c := range cols {
		byName[c.GetName()] = c
	}
	seen := map[string]bool{}
	for _, f := range rec.Fields() {
		path := prefix + f.Name()
		col, ok := byName[f.Name()]
		if !ok {
			if ignoreUnknown {
				continue
			}
			return &tablefit.Mismatch{Field: path, Reason: "no column of that name (the table refuses unknown fields)"}
		}
		seen[f.Name()] = true
		if m := checkType(path, f.Type(), col.GetType()); m != nil {
			return m
		}
	}
	for _, c := range cols {
		if !seen[c.GetName()] && !c.GetType().GetNullable() {
			return &tablefit.Mismatch{Field: prefix + c.GetName(), Reason: fmt.Sprintf("column %s is %s and the schema has no field for it", c.GetName(), tablefit.TypeString(c.GetType()))}
		}
	}
	return nil
}

// checkType checks a field's schema against its column's type.
func checkType(path string, s avro.Schema, col *catalogv1.DataType) *tablefit.Mismatch {
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		inner, nullable := unwrapNullable(u)
		if inner == nil {
			return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("union %s: only [\"null\", T] unions map onto a column", u.String())}
		}
		if nullable && !col.GetNullable() {
			return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("optional in the schema but the column is %s", tablefit.TypeString(col))}
		}
		return checkType(path, inner, col)
	}
	if s.Type() == avro.Null {
		return &tablefit.Mismatch{Field: path, Reason: "type null maps onto no column"}
	}
	bad := func() *tablefit.Mismatch {
		return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("Avro %s does not fit column type %s", describe(s), tablefit.TypeString(col))}
	}
	logical := logicalOf(s)
	switch col.GetRoot() {
	case catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN:
		if s.Type() != avro.Boolean {
			return bad()
		}
	case catalogv1.TypeRoot_TYPE_ROOT_TINYINT, catalogv1.TypeRoot_TYPE_ROOT_SMALLINT, catalogv1.TypeRoot_TYPE_ROOT_INTEGER:
		if s.Type() != avro.Int || logical != nil {
			return bad()
		}
	case catalogv1.TypeRoot_TYPE_ROOT_BIGINT:
		if (s.Type() != avro.Int && s.Type() != avro.Long) || logical != nil {
			return bad()
		}
	case catalogv1.TypeRoot_TYPE_ROOT_FLOAT:
		if s.Type() != avro.Float {
			return bad()
		}
	case catalogv1.TypeRoot_TYPE_ROOT_DOUBLE:
		if s.Type() != avro.Double && s.Type() != avro.Float {
			return bad()
		}
	case catalogv1.TypeRoot_TYPE_ROOT_DECIMAL:
		d, ok := logical.(*avro.DecimalLogicalSchema)
		if !ok {
			return bad()
		}
		if d.Scale() != int(col.GetScale()) || d.Precision() > int(col.GetPrecision()) {
			return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("decimal(%d, %d) does not fit column type %s (same scale, precision at most the column's)", d.Precision(), d.Scale(), tablefit.TypeString(col))}
		}
	case catalogv1.TypeRoot_TYPE_ROOT_CHAR, catalogv1.TypeRoot_TYPE_ROOT_STRING:
		if (s.Type() != avro.String && s.Type() != avro.Enum) || (logical != nil && !isLogical(logical, avro.UUID)) {
			return bad()
		}
	case catalogv1.TypeRoot_TYPE_ROOT_BINARY, catalogv1.TypeRoot_TYPE_ROOT_BYTES:
		if (s.Type() != avro.Bytes && s.Type() != avro.Fixed) || logical != nil {
			return bad()
		}
	case catalogv1.TypeRoot_TYPE_ROOT_DATE:
		if s.Type() != avro.Int || !isLogical(logical, avro.Date) {
			return bad()
		}
	case catalogv1.TypeRoot_TYPE_ROOT_TIME:
		if !(s.Type() == avro.Int && isLogical(logical, avro.TimeMillis)) && !(s.Type() == avro.Long && isLogical(logical, avro.TimeMicros)) {
			return bad()
		}
	case catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ:
		if s.Type() != avro.Long || !(isLogical(logical, avro.LocalTimestampMillis) || isLogical(logical, avro.LocalTimestampMicros)) {
			return bad()
		}
	case catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ:
		if s.Type() != avro.Long || !(isLogical(logical, avro.TimestampMillis) || isLogical(logical, avro.TimestampMicros)) {
			return bad()
		}
	case catalogv1.TypeRoot_TYPE_ROOT_ARRAY:
		a, ok := s.(*avro.ArraySchema)
		if !ok {
			return bad()
		}
		return checkType(path+"[]", a.Items(), col.GetElement())
	case catalogv1.TypeRoot_TYPE_ROOT_MAP:
		m, ok := s.(*avro.MapSchema)
		if !ok {
			return bad()
		}
		if k := col.GetKey().GetRoot(); k != catalogv1.TypeRoot_TYPE_ROOT_STRING && k != catalogv1.TypeRoot_TYPE_ROOT_CHAR {
			return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("an Avro map has string keys; column type %s does not", tablefit.TypeString(col))}
		}
		return checkType(path+"{}", m.Values(), col.GetValue())
	case catalogv1.TypeRoot_TYPE_ROOT_ROW:
		r, ok := s.(*avro.RecordSchema)
		if !ok {
			return bad()
		}
		// Nested ROW fields are matched strictly: Fluss's ROW has no place
		// for a field it does not name.
		return checkFields(path+".", r, col.GetFields(), false)
	default:
		return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("column type %s has no Avro mapping", tablefit.TypeString(col))}
	}
	return nil
}

// deref follows a reference to a named type to its definition.
func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// unwrapNullable returns T of ["null", T] or [T, "null"] (nullable) or of
// [T] (not nullable); nil for any other union.
func unwrapNullable(u *avro.UnionSchema) (avro.Schema, bool) {
	var inner avro.Schema
	nullable := false
	for _, t := range u.Types() {
		if t.Type() == avro.Null {
			if nullable {
				return nil, false
			}
			nullable = true
			continue
		}
		if inner != nil {
			return nil, false
		}
		inner = t
	}
	return inner, nullable
}

func logicalOf(s avro.Schema) avro.LogicalSchema {
	if l, ok := s.(avro.LogicalTypeSchema); ok {
		return l.Logical()
	}
	return nil
}

func isLogical(l avro.LogicalSchema, t avro.LogicalType) bool { return l != nil && l.Type() == t }

// describe names an Avro type with its logical type, e.g. "long
// (timestamp-millis)".
func describe(s avro.Schema) string {
	if l := logicalOf(s); l != nil {
		return fmt.Sprintf("%s (%s)", s.Type(), l.Type())
	}
	return string(s.Type())
}

// Derive writes the Avro schema of a record of cols named name in
// namespace: each column a field of the same name, nullable columns as
// ["null", T] with a null default.
func Derive(name, namespace string, cols []*catalogv1.Field) (string, error) {
	fields, err := deriveFields(name, cols)
	if err != nil {
		return "", err
	}
	rec := map[string]any{"type": "record", "name": avroName(name), "fields": fields}
	if namespace != "" {
		rec["namespace"] = avroNamespace(namespace)
	}
	return marshal(rec)
}

// DeriveSingle writes the Avro schema of one column's values.
func DeriveSingle(col *catalogv1.Field) (string, error) {
	t, err := deriveType(col.GetName(), col.GetType())
	if err != nil {
		return "", err
	}
	return marshal(t)
}

func marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	// Parse once: a derived schema must be one the registry accepts.
	if _, err := Parse(string(b), nil); err != nil {
		return "", fmt.Errorf("derived schema does not parse: %w", err)
	}
	return string(b), nil
}

func deriveFields(path string, cols []*catalogv1.Field) ([]any, error) {
	out := make([]any, 0, len(cols))
	for _, c := range cols {
		t, err := deriveType(path+"_"+c.GetName(), c.GetType())
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.GetName(), err)
		}
		f := map[string]any{"name": c.GetName(), "type": t}
		if c.GetType().GetNullable() {
			f["default"] = nil
		}
		out = append(out, f)
	}
	return out, nil
}

// deriveType is the Avro type of a column; path names nested records.
func deriveType(path string, t *catalogv1.DataType) (any, error) {
	var base any
	logical := func(typ, l string) map[string]any { return map[string]any{"type": typ, "logicalType": l} }
	switch t.GetRoot() {
	case catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN:
		base = "boolean"
	case catalogv1.TypeRoot_TYPE_ROOT_TINYINT, catalogv1.TypeRoot_TYPE_ROOT_SMALLINT, catalogv1.TypeRoot_TYPE_ROOT_INTEGER:
		base = "int"
	case catalogv1.TypeRoot_TYPE_ROOT_BIGINT:
		base = "long"
	case catalogv1.TypeRoot_TYPE_ROOT_FLOAT:
		base = "float"
	case catalogv1.TypeRoot_TYPE_ROOT_DOUBLE:
		base = "double"
	case catalogv1.TypeRoot_TYPE_ROOT_DECIMAL:
		d := logical("bytes", "decimal")
		d["precision"] = t.GetPrecision()
		d["scale"] = t.GetScale()
		base = d
	case catalogv1.TypeRoot_TYPE_ROOT_CHAR, catalogv1.TypeRoot_TYPE_ROOT_STRING:
		base = "string"
	case catalogv1.TypeRoot_TYPE_ROOT_BINARY, catalogv1.TypeRoot_TYPE_ROOT_BYTES:
		base = "bytes"
	case catalogv1.TypeRoot_TYPE_ROOT_DATE:
		base = logical("int", "date")
	case catalogv1.TypeRoot_TYPE_ROOT_TIME:
		if t.GetPrecision() > 3 {
			base = logical("long", "time-micros")
		} else {
			base = logical("int", "time-millis")
		}
	case catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ:
		if t.GetPrecision() > 3 {
			base = logical("long", "local-timestamp-micros")
		} else {
			base = logical("long", "local-timestamp-millis")
		}
	case catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ:
		if t.GetPrecision() > 3 {
			base = logical("long", "timestamp-micros")
		} else {
			base = logical("long", "timestamp-millis")
		}
	case catalogv1.TypeRoot_TYPE_ROOT_ARRAY:
		items, err := deriveType(path, t.GetElement())
		if err != nil {
			return nil, err
		}
		base = map[string]any{"type": "array", "items": items}
	case catalogv1.TypeRoot_TYPE_ROOT_MAP:
		if k := t.GetKey().GetRoot(); k != catalogv1.TypeRoot_TYPE_ROOT_STRING && k != catalogv1.TypeRoot_TYPE_ROOT_CHAR {
			return nil, fmt.Errorf("%s: Avro maps have string keys", tablefit.TypeString(t))
		}
		values, err := deriveType(path, t.GetValue())
		if err != nil {
			return nil, err
		}
		base = map[string]any{"type": "map", "values": values}
	case catalogv1.TypeRoot_TYPE_ROOT_ROW:
		fields, err := deriveFields(path, t.GetFields())
		if err != nil {
			return nil, err
		}
		base = map[string]any{"type": "record", "name": avroName(path), "fields": fields}
	default:
		return nil, fmt.Errorf("column type %s has no Avro mapping", tablefit.TypeString(t))
	}
	if t.GetNullable() {
		return []any{"null", base}, nil
	}
	return base, nil
}

var notNameChar = regexp.MustCompile(`[^A-Za-z0-9_]`)

// avroName makes a valid Avro name of s: letters, digits and underscores,
// not starting with a digit.
func avroName(s string) string {
	s = notNameChar.ReplaceAllString(s, "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "_" + s
	}
	return s
}

func avroNamespace(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = avroName(p)
	}
	return strings.Join(parts, ".")
}
