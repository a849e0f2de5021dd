package convert

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// protoFits checks that Protobuf field fd can fill a column of type t; the
// decoder (not built yet, docs/limits.md) relies on it. A field with
// presence (proto3 optional, a message, a wrapper) may be absent, so its
// column must be nullable; a plain proto3 scalar always has a value.
func protoFits(fd protoreflect.FieldDescriptor, col string, t types.DataType) error {
	if fd.IsMap() {
		if t.Root != types.Map {
			return protoTypeErr(fd, col, t)
		}
		if err := protoKindFits(fd.MapKey(), col+" (key)", *t.Key); err != nil {
			return err
		}
		return protoKindFits(fd.MapValue(), col+" (value)", *t.Value)
	}
	if fd.IsList() {
		if t.Root != types.Array {
			return protoTypeErr(fd, col, t)
		}
		return protoKindFits(fd, col+" (element)", *t.Element)
	}
	if fd.HasPresence() && !t.Nullable {
		return fmt.Errorf("field %s may be absent (it has presence) but column %s is NOT NULL", fd.FullName(), col)
	}
	return protoKindFits(fd, col, t)
}

// protoKindFits checks one value of fd's kind, ignoring its cardinality.
func protoKindFits(fd protoreflect.FieldDescriptor, col string, t types.DataType) error {
	ok := false
	switch fd.Kind() {
	case protoreflect.BoolKind:
		ok = t.Root == types.Boolean
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		ok = t.Root == types.Int || t.Root == types.BigInt
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		ok = t.Root == types.BigInt
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		// Values above 2^63-1 fail per record.
		ok = t.Root == types.BigInt
	case protoreflect.FloatKind:
		ok = t.Root == types.Float || t.Root == types.Double
	case protoreflect.DoubleKind:
		ok = t.Root == types.Double
	case protoreflect.StringKind:
		ok = t.Root == types.String || t.Root == types.Char
	case protoreflect.BytesKind:
		ok = t.Root == types.Bytes || t.Root == types.Binary
	case protoreflect.EnumKind:
		// The value's name, or its number.
		ok = t.Root == types.String || t.Root == types.Int
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return protoMessageFits(fd, fd.Message(), col, t)
	}
	if !ok {
		return protoTypeErr(fd, col, t)
	}
	return nil
}

// protoMessageFits maps a message to a well-known column type or to a ROW
// whose fields it fills by name.
func protoMessageFits(fd protoreflect.FieldDescriptor, md protoreflect.MessageDescriptor, col string, t types.DataType) error {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		if t.Root != types.TimestampNTZ && t.Root != types.TimestampLTZ {
			return protoTypeErr(fd, col, t)
		}
		return nil
	case "google.protobuf.BoolValue", "google.protobuf.Int32Value", "google.protobuf.Int64Value",
		"google.protobuf.UInt32Value", "google.protobuf.UInt64Value", "google.protobuf.FloatValue",
		"google.protobuf.DoubleValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return protoKindFits(md.Fields().ByName("value"), col, t)
	}
	if t.Root != types.Row {
		return protoTypeErr(fd, col, t)
	}
	for _, f := range t.Fields {
		sub := md.Fields().ByName(protoreflect.Name(f.Name))
		if sub == nil {
			if !f.Type.Nullable {
				return fmt.Errorf("column %s.%s is NOT NULL but message %s has no field %s", col, f.Name, md.FullName(), f.Name)
			}
			continue
		}
		if err := protoFits(sub, col+"."+f.Name, f.Type); err != nil {
			return err
		}
	}
	return nil
}

func protoTypeErr(fd protoreflect.FieldDescriptor, col string, t types.DataType) error {
	what := fd.Kind().String()
	switch {
	case fd.IsMap():
		what = "map"
	case fd.Kind() == protoreflect.MessageKind:
		what = string(fd.Message().FullName())
	}
	if fd.IsList() {
		what = "repeated " + what
	}
	return fmt.Errorf("field %s (%s) does not fit column %s of type %s", fd.FullName(), what, col, t)
}
