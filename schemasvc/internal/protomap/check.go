package protomap

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ferrygw/ferry/schemasvc/internal/tablefit"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/protoschema"
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
	// when not sent); one declared optional may be absent, which is NULL.
	// A message field has presence too, but may fill a NOT NULL column:
	// records where it is absent fail (protoschema.PresenceOf).
	if protoschema.PresenceOf(f) == protoschema.Declared && !col.GetNullable() {
		return &tablefit.Mismatch{Field: path, Reason: fmt.Sprintf("%s may be absent (it is declared with presence: optional, a wrapper or in a oneof) but the column is %s", describe(f), tablefit.TypeString(col))}
	}
	return checkKind(path, f, col)
}

// checkKind checks one value of f against col, whatever f's cardinality,
// by the type rules of protoschema.
func checkKind(path string, f protoreflect.FieldDescriptor, col *catalogv1.DataType) *tablefit.Mismatch {
	v, _ := protoschema.ValueTypeOf(f)
	if protoschema.FitOf(v, types.Root(col.GetRoot())) == protoschema.NoFit {
		return bad(path, kindName(f), col)
	}
	if v == protoschema.Message {
		// A ROW's fields, strictly: a ROW has no place for other fields.
		return checkMessage(path+".", f.Message(), col.GetFields(), false)
	}
	return nil
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
