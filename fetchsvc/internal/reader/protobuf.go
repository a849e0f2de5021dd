package reader

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
)

// withProtobuf gives rp the Protobuf schema the topic's values are served
// in.
func (t *tables) withProtobuf(ctx context.Context, m *catalogv1.TopicMapping, rp *rebuild.Plan) (*rebuild.Plan, error) {
	s, refs, err := t.topicSchema(ctx, m, schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF)
	if err != nil {
		return nil, err
	}
	fd, err := compileProtobuf(ctx, s, refs)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", m.GetTopic(), err)
	}
	return rp.WithProtobuf(s.GetId(), fd)
}

// protoRootName is the file name the topic's schema is compiled under.
const protoRootName = "ferry-topic.proto"

// compileProtobuf compiles a registered .proto schema with the schemas it
// imports. referenced is what the registry returns with it: each import's
// schema, dependencies before dependents, without repeats, in the order a
// walk of the references (last first) meets them. Well-known imports
// (google/protobuf/*.proto) need no reference. Each text may be .proto
// source or, as confluent-kafka-python registers it, the base64 of a
// serialized FileDescriptorProto. (transcodesvc compiles writer schemas
// the same way, in its own module.)
func compileProtobuf(ctx context.Context, s *schemav1.Schema, referenced []*schemav1.Schema) (protoreflect.FileDescriptor, error) {
	sources := map[string]string{protoRootName: s.GetText()}
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
				return fmt.Errorf("schema id %d: reference %q was not resolved by the registry", s.GetId(), refs[i].GetName())
			}
			dep := referenced[next]
			next--
			sources[refs[i].GetName()] = dep.GetText()
			if err := walk(dep); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(s); err != nil {
		return nil, err
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		text, ok := sources[path]
		if !ok {
			return protocompile.SearchResult{}, fmt.Errorf("import %q is neither a reference of the schema nor a well-known type", path)
		}
		if fdp, ok := descriptorText(text); ok {
			fdp.Name = proto.String(path)
			return protocompile.SearchResult{Proto: fdp}, nil
		}
		return protocompile.SearchResult{Source: strings.NewReader(text)}, nil
	}))}
	files, err := c.Compile(ctx, protoRootName)
	if err != nil {
		return nil, fmt.Errorf("schema id %d does not compile as Protobuf: %w", s.GetId(), err)
	}
	return files[0], nil
}

// descriptorText reads schema text that is the base64 of a serialized
// FileDescriptorProto; false for anything else (.proto source has spaces,
// semicolons or braces, which base64 has not).
func descriptorText(text string) (*descriptorpb.FileDescriptorProto, bool) {
	t := strings.TrimSpace(text)
	if t == "" || strings.ContainsAny(t, " \t\n;{") {
		return nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		return nil, false
	}
	fdp := &descriptorpb.FileDescriptorProto{}
	if err := proto.Unmarshal(raw, fdp); err != nil {
		return nil, false
	}
	fillJSONNames(fdp)
	return fdp, true
}

// fillJSONNames sets the json_name protoc writes into every field that has
// none: a descriptor built by hand (confluent-kafka-python users without
// protoc) may leave it out, and protocompile then takes every such field
// as named "" in JSON, which conflict.
func fillJSONNames(fdp *descriptorpb.FileDescriptorProto) {
	fields := func(fs []*descriptorpb.FieldDescriptorProto) {
		for _, f := range fs {
			if f.JsonName == nil {
				f.JsonName = proto.String(protoJSONName(f.GetName()))
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

// protoJSONName is protoc's JSON name of a field: underscores dropped, the
// letter after one upper-cased.
func protoJSONName(name string) string {
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
