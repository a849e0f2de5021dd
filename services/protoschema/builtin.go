package protoschema

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
)

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

// BuiltinImport is the source Ferry compiles for a built-in import path;
// false for other paths.
func BuiltinImport(path string) (string, bool) {
	s, ok := builtinSources[path]
	return s, ok
}

// CheckBuiltinFile reports why fd, a file registered under a built-in
// import path (confluent-kafka-python registers imported files as
// references when told not to skip known types), is not that file: its
// messages must have the built-in's fields with the same numbers and types,
// so that every reader decodes them alike. nil for any other path.
func CheckBuiltinFile(path string, fd protoreflect.FileDescriptor) error {
	src, ok := builtinSources[path]
	if !ok {
		return nil
	}
	want, err := compileBuiltin(path, src)
	if err != nil {
		return err
	}
	if fd.Package() != want.Package() {
		return fmt.Errorf("%s declares package %s, not %s", path, fd.Package(), want.Package())
	}
	for i := range want.Messages().Len() {
		wm := want.Messages().Get(i)
		m := fd.Messages().ByName(wm.Name())
		if m == nil {
			return fmt.Errorf("%s has no message %s", path, wm.FullName())
		}
		for j := range wm.Fields().Len() {
			wf := wm.Fields().Get(j)
			f := m.Fields().ByNumber(wf.Number())
			if f == nil || f.Name() != wf.Name() || f.Kind() != wf.Kind() || f.Cardinality() == protoreflect.Repeated {
				return fmt.Errorf("%s: message %s needs field %s %s = %d", path, wm.FullName(), wf.Kind(), wf.Name(), wf.Number())
			}
		}
	}
	return nil
}
