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
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
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
	root := protocompile.SearchResult{Source: strings.NewReader(text)}
	if fdp := descriptor(text, RootName); fdp != nil {
		root, fromDescriptor = protocompile.SearchResult{Proto: fdp}, true
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		if path == RootName {
			return root, nil
		}
		t, ok := imports[path]
		if !ok {
			if src, builtin := builtinSources[path]; builtin {
				return protocompile.SearchResult{Source: strings.NewReader(src)}, nil
			}
			return protocompile.SearchResult{}, fmt.Errorf("import %q is neither a reference of the schema nor a built-in import (google/protobuf/*.proto, %s, %s, %s)", path, DecimalImport, DateImport, TimeOfDayImport)
		}
		if fdp := descriptor(t, path); fdp != nil {
			return protocompile.SearchResult{Proto: fdp}, nil
		}
		return protocompile.SearchResult{Source: strings.NewReader(t)}, nil
	}))}
	files, err := c.Compile(ctx, RootName)
	if err != nil {
		return nil, false, err
	}
	return files[0], fromDescriptor, nil
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

// compileBuiltin compiles a built-in import's source on its own.
func compileBuiltin(path, src string) (protoreflect.FileDescriptor, error) {
	c := protocompile.Compiler{Resolver: protocompile.ResolverFunc(func(p string) (protocompile.SearchResult, error) {
		if p != path {
			return protocompile.SearchResult{}, fmt.Errorf("built-in %s imports %s", path, p)
		}
		return protocompile.SearchResult{Source: strings.NewReader(src)}, nil
	})}
	files, err := c.Compile(context.Background(), path)
	if err != nil {
		return nil, fmt.Errorf("built-in %s: %w", path, err)
	}
	return files[0], nil
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
