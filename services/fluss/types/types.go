// Package types is Ferry's model of Fluss data types and table schemas, and
// their mapping onto Arrow, shared by every service that reads or writes rows.
package types

import (
	"fmt"
	"strings"
)

// Root is the kind of a data type, as Fluss's DataTypeRoot names it.
type Root uint8

const (
	Boolean Root = iota + 1
	TinyInt
	SmallInt
	Int
	BigInt
	Float
	Double
	Decimal
	Char
	String
	Binary
	Bytes
	Date
	Time
	TimestampNTZ
	TimestampLTZ
	Array
	Map
	Row
)

var rootNames = map[Root]string{
	Boolean: "BOOLEAN", TinyInt: "TINYINT", SmallInt: "SMALLINT", Int: "INT", BigInt: "BIGINT",
	Float: "FLOAT", Double: "DOUBLE", Decimal: "DECIMAL", Char: "CHAR", String: "STRING",
	Binary: "BINARY", Bytes: "BYTES", Date: "DATE", Time: "TIME", TimestampNTZ: "TIMESTAMP",
	TimestampLTZ: "TIMESTAMP_LTZ", Array: "ARRAY", Map: "MAP", Row: "ROW",
}

func (r Root) String() string {
	if n, ok := rootNames[r]; ok {
		return n
	}
	return fmt.Sprintf("Root(%d)", uint8(r))
}

// DataType is a Fluss data type. Which parameters apply depends on Root:
// Length (CHAR, BINARY), Precision and Scale (DECIMAL), Precision (TIME,
// TIMESTAMP, TIMESTAMP_LTZ), Element (ARRAY), Key and Value (MAP), Fields (ROW).
type DataType struct {
	Root      Root
	Nullable  bool
	Length    int
	Precision int
	Scale     int
	Element   *DataType
	Key       *DataType
	Value     *DataType
	Fields    []Field
}

// Field is a named column or ROW field.
type Field struct {
	Name string
	Type DataType
}

// String renders the type in Fluss SQL syntax, e.g. "DECIMAL(10, 2) NOT NULL".
func (t DataType) String() string {
	var b strings.Builder
	t.writeTo(&b)
	return b.String()
}

func (t DataType) writeTo(b *strings.Builder) {
	switch t.Root {
	case Decimal:
		fmt.Fprintf(b, "DECIMAL(%d, %d)", t.Precision, t.Scale)
	case Char, Binary:
		fmt.Fprintf(b, "%s(%d)", t.Root, t.Length)
	case Time, TimestampNTZ, TimestampLTZ:
		fmt.Fprintf(b, "%s(%d)", t.Root, t.Precision)
	case Array:
		b.WriteString("ARRAY<")
		if t.Element != nil {
			t.Element.writeTo(b)
		}
		b.WriteString(">")
	case Map:
		b.WriteString("MAP<")
		if t.Key != nil {
			t.Key.writeTo(b)
		}
		b.WriteString(", ")
		if t.Value != nil {
			t.Value.writeTo(b)
		}
		b.WriteString(">")
	case Row:
		b.WriteString("ROW<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			b.WriteString(" ")
			f.Type.writeTo(b)
		}
		b.WriteString(">")
	default:
		b.WriteString(t.Root.String())
	}
	if !t.Nullable {
		b.WriteString(" NOT NULL")
	}
}

// Validate reports a type whose parameters Fluss would not accept.
func (t DataType) Validate() error {
	switch t.Root {
	case Decimal:
		if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
			return fmt.Errorf("DECIMAL(%d, %d): precision must be 1..38 and scale 0..precision", t.Precision, t.Scale)
		}
	case Char, Binary:
		if t.Length < 1 {
			return fmt.Errorf("%s(%d): length must be at least 1", t.Root, t.Length)
		}
	case Time, TimestampNTZ, TimestampLTZ:
		if t.Precision < 0 || t.Precision > 9 {
			return fmt.Errorf("%s(%d): precision must be 0..9", t.Root, t.Precision)
		}
	case Array:
		if t.Element == nil {
			return fmt.Errorf("ARRAY without element type")
		}
		return t.Element.Validate()
	case Map:
		if t.Key == nil || t.Value == nil {
			return fmt.Errorf("MAP without key or value type")
		}
		if err := t.Key.Validate(); err != nil {
			return err
		}
		return t.Value.Validate()
	case Row:
		for _, f := range t.Fields {
			if err := f.Type.Validate(); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
	default:
		if _, ok := rootNames[t.Root]; !ok {
			return fmt.Errorf("unknown type root %d", t.Root)
		}
	}
	return nil
}
