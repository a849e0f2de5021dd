package protomap

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// WellKnown is the well-known file at path (google/protobuf/*.proto, as
// protoc ships it and every schema may import without a reference), or
// nil. Confluent's Java Protobuf serializer 5.5 registers each file a
// schema imports, these included, under a subject named after its path
// before the schema itself, and reads them back through the references.
func WellKnown(path string) protoreflect.FileDescriptor {
	if !strings.HasPrefix(path, "google/protobuf/") {
		return nil
	}
	fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
	if err != nil {
		return nil
	}
	return fd
}

// DeriveWellKnown is the well-known file wk as .proto source.
func DeriveWellKnown(wk protoreflect.FileDescriptor) (string, error) { return printFile(wk) }

// CheckWellKnown tells whether s declares what the well-known file wk
// declares, so that a schema importing either reads the same: the same
// package, messages (fields by number, with their names, types and
// labels) and enums (values). Options and layout may differ.
func CheckWellKnown(s *Schema, wk protoreflect.FileDescriptor) error {
	if s.file.Package() != wk.Package() {
		return fmt.Errorf("package %s is not %s's %s", s.file.Package(), wk.Path(), wk.Package())
	}
	if err := sameMessages(s.file.Messages(), wk.Messages()); err != nil {
		return err
	}
	return sameEnums(s.file.Enums(), wk.Enums())
}

// sameMessages compares messages by name, but for map entries, which
// are compared through their map fields: their names differ by writer
// (Confluent's Java serializer 5.5 names Struct.fields' entry fieldsEntry).
func sameMessages(got, want protoreflect.MessageDescriptors) error {
	if n, m := countMessages(got), countMessages(want); n != m {
		return fmt.Errorf("%d messages where the well-known file has %d", n, m)
	}
	for i := range want.Len() {
		w := want.Get(i)
		if w.IsMapEntry() {
			continue
		}
		g := got.ByName(w.Name())
		if g == nil {
			return fmt.Errorf("no message %s", w.FullName())
		}
		if g.Fields().Len() != w.Fields().Len() {
			return fmt.Errorf("message %s has %d fields, want %d", w.FullName(), g.Fields().Len(), w.Fields().Len())
		}
		for j := range w.Fields().Len() {
			wf := w.Fields().Get(j)
			gf := g.Fields().ByNumber(wf.Number())
			if gf == nil || gf.Name() != wf.Name() || gf.Kind() != wf.Kind() || gf.Cardinality() != wf.Cardinality() ||
				typeName(gf) != typeName(wf) {
				return fmt.Errorf("field %s: %s, want %s", wf.FullName(), fieldShape(gf), fieldShape(wf))
			}
		}
		if err := sameMessages(g.Messages(), w.Messages()); err != nil {
			return err
		}
		if err := sameEnums(g.Enums(), w.Enums()); err != nil {
			return err
		}
	}
	return nil
}

func countMessages(ms protoreflect.MessageDescriptors) int {
	n := 0
	for i := range ms.Len() {
		if !ms.Get(i).IsMapEntry() {
			n++
		}
	}
	return n
}

func sameEnums(got, want protoreflect.EnumDescriptors) error {
	if got.Len() != want.Len() {
		return fmt.Errorf("%d enums where the well-known file has %d", got.Len(), want.Len())
	}
	for i := range want.Len() {
		w := want.Get(i)
		g := got.ByName(w.Name())
		if g == nil || g.Values().Len() != w.Values().Len() {
			return fmt.Errorf("enum %s differs", w.FullName())
		}
		for j := range w.Values().Len() {
			wv := w.Values().Get(j)
			if gv := g.Values().ByName(wv.Name()); gv == nil || gv.Number() != wv.Number() {
				return fmt.Errorf("enum value %s differs", wv.FullName())
			}
		}
	}
	return nil
}

// typeName is the message or enum f holds, a map's as map<key, value>.
func typeName(f protoreflect.FieldDescriptor) protoreflect.FullName {
	switch {
	case f.IsMap():
		return protoreflect.FullName(fmt.Sprintf("map<%s, %s>", kindOrType(f.MapKey()), kindOrType(f.MapValue())))
	case f.Message() != nil:
		return f.Message().FullName()
	case f.Enum() != nil:
		return f.Enum().FullName()
	}
	return ""
}

func kindOrType(f protoreflect.FieldDescriptor) string {
	if t := typeName(f); t != "" {
		return string(t)
	}
	return f.Kind().String()
}

func fieldShape(f protoreflect.FieldDescriptor) string {
	if f == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s %s = %d", f.Cardinality(), kindOrType(f), f.Name(), f.Number())
}
