package protomap

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Compatible reports why data written with writer's message could not be
// read with reader's, or nil when it can. Fields are matched by number, as
// the wire format does: a field in both must keep a wire-compatible type
// (Confluent's groups: int32, uint32, int64, uint64 and bool; sint32 and
// sint64; fixed32 and sfixed32; fixed64 and sfixed64; string and bytes),
// the same enum or message, and stay repeated, a map or single; a field the
// reader requires (proto2 `required`) must be required by the writer. A
// field only one side has is compatible (unknown fields are skipped, a
// missing one reads as absent). Renaming a field keeps its data.
func Compatible(reader, writer *Schema) error {
	r, w := reader.Message(), writer.Message()
	switch {
	case w == nil:
		return nil
	case r == nil:
		return fmt.Errorf("message %s is gone: the schema defines no message", w.FullName())
	case r.FullName() != w.FullName():
		return fmt.Errorf("message %s is gone: the schema's first message is %s", w.FullName(), r.FullName())
	}
	return compareMessages(string(r.Name()), r, w, map[[2]protoreflect.FullName]bool{})
}

func compareMessages(path string, r, w protoreflect.MessageDescriptor, seen map[[2]protoreflect.FullName]bool) error {
	pair := [2]protoreflect.FullName{r.FullName(), w.FullName()}
	if seen[pair] {
		return nil // a recursive message, compared already
	}
	seen[pair] = true
	rf := r.Fields()
	for i := range rf.Len() {
		f := rf.Get(i)
		if f.Cardinality() != protoreflect.Required {
			continue
		}
		if g := w.Fields().ByNumber(f.Number()); g == nil || g.Cardinality() != protoreflect.Required {
			return fmt.Errorf("field %s.%s (number %d) is required, and data written with the other schema may lack it", path, f.Name(), f.Number())
		}
	}
	wf := w.Fields()
	for i := range wf.Len() {
		g := wf.Get(i)
		f := rf.ByNumber(g.Number())
		if f == nil {
			continue
		}
		where := fmt.Sprintf("field %s.%s (number %d)", path, f.Name(), f.Number())
		if f.IsMap() != g.IsMap() || f.IsList() != g.IsList() {
			return fmt.Errorf("%s is %s, was %s", where, describe(f), describe(g))
		}
		if f.IsMap() {
			if err := compareKinds(where+" key", f.MapKey(), g.MapKey(), seen); err != nil {
				return err
			}
			if err := compareKinds(where+" value", f.MapValue(), g.MapValue(), seen); err != nil {
				return err
			}
			continue
		}
		if err := compareKinds(where, f, g, seen); err != nil {
			return err
		}
	}
	return nil
}

// compareKinds checks that one value of g reads as one of f.
func compareKinds(where string, f, g protoreflect.FieldDescriptor, seen map[[2]protoreflect.FullName]bool) error {
	switch {
	case isMessage(f) || isMessage(g):
		if !isMessage(f) || !isMessage(g) || f.Message().FullName() != g.Message().FullName() {
			return fmt.Errorf("%s is %s, was %s", where, kindName(f), kindName(g))
		}
		return compareMessages(string(f.Message().FullName()), f.Message(), g.Message(), seen)
	case f.Kind() == protoreflect.EnumKind || g.Kind() == protoreflect.EnumKind:
		if f.Kind() != g.Kind() || f.Enum().FullName() != g.Enum().FullName() {
			return fmt.Errorf("%s is %s, was %s", where, kindName(f), kindName(g))
		}
	case wireGroup(f.Kind()) != wireGroup(g.Kind()):
		return fmt.Errorf("%s is %s, was %s", where, kindName(f), kindName(g))
	}
	return nil
}

func isMessage(f protoreflect.FieldDescriptor) bool {
	return f.Kind() == protoreflect.MessageKind || f.Kind() == protoreflect.GroupKind
}

// wireGroup puts kinds whose values read as one another in one group.
func wireGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Uint64Kind, protoreflect.BoolKind:
		return "varint"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "zigzag"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "fixed64"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "length-delimited"
	}
	return k.String()
}
