// Package protoschema compiles the Protobuf schemas a Schema Registry
// holds: .proto source, or the base64 of a serialized FileDescriptorProto
// (what confluent-kafka-python's ProtobufSerializer registers), with the
// files they import. schemasvc compiles registrations with it, transcodesvc
// writer schemas and fetchsvc the schemas it serves, so all three read a
// schema the same way. Its type rules (typerules.go) say which field type
// fills which column type, for the registry's check, produce decoding,
// consume encoding and derived schemas alike.
package protoschema

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/ast"
	"github.com/bufbuild/protocompile/parser"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
)

// RootName is the file name a schema is compiled under: a registered
// schema names no file of its own.
const RootName = "ferry-registered.proto"

// Compile compiles text with the files it imports, directly or not
// (imports: text by import path; google/protobuf/*.proto and the
// built-in value messages need none).
// fromDescriptor tells whether text was a serialized descriptor.
func Compile(ctx context.Context, text string, imports map[string]string) (fd protoreflect.FileDescriptor, fromDescriptor bool, err error) {
	fromDescriptor = descriptor(text, RootName) != nil
	c := protocompile.Compiler{Resolver: protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		if path == RootName {
			return searchResult(path, text)
		}
		if t, ok := imports[path]; ok {
			return searchResult(path, t)
		}
		if fd := BuiltinFile(path); fd != nil {
			return protocompile.SearchResult{Desc: fd}, nil
		}
		return protocompile.SearchResult{}, fmt.Errorf("import %q is neither a reference of the schema nor a built-in import (google/protobuf/*.proto, %s, %s, %s)", path, DecimalImport, DateImport, TimeOfDayImport)
	})}
	files, err := c.Compile(ctx, RootName)
	if err != nil {
		return nil, false, err
	}
	if err := checkMapEntries(files[0], map[string]bool{}); err != nil {
		return nil, false, err
	}
	return files[0], fromDescriptor, nil
}

// checkMapEntries checks the messages marked as map entries in fd and the
// files it imports as protoc checks those it makes for map fields, but for
// their names: a spelled-out entry (parseSource) may be named otherwise
// (Confluent's Java serializer names attrs' entry attrsEntry, protoc
// AttrsEntry), and the linker checks none of this.
func checkMapEntries(fd protoreflect.FileDescriptor, seen map[string]bool) error {
	if seen[fd.Path()] {
		return nil
	}
	seen[fd.Path()] = true
	var walk func(ms protoreflect.MessageDescriptors) error
	walk = func(ms protoreflect.MessageDescriptors) error {
		for i := range ms.Len() {
			m := ms.Get(i)
			if err := checkMapEntry(m); err != nil {
				return fmt.Errorf("%s: message %s: %w", fd.Path(), m.FullName(), err)
			}
			for j := range m.Fields().Len() {
				f := m.Fields().Get(j)
				if e := f.Message(); e != nil && e.IsMapEntry() && (f.Cardinality() != protoreflect.Repeated || e.Parent() != m || f.ContainingOneof() != nil) {
					return fmt.Errorf("%s: field %s: a map entry type is for a repeated field of the message it is nested in", fd.Path(), f.FullName())
				}
			}
			if err := walk(m.Messages()); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(fd.Messages()); err != nil {
		return err
	}
	for i := range fd.Imports().Len() {
		if err := checkMapEntries(fd.Imports().Get(i).FileDescriptor, seen); err != nil {
			return err
		}
	}
	return nil
}

func checkMapEntry(m protoreflect.MessageDescriptor) error {
	if !m.IsMapEntry() {
		return nil
	}
	if _, nested := m.Parent().(protoreflect.MessageDescriptor); !nested {
		return fmt.Errorf("a map entry must be nested in the message whose map it is")
	}
	if m.Messages().Len() > 0 || m.Enums().Len() > 0 || m.Extensions().Len() > 0 || m.ExtensionRanges().Len() > 0 || m.Oneofs().Len() > 0 {
		return fmt.Errorf("a map entry declares nothing but its key and value fields")
	}
	fs := m.Fields()
	key, value := fs.ByNumber(1), fs.ByNumber(2)
	if fs.Len() != 2 || key == nil || value == nil || key.Name() != "key" || value.Name() != "value" {
		return fmt.Errorf("a map entry has two fields: key = 1 and value = 2")
	}
	for _, f := range []protoreflect.FieldDescriptor{key, value} {
		if f.Cardinality() != protoreflect.Optional || f.HasDefault() {
			return fmt.Errorf("a map entry's %s is a single field without a default", f.Name())
		}
	}
	switch key.Kind() {
	case protoreflect.FloatKind, protoreflect.DoubleKind, protoreflect.BytesKind, protoreflect.MessageKind, protoreflect.GroupKind, protoreflect.EnumKind:
		return fmt.Errorf("a map key cannot be of type %s", key.Kind())
	}
	return nil
}

// searchResult is file path of text, a descriptor or .proto source.
func searchResult(path, text string) (protocompile.SearchResult, error) {
	if fdp := descriptor(text, path); fdp != nil {
		return protocompile.SearchResult{Proto: fdp}, nil
	}
	res, err := parseSource(path, text)
	if err != nil {
		return protocompile.SearchResult{}, err
	}
	return protocompile.SearchResult{ParseResult: res}, nil
}

// parseSource parses .proto source as protoc does, with one leniency:
// a map's entry message may be spelled out (a nested message with option
// map_entry = true and a repeated field of it), which protoc refuses but
// Confluent's registry accepts, and which Confluent's Java Protobuf
// serializer 5.5 registers for every map field: it prints the schema from
// the message's descriptor. Every other check stays.
func parseSource(path, text string) (parser.Result, error) {
	file, err := parser.Parse(path, strings.NewReader(text), reporter.NewHandler(nil))
	if err != nil {
		return nil, err
	}
	// Where the map_entry options are: the one complaint tolerated is the
	// one at those positions.
	loose, err := parser.ResultFromAST(file, false, reporter.NewHandler(nil))
	if err != nil {
		return nil, err
	}
	mapEntries := map[ast.SourcePos]bool{}
	var walk func(ms []*descriptorpb.DescriptorProto)
	walk = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			for _, o := range m.GetOptions().GetUninterpretedOption() {
				if n := o.GetName(); len(n) == 1 && !n[0].GetIsExtension() && n[0].GetNamePart() == "map_entry" {
					mapEntries[file.NodeInfo(loose.OptionNode(o).GetName()).Start()] = true
				}
			}
			walk(m.GetNestedType())
		}
	}
	walk(loose.FileDescriptorProto().GetMessageType())
	h := reporter.NewHandler(reporter.NewReporter(func(e reporter.ErrorWithPos) error {
		if mapEntries[e.GetPosition()] {
			return nil
		}
		return e
	}, nil))
	res, err := parser.ResultFromAST(file, true, h)
	// ErrInvalidSource alone: every error reported was a tolerated one.
	if err != nil && !(errors.Is(err, reporter.ErrInvalidSource) && h.ReporterError() == nil) {
		return nil, err
	}
	return res, nil
}

// Registered compiles a schema the registry answered with: s and what it
// references (GetSchemaResponse.referenced: each import's schema,
// dependencies before dependents, without repeats).
func Registered(ctx context.Context, s *schemav1.Schema, referenced []*schemav1.Schema) (protoreflect.FileDescriptor, error) {
	if s.GetType() != schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF {
		return nil, fmt.Errorf("schema id %d is a %s schema, not Protobuf", s.GetId(), typeName(s.GetType()))
	}
	imports, err := ImportSources(s, referenced)
	if err != nil {
		return nil, err
	}
	fd, _, err := Compile(ctx, s.GetText(), imports)
	if err != nil {
		return nil, fmt.Errorf("schema id %d does not compile as Protobuf: %w", s.GetId(), err)
	}
	return fd, nil
}

func typeName(t schemav1.SchemaType) string {
	switch t {
	case schemav1.SchemaType_SCHEMA_TYPE_AVRO:
		return "AVRO"
	case schemav1.SchemaType_SCHEMA_TYPE_JSON:
		return "JSON"
	}
	return t.String()
}

// ImportSources names each referenced schema by the import path that
// refers to it. The registry lists referenced schemas in post-order of a
// walk of the references that skips repeats, so walking the references in
// reverse from the last entry backwards meets each schema in turn.
func ImportSources(s *schemav1.Schema, referenced []*schemav1.Schema) (map[string]string, error) {
	out := map[string]string{}
	next := len(referenced) - 1
	seen := map[string]bool{}
	var walk func(s *schemav1.Schema) error
	walk = func(s *schemav1.Schema) error {
		refs := s.GetReferences()
		for i := len(refs) - 1; i >= 0; i-- {
			key := fmt.Sprintf("%s\x00%d", refs[i].GetSubject(), refs[i].GetVersion())
			if seen[key] {
				continue
			}
			seen[key] = true
			if next < 0 {
				return fmt.Errorf("schema id %d: reference %q (subject %s version %d) was not resolved by the registry", s.GetId(), refs[i].GetName(), refs[i].GetSubject(), refs[i].GetVersion())
			}
			dep := referenced[next]
			next--
			out[refs[i].GetName()] = dep.GetText()
			if err := walk(dep); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(s); err != nil {
		return nil, err
	}
	return out, nil
}

// MessageAt is the message the indexes of a Confluent framing name in file
// fd: the first index picks a top-level message, each further one a
// message nested in it.
func MessageAt(fd protoreflect.FileDescriptor, indexes []int) (protoreflect.MessageDescriptor, error) {
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for depth, x := range indexes {
		if x >= msgs.Len() {
			where := "the file"
			if md != nil {
				where = "message " + string(md.FullName())
			}
			return nil, fmt.Errorf("message index %d out of range: %s has %d messages at depth %d", x, where, msgs.Len(), depth)
		}
		md = msgs.Get(x)
		msgs = md.Messages()
	}
	if md == nil {
		return nil, fmt.Errorf("message index array is empty")
	}
	return md, nil
}

// descriptor reads text as the base64 of a serialized FileDescriptorProto,
// names it name and fills in the JSON names protoc would have written; nil
// for anything else (.proto source has spaces, semicolons or braces, which
// base64 has not).
func descriptor(text, name string) *descriptorpb.FileDescriptorProto {
	t := strings.TrimSpace(text)
	if t == "" || strings.ContainsAny(t, " \t\r\n;{") {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		return nil
	}
	fdp := &descriptorpb.FileDescriptorProto{}
	if err := proto.Unmarshal(raw, fdp); err != nil {
		return nil
	}
	fdp.Name = proto.String(name)
	fillJSONNames(fdp)
	return fdp
}

// fillJSONNames sets the json_name protoc writes into every field that has
// none: a descriptor built by hand (confluent-kafka-python users without
// protoc) may leave it out, and protocompile then takes every such field
// as named "" in JSON, which conflict.
func fillJSONNames(fdp *descriptorpb.FileDescriptorProto) {
	fields := func(fs []*descriptorpb.FieldDescriptorProto) {
		for _, f := range fs {
			if f.JsonName == nil {
				f.JsonName = proto.String(jsonName(f.GetName()))
			}
		}
	}
	var msgs func(ms []*descriptorpb.DescriptorProto)
	msgs = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			fields(m.Field)
			fields(m.Extension)
			msgs(m.NestedType)
		}
	}
	msgs(fdp.MessageType)
	fields(fdp.Extension)
}

// jsonName is protoc's JSON name of a field: underscores dropped, the
// letter after one upper-cased.
func jsonName(name string) string {
	var b strings.Builder
	upper := false
	for _, r := range name {
		switch {
		case r == '_':
			upper = true
		case upper:
			b.WriteString(strings.ToUpper(string(r)))
			upper = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
