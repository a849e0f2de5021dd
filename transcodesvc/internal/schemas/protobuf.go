package schemas

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
)

// maxMessageIndexes bounds the message-index array of a framed Protobuf
// value; nesting deeper than that is not a real schema.
const maxMessageIndexes = 64

// MessageIndexes reads the message-index array a Confluent Protobuf
// serializer writes after the schema id: a zig-zag varint count, then that
// many zig-zag varint indexes (the path from the file's top-level messages
// to the nested one used). A single 0 byte is the shorthand for [0], the
// file's first message. It appends the indexes to dst (so a caller can
// reuse one slice from record to record) and returns the Protobuf payload.
func MessageIndexes(dst []int, payload []byte) ([]int, []byte, error) {
	n, l := protowire.ConsumeVarint(payload)
	if l < 0 {
		return dst, nil, &FrameError{Msg: "bad message indexes: the value ends inside the message-index count after the schema id"}
	}
	payload = payload[l:]
	count := protowire.DecodeZigZag(n)
	if count == 0 {
		return append(dst, 0), payload, nil
	}
	if count < 0 || count > maxMessageIndexes {
		return dst, nil, &FrameError{Msg: fmt.Sprintf("bad message indexes: count %d is not between 1 and %d", count, maxMessageIndexes)}
	}
	for i := range int(count) {
		v, l := protowire.ConsumeVarint(payload)
		if l < 0 {
			return dst, nil, &FrameError{Msg: fmt.Sprintf("bad message indexes: the value ends inside message index %d of %d", i+1, count)}
		}
		payload = payload[l:]
		x := protowire.DecodeZigZag(v)
		if x < 0 || x > 1<<20 {
			return dst, nil, &FrameError{Msg: fmt.Sprintf("bad message indexes: index %d is %d", i+1, x)}
		}
		dst = append(dst, int(x))
	}
	return dst, payload, nil
}

// AppendMessageIndexes appends the message-index array of indexes, with
// the one-byte shorthand for [0].
func AppendMessageIndexes(dst []byte, indexes []int) []byte {
	if len(indexes) == 1 && indexes[0] == 0 {
		return append(dst, 0)
	}
	dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(int64(len(indexes))))
	for _, x := range indexes {
		dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(int64(x)))
	}
	return dst
}

// MessageAt is the message the indexes name in file fd: the first index
// picks a top-level message, each further one a message nested in it.
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

// protoRootName is the file name the registered schema is compiled under.
const protoRootName = "ferry-registered.proto"

// CompileProtobuf compiles a registered .proto schema with the schemas it
// imports. referenced is what GetSchema returns: each import's schema,
// dependencies before dependents, without repeats; the import names come
// from the references of s and of the referenced schemas themselves.
// Well-known imports (google/protobuf/*.proto) need no reference. Each
// text may be .proto source or, as confluent-kafka-python registers it,
// the base64 of a serialized FileDescriptorProto.
func CompileProtobuf(ctx context.Context, s *schemav1.Schema, referenced []*schemav1.Schema) (protoreflect.FileDescriptor, error) {
	if s.GetType() != schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF {
		return nil, fmt.Errorf("schema id %d is a %s schema, not Protobuf", s.GetId(), typeName(s.GetType()))
	}
	sources, err := importSources(s, referenced)
	if err != nil {
		return nil, err
	}
	sources[protoRootName] = s.GetText()
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
			text, ok := sources[path]
			if !ok {
				return protocompile.SearchResult{}, fmt.Errorf("import %q is neither a reference of the schema nor a well-known type", path)
			}
			if fdp, ok := descriptorText(text); ok {
				fdp.Name = proto.String(path)
				return protocompile.SearchResult{Proto: fdp}, nil
			}
			return protocompile.SearchResult{Source: strings.NewReader(text)}, nil
		})),
	}
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

// importSources names each referenced schema by the import path that
// refers to it. The registry lists referenced schemas in post-order of a
// walk of the references that skips repeats, so walking the references in
// reverse from the last entry backwards meets each schema in turn.
func importSources(s *schemav1.Schema, referenced []*schemav1.Schema) (map[string]string, error) {
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
