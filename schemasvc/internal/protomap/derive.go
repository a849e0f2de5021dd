package protomap

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/ferrygw/ferry/schemasvc/internal/tablefit"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/protoschema"
)

// Derive writes the proto3 schema of a message of cols named name in
// package pkg: a field per column in the columns' order, numbered from 1;
// nullable scalar columns `optional`, so that NULL (absent) and the
// default value stay apart; each column type the field type of
// protoschema.Derived (TIMESTAMP google.protobuf.Timestamp, DECIMAL
// confluent.type.Decimal, ...); ROW columns a message nested in the one
// that uses it. The text depends
// only on its arguments, so the schema's id is stable.
func Derive(name, pkg string, cols []*catalogv1.Field) (string, error) {
	d := &deriver{}
	var body strings.Builder
	if err := d.message(&body, "", identifier(name), cols); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\n")
	if p := packageName(pkg); p != "" {
		fmt.Fprintf(&b, "package %s;\n", p)
	}
	if len(d.imports) > 0 {
		b.WriteString("\n")
		for _, imp := range slices.Sorted(maps.Keys(d.imports)) {
			fmt.Fprintf(&b, "import %q;\n", imp)
		}
	}
	b.WriteString("\n")
	b.WriteString(body.String())
	text := b.String()
	// A derived schema must be one the registry accepts.
	if _, err := Parse(text, nil); err != nil {
		return "", fmt.Errorf("derived schema does not compile: %w", err)
	}
	return text, nil
}

type deriver struct {
	imports map[string]bool // the files the fields' types need
}

var fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// message writes message name with a field per column, indented by indent.
func (d *deriver) message(b *strings.Builder, indent, name string, cols []*catalogv1.Field) error {
	taken := map[string]bool{name: true}
	for _, c := range cols {
		taken[c.GetName()] = true
	}
	var nested strings.Builder
	fmt.Fprintf(b, "%smessage %s {\n", indent, name)
	for i, c := range cols {
		if !fieldName.MatchString(c.GetName()) {
			return fmt.Errorf("column name %q is not a Protobuf field name (fields map to columns by name)", c.GetName())
		}
		typ, err := d.fieldType(&nested, indent+"  ", c, taken)
		if err != nil {
			return fmt.Errorf("column %s: %w", c.GetName(), err)
		}
		fmt.Fprintf(b, "%s  %s %s = %d;\n", indent, typ, c.GetName(), i+1)
	}
	b.WriteString(nested.String())
	fmt.Fprintf(b, "%s}\n", indent)
	return nil
}

// fieldType is the type of column c's field, with its label: repeated,
// map<...>, or optional for a nullable scalar. The messages of ROW types
// are written to nested.
func (d *deriver) fieldType(nested *strings.Builder, indent string, c *catalogv1.Field, taken map[string]bool) (string, error) {
	t := c.GetType()
	switch t.GetRoot() {
	case catalogv1.TypeRoot_TYPE_ROOT_ARRAY:
		if isContainer(t.GetElement()) {
			return "", fmt.Errorf("%s: Protobuf has no repeated field of repeated fields or maps", tablefit.TypeString(t))
		}
		elem, err := d.valueType(nested, indent, c.GetName(), t.GetElement(), taken)
		if err != nil {
			return "", err
		}
		return "repeated " + elem, nil
	case catalogv1.TypeRoot_TYPE_ROOT_MAP:
		key, ok := mapKeys[t.GetKey().GetRoot()]
		if !ok {
			return "", fmt.Errorf("%s: Protobuf map keys are integers, bool or string", tablefit.TypeString(t))
		}
		if isContainer(t.GetValue()) {
			return "", fmt.Errorf("%s: Protobuf map values are not repeated fields or maps", tablefit.TypeString(t))
		}
		value, err := d.valueType(nested, indent, c.GetName(), t.GetValue(), taken)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("map<%s, %s>", key, value), nil
	}
	typ, err := d.valueType(nested, indent, c.GetName(), t, taken)
	if err != nil {
		return "", err
	}
	// Messages have presence already: a ROW, and the value messages
	// (whose import path is where protoschema.Derived says they live).
	_, imp, _ := protoschema.Derived(types.Root(t.GetRoot()))
	message := t.GetRoot() == catalogv1.TypeRoot_TYPE_ROOT_ROW || imp != ""
	if t.GetNullable() && !message {
		return "optional " + typ, nil // messages have presence already
	}
	return typ, nil
}

var mapKeys = map[catalogv1.TypeRoot]string{
	catalogv1.TypeRoot_TYPE_ROOT_STRING:   "string",
	catalogv1.TypeRoot_TYPE_ROOT_CHAR:     "string",
	catalogv1.TypeRoot_TYPE_ROOT_TINYINT:  "int32",
	catalogv1.TypeRoot_TYPE_ROOT_SMALLINT: "int32",
	catalogv1.TypeRoot_TYPE_ROOT_INTEGER:  "int32",
	catalogv1.TypeRoot_TYPE_ROOT_BIGINT:   "int64",
	catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN:  "bool",
}

func isContainer(t *catalogv1.DataType) bool {
	return t.GetRoot() == catalogv1.TypeRoot_TYPE_ROOT_ARRAY || t.GetRoot() == catalogv1.TypeRoot_TYPE_ROOT_MAP
}

// valueType is the Protobuf type of one value of t; a ROW becomes a
// message nested in the enclosing one, named after column col.
func (d *deriver) valueType(nested *strings.Builder, indent, col string, t *catalogv1.DataType, taken map[string]bool) (string, error) {
	if name, imp, ok := protoschema.Derived(types.Root(t.GetRoot())); ok {
		if imp != "" {
			if d.imports == nil {
				d.imports = map[string]bool{}
			}
			d.imports[imp] = true
		}
		return name, nil
	}
	switch t.GetRoot() {
	case catalogv1.TypeRoot_TYPE_ROOT_ROW:
		name := messageName(col, taken)
		taken[name] = true
		if err := d.message(nested, indent, name, t.GetFields()); err != nil {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("column type %s has no Protobuf mapping", tablefit.TypeString(t))
}

// messageName names the message of ROW column col: col in CamelCase,
// "Row" appended while the name is taken in the enclosing message.
func messageName(col string, taken map[string]bool) string {
	var b strings.Builder
	upper := true
	for _, r := range col {
		if r == '_' {
			upper = true
			continue
		}
		if upper && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		upper = false
		b.WriteRune(r)
	}
	name := b.String()
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		name = "Row" + name
	}
	for taken[name] {
		name += "Row"
	}
	return name
}

var notIdentChar = regexp.MustCompile(`[^A-Za-z0-9_]`)

// identifier makes a valid Protobuf name of s: letters, digits and
// underscores, not starting with a digit.
func identifier(s string) string {
	s = notIdentChar.ReplaceAllString(s, "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "_" + s
	}
	return s
}

// packageName makes a package of a database name, each dotted part an
// identifier.
func packageName(s string) string {
	if s == "" {
		return ""
	}
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = identifier(p)
	}
	return strings.Join(parts, ".")
}
