package protoschema

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// A built-in import is a file a schema imports by its path without a
// reference: google/protobuf/*.proto as protoc ships them, and the three
// value messages below. Clients that register imported files (Confluent's
// Java serializer 5.5, confluent-kafka-python with skip.known.types off)
// do so under a subject named after the path, and their deserializers
// read the file back from it; schemasvc gives such a subject BuiltinFile
// and takes only a copy CheckBuiltinFile accepts.

// The value messages a DECIMAL, DATE or TIME column maps onto, as
// Confluent's Protobuf serdes and confluent-kafka-python use them. Schemas
// import them by these paths without a reference, as they do the
// google/protobuf files; these are Ferry's own sources with the documented
// packages, names, field numbers and types (all a reader of the wire
// format needs).
const (
	DecimalImport   = "confluent/type/decimal.proto"
	DateImport      = "google/type/date.proto"
	TimeOfDayImport = "google/type/timeofday.proto"
)

// builtinSources are the files behind the imports above.
var builtinSources = map[string]string{
	DecimalImport: `syntax = "proto3";
package confluent.type;

// A decimal number: the unscaled value times ten to the power of -scale.
message Decimal {
  // The unscaled value, big-endian two's complement.
  bytes value = 1;
  // Digits of the unscaled value (0: not given).
  uint32 precision = 2;
  int32 scale = 3;
}
`,
	DateImport: `syntax = "proto3";
package google.type;

// A calendar date without a time zone.
message Date {
  int32 year = 1;
  int32 month = 2;
  int32 day = 3;
}
`,
	TimeOfDayImport: `syntax = "proto3";
package google.type;

// A time of day without a date or time zone.
message TimeOfDay {
  int32 hours = 1;
  int32 minutes = 2;
  int32 seconds = 3;
  int32 nanos = 4;
}
`,
}

// builtinResolver resolves the built-in imports, and nothing else.
var builtinResolver = protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
	if src, ok := builtinSources[path]; ok {
		return protocompile.SearchResult{Source: strings.NewReader(src)}, nil
	}
	return protocompile.SearchResult{}, fmt.Errorf("%s is not a built-in import", path)
}))

// valueFiles are builtinSources compiled, once: every schema importing one
// links to the same descriptor.
var valueFiles = sync.OnceValue(func() map[string]protoreflect.FileDescriptor {
	c := protocompile.Compiler{Resolver: builtinResolver}
	files, err := c.Compile(context.Background(), DecimalImport, DateImport, TimeOfDayImport)
	if err != nil {
		// The sources are constants above; TestBuiltinImports compiles them.
		panic(fmt.Sprintf("built-in Protobuf imports: %v", err))
	}
	m := map[string]protoreflect.FileDescriptor{}
	for _, f := range files {
		m[f.Path()] = f
	}
	return m
})

// BuiltinFile is the file Ferry resolves for the import path when no
// reference supplies it; nil when path is not a built-in import.
func BuiltinFile(path string) protoreflect.FileDescriptor {
	if _, ok := builtinSources[path]; ok {
		return valueFiles()[path]
	}
	res, err := builtinResolver.FindFileByPath(path)
	if err != nil {
		return nil
	}
	return res.Desc
}

// CheckBuiltinFile reports why fd, a file registered under the built-in
// import path, is not a copy of it: it must declare the same package,
// messages (fields by number, with their names, types and labels, nested
// messages) and enums (values), so that a schema importing either reads
// the same. Options, comments and layout may differ, and so may the names
// of spelled-out map entries (Confluent's Java serializer 5.5 names
// google.protobuf.Struct's fieldsEntry, protoc FieldsEntry). nil when path
// is not a built-in import.
func CheckBuiltinFile(path string, fd protoreflect.FileDescriptor) error {
	want := BuiltinFile(path)
	if want == nil {
		return nil
	}
	if fd.Package() != want.Package() {
		return fmt.Errorf("package %s is not %s's %s", fd.Package(), path, want.Package())
	}
	if err := sameMessages(fd.Messages(), want.Messages()); err != nil {
		return err
	}
	return sameEnums(fd.Enums(), want.Enums())
}

// sameMessages compares messages by name, but for map entries, which
// are compared through their map fields: their names differ by writer.
func sameMessages(got, want protoreflect.MessageDescriptors) error {
	if n, m := countMessages(got), countMessages(want); n != m {
		return fmt.Errorf("%d messages where the built-in file has %d", n, m)
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
				heldType(gf) != heldType(wf) {
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
		return fmt.Errorf("%d enums where the built-in file has %d", got.Len(), want.Len())
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

// heldType is the message or enum f holds, a map's as map<key, value>.
func heldType(f protoreflect.FieldDescriptor) protoreflect.FullName {
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
	if t := heldType(f); t != "" {
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
