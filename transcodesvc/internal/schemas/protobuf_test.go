package schemas

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
)

func TestMessageIndexes(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want []int
		rest []byte
	}{
		{"shorthand", []byte{0, 0xAA}, []int{0}, []byte{0xAA}},
		{"one", []byte{2, 2, 0xAA}, []int{1}, []byte{0xAA}},
		{"nested", []byte{4, 2, 6}, []int{1, 3}, []byte{}},
	} {
		got, rest, err := MessageIndexes(nil, tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != len(tc.want) || !bytes.Equal(rest, tc.rest) {
			t.Fatalf("%s: got %v rest %x, want %v rest %x", tc.name, got, rest, tc.want, tc.rest)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%s: got %v, want %v", tc.name, got, tc.want)
			}
		}
		if back := AppendMessageIndexes(nil, got); !bytes.Equal(back, tc.in[:len(tc.in)-len(tc.rest)]) {
			t.Fatalf("%s: AppendMessageIndexes(%v) = %x", tc.name, got, back)
		}
	}
	for _, bad := range [][]byte{{}, {0x80}, {4, 2}, {1}, {2, 1}} {
		_, _, err := MessageIndexes(nil, bad)
		var fe *FrameError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "bad message indexes") {
			t.Fatalf("MessageIndexes(%x) = %v, want a bad message indexes FrameError", bad, err)
		}
	}
}

func TestCompileProtobufWithReferences(t *testing.T) {
	common := &schemav1.Schema{Id: 1, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
		Text: `syntax = "proto3"; package c; message Money { int64 units = 1; }`}
	mid := &schemav1.Schema{Id: 2, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
		Text:       `syntax = "proto3"; package m; import "c/money.proto"; message Line { c.Money price = 1; }`,
		References: []*schemav1.SchemaReference{{Name: "c/money.proto", Subject: "money", Version: 1}}}
	other := &schemav1.Schema{Id: 3, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
		Text: `syntax = "proto3"; package o; message Tag { string v = 1; }`}
	top := &schemav1.Schema{Id: 4, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
		Text: `syntax = "proto3"; package t; import "m/line.proto"; import "o/tag.proto";
import "google/protobuf/timestamp.proto";
message Order { m.Line line = 1; o.Tag tag = 2; google.protobuf.Timestamp at = 3;
  message Inner { int32 x = 1; } }
message Second { string s = 1; }`,
		References: []*schemav1.SchemaReference{
			{Name: "m/line.proto", Subject: "line", Version: 1},
			{Name: "o/tag.proto", Subject: "tag", Version: 2},
		}}
	// The registry's order: dependencies first, then the schema using them.
	fd, err := CompileProtobuf(context.Background(), top, []*schemav1.Schema{common, mid, other})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		idx  []int
		want string
	}{{[]int{0}, "t.Order"}, {[]int{1}, "t.Second"}, {[]int{0, 0}, "t.Order.Inner"}} {
		md, err := MessageAt(fd, tc.idx)
		if err != nil || string(md.FullName()) != tc.want {
			t.Fatalf("MessageAt(%v) = %v, %v; want %s", tc.idx, md, err, tc.want)
		}
	}
	if line := fd.Messages().Get(0).Fields().ByName("line").Message(); line.Fields().ByName("price").Message().FullName() != "c.Money" {
		t.Fatalf("the nested reference did not resolve: %v", line.FullName())
	}
	for _, idx := range [][]int{{2}, {0, 1}, {1, 0}} {
		if _, err := MessageAt(fd, idx); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Fatalf("MessageAt(%v) = %v, want out of range", idx, err)
		}
	}
	if _, err := CompileProtobuf(context.Background(), top, []*schemav1.Schema{mid}); err == nil {
		t.Fatal("compiling without every referenced schema should fail")
	}
	bad := &schemav1.Schema{Id: 9, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Text: `syntax = "proto3"; message X { int32 a = 1`}
	if _, err := CompileProtobuf(context.Background(), bad, nil); err == nil || !strings.Contains(err.Error(), "schema id 9 does not compile") {
		t.Fatalf("bad schema: %v", err)
	}
	if _, err := CompileProtobuf(context.Background(), &schemav1.Schema{Id: 5, Type: schemav1.SchemaType_SCHEMA_TYPE_AVRO}, nil); err == nil {
		t.Fatal("an Avro schema should be refused")
	}
}

// serialized is fd as confluent-kafka-python registers a schema: the
// base64 of its FileDescriptorProto.
func serialized(t *testing.T, fd protoreflect.FileDescriptor) string {
	t.Helper()
	b, err := proto.Marshal(protodesc.ToFileDescriptorProto(fd))
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// TestCompileProtobufDescriptors: schemas registered as serialized
// FileDescriptorProtos (the schema and its reference) compile as their
// .proto source does.
func TestCompileProtobufDescriptors(t *testing.T) {
	pb := schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF
	commonText := &schemav1.Schema{Id: 1, Type: pb, Text: `syntax = "proto3"; package c; message Money { int64 units = 1; }`}
	common, err := CompileProtobuf(context.Background(), commonText, nil)
	if err != nil {
		t.Fatal(err)
	}
	refs := []*schemav1.SchemaReference{{Name: "c/money.proto", Subject: "money", Version: 1}}
	topText := &schemav1.Schema{Id: 2, Type: pb, References: refs, Text: `syntax = "proto3"; package t; import "c/money.proto";
import "google/protobuf/timestamp.proto"; message Order { c.Money price = 1; google.protobuf.Timestamp at = 2; }`}
	// The text form resolves the import by the reference's name; so must
	// the descriptor form, whose own name for it is replaced.
	top, err := CompileProtobuf(context.Background(), topText, []*schemav1.Schema{commonText})
	if err != nil {
		t.Fatal(err)
	}
	asDescriptor := &schemav1.Schema{Id: 3, Type: pb, References: refs, Text: serialized(t, top)}
	fd, err := CompileProtobuf(context.Background(), asDescriptor, []*schemav1.Schema{{Id: 1, Type: pb, Text: serialized(t, common)}})
	if err != nil {
		t.Fatal(err)
	}
	order := fd.Messages().ByName("Order")
	if order == nil || order.Fields().ByName("price").Message().FullName() != "c.Money" ||
		order.Fields().ByName("at").Message().FullName() != "google.protobuf.Timestamp" {
		t.Fatalf("compiled %v", fd)
	}
	// A descriptor built by hand (no protoc) may leave json_name out; the
	// runtime derives it, as protoc would have written it.
	bare := protodesc.ToFileDescriptorProto(fd)
	for _, m := range bare.MessageType {
		for _, f := range m.Field {
			f.JsonName = nil
		}
	}
	b, err := proto.Marshal(bare)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CompileProtobuf(context.Background(), &schemav1.Schema{Id: 4, Type: pb, References: refs, Text: base64.StdEncoding.EncodeToString(b)},
		[]*schemav1.Schema{{Id: 1, Type: pb, Text: serialized(t, common)}}); err != nil {
		t.Fatalf("descriptor without json_name: %v", err)
	}
	for _, text := range []string{"", `syntax = "proto3";`, "AAAA AAAA", "not base64!"} {
		if _, ok := descriptorText(text); ok {
			t.Errorf("%q taken for a descriptor", text)
		}
	}
}

func FuzzMessageIndexes(f *testing.F) {
	f.Add([]byte{0, 1})
	f.Add([]byte{4, 2, 6, 8})
	f.Fuzz(func(t *testing.T, in []byte) {
		idx, rest, err := MessageIndexes(nil, in)
		if err != nil {
			return
		}
		head := AppendMessageIndexes(nil, idx)
		if len(head)+len(rest) > len(in) {
			t.Fatalf("%x: re-encoded header %x and rest %x longer than the input", in, head, rest)
		}
	})
}
