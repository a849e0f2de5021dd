// Package tablefit describes what a registered schema must fit (a table's
// columns, or one column) and why one does not, for every schema language.
package tablefit

import (
	"fmt"
	"strings"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// Target is what a schema must map onto: a record of columns (a table's
// value columns, or a primary key), or one column for a bare value (the key
// column).
type Target struct {
	Columns []*catalogv1.Field
	// Single, when set, is the one column a non-record schema maps onto.
	Single *catalogv1.Field
	// IgnoreUnknown accepts fields without a column (they are dropped);
	// otherwise such a field refuses the schema.
	IgnoreUnknown bool
}

// Mismatch is why a schema does not map onto its target, naming the field.
type Mismatch struct {
	Field  string // dotted path; empty for the schema itself
	Reason string
}

func (m *Mismatch) Error() string {
	if m.Field == "" {
		return m.Reason
	}
	return fmt.Sprintf("field %s: %s", m.Field, m.Reason)
}

// TypeString renders a column type in Fluss SQL, e.g. "BIGINT NOT NULL".
func TypeString(t *catalogv1.DataType) string {
	var b strings.Builder
	writeType(&b, t)
	return b.String()
}

func writeType(b *strings.Builder, t *catalogv1.DataType) {
	name := strings.TrimPrefix(t.GetRoot().String(), "TYPE_ROOT_")
	switch t.GetRoot() {
	case catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ:
		fmt.Fprintf(b, "TIMESTAMP(%d)", t.GetPrecision())
	case catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ:
		fmt.Fprintf(b, "TIMESTAMP_LTZ(%d)", t.GetPrecision())
	case catalogv1.TypeRoot_TYPE_ROOT_TIME:
		fmt.Fprintf(b, "TIME(%d)", t.GetPrecision())
	case catalogv1.TypeRoot_TYPE_ROOT_DECIMAL:
		fmt.Fprintf(b, "DECIMAL(%d, %d)", t.GetPrecision(), t.GetScale())
	case catalogv1.TypeRoot_TYPE_ROOT_CHAR, catalogv1.TypeRoot_TYPE_ROOT_BINARY:
		fmt.Fprintf(b, "%s(%d)", name, t.GetLength())
	case catalogv1.TypeRoot_TYPE_ROOT_ARRAY:
		b.WriteString("ARRAY<")
		writeType(b, t.GetElement())
		b.WriteString(">")
	case catalogv1.TypeRoot_TYPE_ROOT_MAP:
		b.WriteString("MAP<")
		writeType(b, t.GetKey())
		b.WriteString(", ")
		writeType(b, t.GetValue())
		b.WriteString(">")
	case catalogv1.TypeRoot_TYPE_ROOT_ROW:
		b.WriteString("ROW<")
		for i, f := range t.GetFields() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.GetName() + " ")
			writeType(b, f.GetType())
		}
		b.WriteString(">")
	default:
		b.WriteString(name)
	}
	if !t.GetNullable() {
		b.WriteString(" NOT NULL")
	}
}
