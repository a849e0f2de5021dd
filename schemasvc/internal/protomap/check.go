package protomap

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ferrygw/ferry/schemasvc/internal/tablefit"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// Check reports the first reason records of s's message could not become
// rows of t, or nil when they can. Fields map to columns by name.
func Check(s *Schema, t tablefit.Target) *tablefit.Mismatch {
	if t.Single != nil {
		return &tablefit.Mismatch{Reason: fmt.Sprintf("a Protobuf schema is a message, and column %s is one value of type %s; use a record of columns, or another format", t.Single.GetName(), tablefit.TypeString(t.Single.GetType()))}
	}
	md := s.Message()
	if md == nil {
		return &tablefit.Mismatch{Reason: "the schema defines no message"}
	}
	return checkMessage("", md, t.Columns, t.IgnoreUnknown)
}

func checkMessage(prefix string, md protoreflect.MessageDescriptor, cols []*catalogv1.Field, ignoreUnknown bool) *tablefit.Mismatch {
	byName := map[string]*catalogv1.Field{}
	for _, c := range cols {
		byName[c.GetName()] = c
	}
	fields := md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		path := prefix + string(f.Name())
		col, ok := byName[string(f.Name())]
		if !ok {
			if ignoreUnknown {
				continue
			}
			return &tablefit.Mismatch{Field: path, Reason: "no column of that name (the table refuses unknown fields)"}
		}
		if m := checkField(path, f, col.GetType()); m != nil {
			return m
		}
	}
	for _, c := range cols {
		if fields.ByName(protoreflect.Name(c.GetName())) == nil && !c.GetType().GetNullable() {
			return &tablefit.Mismatch{Field: prefix + c.GetName(), Reason: fmt.Sprintf("column %s is %s and message %s has no field for it", c.GetName(), tablefit.TypeString(c.GetType()), md.FullName())}
		}
	}
	return nil
}

// checkField checks a field, with its cardinality, against its column's
// type.
func checkField(path string, f protoreflect.FieldDescriptor, col *catalogv1.DataType) *tablefit.Mismatch {
	switch {
	case f.IsMap():
		if col.GetRoot() != catalogv1.TypeRoot_TYPE_ROOT_MAP {
			return bad(path, describe(f), col)
		}
		if m := checkKind(path+"{key}", f.MapKey(), col.GetKey()); m != nil {
			return m
		}
		return checkKind(path+"{}", f.MapValue(), col.GetValue())
	case f.IsList():
		if col.GetRoot() != catalogv1.TypeRoot_TYPE_ROOT_ARRAY {
			return bad(path, describe(f), col)
		}
		return checkKind(path+"[]", f, col.GetElement())
	}
	// A proto3 scalar without presence always has a value (its default
	// when not sent); one with presence may be absent, which is NULL.
	if f.HasPresence() && !col.GetNullable() {
		return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("%s may be absent (it has presence: optional, a message or in a oneof) but the column is %s", describe(f), tablefit.TypeString(col))}
	}
	return checkKind(path, f, col)
}

// checkKind checks one value of f against col, whatever f's cardinality.
func checkKind(path string, f protoreflect.FieldDescriptor, col *catalogv1.DataType) *tablefit.Mismatch {
	ok := false
	switch f.Kind() {
	case protoreflect.BoolKind:
		ok = is(col, catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		ok = is(col, catalogv1.TypeRoot_TYPE_ROOT_INTEGER, catalogv1.TypeRoot_TYPE_ROOT_BIGINT)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		// uint64 values above 2^63-1 fail per record, at produce time.
		ok = is(col, catalogv1.TypeRoot_TYPE_ROOT_BIGINT)
	case protoreflect.FloatKind:
		ok = is(col, catalogv1.TypeRoot_TYPE_ROOT_FLOAT, catalogv1.TypeRoot_TYPE_ROOT_DOUBLE)
	case protoreflect.DoubleKind:
		ok = is(col, catalogv1.TypeRoot_TYPE_ROOT_DOUBLE)
	case protoreflect.StringKind:
		ok = is(col, catalogv1.TypeRoot_TYPE_ROOT_STRING, catalogv1.TypeRoot_TYPE_ROOT_CHAR)
	case protoreflect.BytesKind:
		ok = is(col, catalogv1.TypeRoot_TYPE_ROOT_BYTES, catalogv1.TypeRoot_TYPE_ROOT_BINARY)
	case protoreflect.EnumKind:
		// The value's name, or its number.
		ok = is(col, catalogv1.TypeRoot_TYPE_ROOT_STRING, catalogv1.TypeRoot_TYPE_ROOT_INTEGER)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return checkMessageKind(path, f, col)
	}
	if !ok {
		return bad(path, kindName(f), col)
	}
	return nil
}

// wrappers are the google.protobuf wrapper messages: a nullable scalar.
var wrappers = map[protoreflect.FullName]bool{
	"google.protobuf.BoolValue": true, "google.protobuf.Int32Value": true, "google.protobuf.Int64Value": true,
	"google.protobuf.UInt32Value": true, "google.protobuf.UInt64Value": true, "google.protobuf.FloatValue": true,
	"google.protobuf.DoubleValue": true, "google.protobuf.StringValue": true, "google.protobuf.BytesValue": true,
}

// checkMessageKind maps a message to a well-known column type, or to a ROW
// whose fields it names (strictly: a ROW has no place for other fields).
func checkMessageKind(path string, f protoreflect.FieldDescriptor, col *catalogv1.DataType) *tablefit.Mismatch {
	md := f.Message()
	switch {
	case md.FullName() == "google.protobuf.Timestamp":
		if !is(col, catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ, catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ) {
			return bad(path, kindName(f), col)
		}
		return nil
	case wrappers[md.FullName()]:
		if checkKind(path, md.Fields().ByName("value"), col) != nil {
			return bad(path, kindName(f), col)
		}
		return nil
	case !is(col, catalogv1.TypeRoot_TYPE_ROOT_ROW):
		return bad(path, kindName(f), col)
	}
	return checkMessage(path+".", md, col.GetFields(), false)
}

func is(col *catalogv1.DataType, roots ...catalogv1.TypeRoot) bool {
	for _, r := range roots {
		if col.GetRoot() == r {
			return true
		}
	}
	return false
}

// bad says that a field's type, named as .proto source does (what), does
// not fit col.
func bad(path, what string, col *catalogv1.DataType) *tablefit.Mismatch {
	return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("Protobuf %s does not fit column type %s", what, tablefit.TypeString(col))}
}

// describe names a field's type as .proto source writes it, e.g. "repeated
// int64", "map<string, int32>", "google.protobuf.Timestamp".
func describe(f protoreflect.FieldDescriptor) string {
	if f.IsMap() {
		return fmt.Sprintf("map<%s, %s>", kindName(f.MapKey()), kindName(f.MapValue()))
	}
	if f.IsList() {
		return "repeated " + kindName(f)
	}
	return kindName(f)
}

func kindName(f protoreflect.FieldDescriptor) string {
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return string(f.Message().FullName())
	case protoreflect.EnumKind:
		return "enum " + string(f.Enum().FullName())
	}
	return f.Kind().String()
}
