package protoschema

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// ValueType is the Protobuf type of one value of a field, its cardinality
// aside, as the type rules group them: the integer kinds by range, and the
// well-known messages that carry one column value.
type ValueType uint8

const (
	Unsupported ValueType = iota // proto2 groups
	Bool
	Int32  // int32, sint32, sfixed32
	Uint32 // uint32, fixed32
	Int64  // int64, sint64, sfixed64
	Uint64 // uint64, fixed64
	Float
	Double
	String
	Bytes
	Enum
	Timestamp // google.protobuf.Timestamp
	Decimal   // confluent.type.Decimal
	Date      // google.type.Date
	TimeOfDay // google.type.TimeOfDay
	Message   // any other message: a ROW, field by field
)

var valueTypeNames = [...]string{
	Unsupported: "unsupported", Bool: "bool", Int32: "int32", Uint32: "uint32", Int64: "int64", Uint64: "uint64",
	Float: "float", Double: "double", String: "string", Bytes: "bytes", Enum: "enum",
	Timestamp: "google.protobuf.Timestamp", Decimal: "confluent.type.Decimal", Date: "google.type.Date",
	TimeOfDay: "google.type.TimeOfDay", Message: "message",
}

func (v ValueType) String() string { return valueTypeNames[v] }

// valueMessages are the well-known messages that are one column value.
var valueMessages = map[protoreflect.FullName]ValueType{
	"google.protobuf.Timestamp": Timestamp,
	"confluent.type.Decimal":    Decimal,
	"google.type.Date":          Date,
	"google.type.TimeOfDay":     TimeOfDay,
}

// wrappers are the google.protobuf messages that make a scalar nullable:
// they carry it in their field "value".
var wrappers = map[protoreflect.FullName]bool{
	"google.protobuf.BoolValue": true, "google.protobuf.Int32Value": true, "google.protobuf.Int64Value": true,
	"google.protobuf.UInt32Value": true, "google.protobuf.UInt64Value": true, "google.protobuf.FloatValue": true,
	"google.protobuf.DoubleValue": true, "google.protobuf.StringValue": true, "google.protobuf.BytesValue": true,
}

// IsWrapper tells whether md is a google.protobuf wrapper (Int64Value, ...).
func IsWrapper(md protoreflect.MessageDescriptor) bool { return wrappers[md.FullName()] }

// ValueTypeOf is the value type of f's values; a wrapper's is the type of
// its "value" field, with wrapped set.
func ValueTypeOf(f protoreflect.FieldDescriptor) (v ValueType, wrapped bool) {
	if f.Kind() == protoreflect.MessageKind && wrappers[f.Message().FullName()] {
		v, _ = ValueTypeOf(f.Message().Fields().ByName("value"))
		return v, true
	}
	switch f.Kind() {
	case protoreflect.BoolKind:
		return Bool, false
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return Int32, false
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return Uint32, false
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return Int64, false
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return Uint64, false
	case protoreflect.FloatKind:
		return Float, false
	case protoreflect.DoubleKind:
		return Double, false
	case protoreflect.StringKind:
		return String, false
	case protoreflect.BytesKind:
		return Bytes, false
	case protoreflect.EnumKind:
		return Enum, false
	case protoreflect.MessageKind:
		if v, ok := valueMessages[f.Message().FullName()]; ok {
			return v, false
		}
		return Message, false
	}
	return Unsupported, false
}

// Fit is how the values of a Protobuf value type fill a column type, and
// which direction checks each value.
type Fit uint8

const (
	NoFit Fit = iota
	// Exact: every value converts both ways unchanged.
	Exact
	// FieldWider: producing checks each value against the column (range,
	// precision, length); every column value is a field value.
	FieldWider
	// ColumnWider: every field value is a column value; consuming checks
	// each column value against the field (range, float precision).
	ColumnWider
	// BothChecked: each direction checks (uint64 and BIGINT, enum names,
	// dates outside years 1 to 9999).
	BothChecked
)

func (f Fit) String() string {
	return [...]string{NoFit: "no fit", Exact: "exact", FieldWider: "checked when produced", ColumnWider: "checked when consumed", BothChecked: "checked both ways"}[f]
}

// rules is the one table of which Protobuf value type fills which column
// type: the Schema Registry's check, produce decoding, consume encoding and
// schema derivation all read it (docs/schema-registry.md lists it).
// ARRAY and MAP columns are repeated and map fields of these types.
var rules = map[ValueType]map[types.Root]Fit{
	Bool:      {types.Boolean: Exact},
	Int32:     {types.TinyInt: FieldWider, types.SmallInt: FieldWider, types.Int: Exact, types.BigInt: ColumnWider},
	Uint32:    {types.BigInt: ColumnWider},
	Int64:     {types.BigInt: Exact},
	Uint64:    {types.BigInt: BothChecked},
	Float:     {types.Float: Exact, types.Double: ColumnWider},
	Double:    {types.Double: Exact},
	String:    {types.String: Exact, types.Char: FieldWider},
	Bytes:     {types.Bytes: Exact, types.Binary: FieldWider},
	Enum:      {types.TinyInt: FieldWider, types.SmallInt: FieldWider, types.Int: Exact, types.BigInt: ColumnWider, types.String: BothChecked, types.Char: BothChecked},
	Timestamp: {types.TimestampNTZ: FieldWider, types.TimestampLTZ: FieldWider},
	Decimal:   {types.Decimal: FieldWider},
	Date:      {types.Date: BothChecked},
	TimeOfDay: {types.Time: FieldWider},
	Message:   {types.Row: Exact},
}

// FitOf is how one value of v fills a column of root r.
func FitOf(v ValueType, r types.Root) Fit { return rules[v][r] }

// Derived is the field type a derived schema gives a column of root r
// (ARRAY, MAP and ROW aside), with the file it must import ("" for
// none); false when r has none.
func Derived(r types.Root) (typeName string, imports string, ok bool) {
	d, ok := derived[r]
	return d.name, d.imports, ok
}

var derived = map[types.Root]struct{ name, imports string }{
	types.Boolean: {"bool", ""}, types.TinyInt: {"int32", ""}, types.SmallInt: {"int32", ""}, types.Int: {"int32", ""},
	types.BigInt: {"int64", ""}, types.Float: {"float", ""}, types.Double: {"double", ""},
	types.Char: {"string", ""}, types.String: {"string", ""}, types.Binary: {"bytes", ""}, types.Bytes: {"bytes", ""},
	types.Decimal:      {"confluent.type.Decimal", DecimalImport},
	types.Date:         {"google.type.Date", DateImport},
	types.Time:         {"google.type.TimeOfDay", TimeOfDayImport},
	types.TimestampNTZ: {"google.protobuf.Timestamp", "google/protobuf/timestamp.proto"},
	types.TimestampLTZ: {"google.protobuf.Timestamp", "google/protobuf/timestamp.proto"},
}

// Presence is what a field's absence from a message means for its
// column.
type Presence uint8

const (
	// Implicit: a proto3 scalar without presence, a repeated or a map
	// field; absent reads as the default value, so any column takes it.
	Implicit Presence = iota
	// Declared: the schema says the field may be absent (`optional`, a
	// wrapper, a oneof member, proto2 optional or required): the column
	// must be nullable, absent is NULL.
	Declared
	// MessageValue: a message field (a value message or a ROW) outside a
	// oneof: it has presence because every message field has, so it may
	// fill a NOT NULL column; an absent one is NULL, which fails the
	// record for a NOT NULL column.
	MessageValue
)

// PresenceOf is f's presence as the type rules see it.
func PresenceOf(f protoreflect.FieldDescriptor) Presence {
	switch {
	case !f.HasPresence():
		return Implicit
	case f.Kind() == protoreflect.MessageKind && !wrappers[f.Message().FullName()] && f.ContainingOneof() == nil:
		return MessageValue
	}
	return Declared
}
