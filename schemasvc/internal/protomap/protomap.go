// Package protomap relates Protobuf schemas to Fluss columns, as avromap
// does for Avro: Parse compiles a registered .proto (or the base64
// FileDescriptorProto Confluent's serializers send) with its imports, Check
// says whether records of the schema's first message can become rows of a
// table (and, when not, which field and why), Derive writes the .proto of a
// table's columns, and Compatible compares two versions of a subject. The
// type rules are services/protoschema's table, which transcodesvc's decoder
// and fetchsvc's encoder read too.
package protomap

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/jhump/protoreflect/v2/protoprint"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ferrygw/ferry/services/protoschema"
)

// Schema is a compiled Protobuf schema.
type Schema struct {
	file      protoreflect.FileDescriptor
	text      string
	canonical string
}

// Parse compiles a schema: .proto source, or a base64-encoded
// FileDescriptorProto (what confluent-kafka-python's ProtobufSerializer
// registers). imports holds the text of every file it imports, directly or
// not, by import path; google/protobuf/*.proto need none.
func Parse(text string, imports map[string]string) (*Schema, error) {
	fd, fromDescriptor, err := protoschema.Compile(context.Background(), text, imports)
	if err != nil {
		return nil, err
	}
	canonical, err := printFile(fd)
	if err != nil {
		return nil, err
	}
	s := &Schema{file: fd, text: text, canonical: canonical}
	if fromDescriptor {
		// Stored and served as .proto source, as Confluent's registry does:
		// Java deserializers and transcodesvc read the text.
		s.text = canonical
	}
	return s, nil
}

// printFile renders a compiled file as .proto source: the form two
// registrations are compared and ids derived by, whichever way each was
// sent (source with its comments and layout, or a descriptor).
func printFile(fd protoreflect.FileDescriptor) (string, error) {
	var b strings.Builder
	if err := (&protoprint.Printer{OmitComments: protoprint.CommentsAll}).PrintProtoFile(fd, &b); err != nil {
		return "", fmt.Errorf("printing the schema: %w", err)
	}
	return b.String(), nil
}

// Text is the schema as it is stored and served: the text registered, or
// the .proto source of a registered descriptor.
func (s *Schema) Text() string { return s.text }

// Canonical is the .proto source printed from the compiled schema, without
// comments.
func (s *Schema) Canonical() string { return s.canonical }

// Message is the message a subject's records are: the file's first, which
// Confluent's serializers frame as message index [0]; nil when the file
// defines none.
func (s *Schema) Message() protoreflect.MessageDescriptor {
	if s.file.Messages().Len() == 0 {
		return nil
	}
	return s.file.Messages().Get(0)
}

// CheckBuiltin reports why s, registered under the built-in import path
// path, is not a copy of that file (protoschema.CheckBuiltinFile).
func (s *Schema) CheckBuiltin(path string) error { return protoschema.CheckBuiltinFile(path, s.file) }

// DeriveBuiltin is Ferry's own copy of the built-in import path as .proto
// source: the latest version of a subject named after it that nobody
// registered a copy under.
func DeriveBuiltin(path string) (string, error) {
	fd := protoschema.BuiltinFile(path)
	if fd == nil {
		return "", fmt.Errorf("%s is not a built-in Protobuf import", path)
	}
	return printFile(fd)
}

// Serialized is the schema as a base64 FileDescriptorProto, the
// "serialized" format confluent-kafka-python's deserializers ask for.
func (s *Schema) Serialized() (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(protodesc.ToFileDescriptorProto(s.file))
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}
