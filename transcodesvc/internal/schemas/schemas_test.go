package schemas

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
)

func TestFrame(t *testing.T) {
	id, payload, err := Frame(append(AppendFrame(nil, 0x01020304), 9, 8))
	if err != nil || id != 0x01020304 || string(payload) != "\x09\x08" {
		t.Fatalf("got %d %x %v", id, payload, err)
	}
	for v, want := range map[string]string{
		"":              "missing magic byte: the value is empty",
		"{}":            "missing magic byte: the value starts with 0x7b",
		"\x00\x00\x00":  "truncated payload: the value has 3 bytes",
		"\x01\x00\x00x": "starts with 0x01",
	} {
		var fe *FrameError
		if _, _, err := Frame([]byte(v)); !errors.As(err, &fe) || !strings.Contains(err.Error(), want) {
			t.Errorf("Frame(%q) = %v, want %q", v, err, want)
		}
	}
}

func TestParseAvro(t *testing.T) {
	if _, err := ParseAvro(&schemav1.Schema{Id: 3, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Text: "syntax = \"proto3\";"}, nil); err == nil || !strings.Contains(err.Error(), "schema id 3 is a PROTOBUF schema, not Avro") {
		t.Fatalf("protobuf: %v", err)
	}
	if _, err := ParseAvro(&schemav1.Schema{Id: 4, Text: `{"type":"record"`}, nil); err == nil || !strings.Contains(err.Error(), "schema id 4 does not parse as Avro") {
		t.Fatalf("bad text: %v", err)
	}
	// A reference resolves by name, in this parse only.
	ref := &schemav1.Schema{Id: 1, Text: `{"type":"record","name":"a.Addr","fields":[{"name":"city","type":"string"}]}`}
	s, err := ParseAvro(&schemav1.Schema{Id: 2, Text: `{"type":"record","name":"a.Order","fields":[{"name":"addr","type":"a.Addr"}]}`}, []*schemav1.Schema{ref})
	if err != nil || s.Type() != "record" {
		t.Fatalf("with reference: %v", err)
	}
	if _, err := ParseAvro(&schemav1.Schema{Id: 5, Text: `{"type":"record","name":"a.Other","fields":[{"name":"addr","type":"a.Addr"}]}`}, nil); err == nil {
		t.Fatal("a name parsed for another schema must not resolve here")
	}
}

type countingClient struct {
	schemav1.SchemaServiceClient
	calls int
}

func (c *countingClient) GetSchema(_ context.Context, req *schemav1.GetSchemaRequest, _ ...grpc.CallOption) (*schemav1.GetSchemaResponse, error) {
	c.calls++
	if req.GetId() < 0 {
		return nil, status.Error(codes.NotFound, "no")
	}
	return &schemav1.GetSchemaResponse{Schema: &schemav1.Schema{Id: req.GetId(), Type: schemav1.SchemaType_SCHEMA_TYPE_AVRO, Text: `"long"`}}, nil
}

func TestCacheBoundAndUnknownIDs(t *testing.T) {
	client := &countingClient{}
	c := NewCache(client, 2)
	got := map[int32]*Schema{}
	if err := c.Resolve(context.Background(), []int32{1, 2, -1, 3}, got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[-1] != nil || c.Len() != 2 || client.calls != 4 {
		t.Fatalf("got %d schemas, cache %d, calls %d", len(got), c.Len(), client.calls)
	}
	// 3 and 2 are kept, 1 was forgotten, -1 is asked again.
	if err := c.Resolve(context.Background(), []int32{3, 2, -1, 1}, map[int32]*Schema{}); err != nil {
		t.Fatal(err)
	}
	if client.calls != 6 {
		t.Fatalf("calls %d, want 6 (-1 and 1 again)", client.calls)
	}
}

// protoClient answers id 1 with a Protobuf schema importing id 2's, and id
// 3 with one that does not compile.
type protoClient struct{ schemav1.SchemaServiceClient }

func (protoClient) GetSchema(_ context.Context, req *schemav1.GetSchemaRequest, _ ...grpc.CallOption) (*schemav1.GetSchemaResponse, error) {
	common := &schemav1.Schema{Id: 2, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Text: `syntax = "proto3"; package c; message Addr { string city = 1; }`}
	switch req.GetId() {
	case 1:
		return &schemav1.GetSchemaResponse{Schema: &schemav1.Schema{Id: 1, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
			Text:       `syntax = "proto3"; import "common.proto"; message Order { c.Addr addr = 1; }`,
			References: []*schemav1.SchemaReference{{Name: "common.proto", Subject: "common", Version: 1}}},
			Referenced: []*schemav1.Schema{common}}, nil
	case 3:
		return &schemav1.GetSchemaResponse{Schema: &schemav1.Schema{Id: 3, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Text: `message {`}}, nil
	}
	return nil, status.Error(codes.NotFound, "no")
}

func TestCacheCompilesProtobuf(t *testing.T) {
	got := map[int32]*Schema{}
	if err := NewCache(protoClient{}, 8).Resolve(context.Background(), []int32{1, 3}, got); err != nil {
		t.Fatal(err)
	}
	if s := got[1]; s == nil || s.Err != nil || s.Proto == nil || s.Proto.Messages().ByName("Order") == nil {
		t.Fatalf("id 1: %+v", s)
	}
	if s := got[3]; s == nil || s.Proto != nil || s.Err == nil || !strings.Contains(s.Err.Error(), "schema id 3 does not compile as Protobuf") {
		t.Fatalf("id 3: %+v", s)
	}
}
