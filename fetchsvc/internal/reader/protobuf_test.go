package reader

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"

	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/protoschema"
)

// protoTopicSchemas answers GetTopicSchema with a Protobuf schema that
// imports another through a reference, as the registry resolves it.
type protoTopicSchemas struct {
	schemav1.SchemaServiceClient
	asked []*schemav1.GetTopicSchemaRequest
	text  string
}

func (f *protoTopicSchemas) GetTopicSchema(_ context.Context, req *schemav1.GetTopicSchemaRequest, _ ...grpc.CallOption) (*schemav1.GetTopicSchemaResponse, error) {
	f.asked = append(f.asked, req)
	return &schemav1.GetTopicSchemaResponse{
		Schema: &schemav1.Schema{Id: 21, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Text: f.text,
			References: []*schemav1.SchemaReference{{Name: "shop/common.proto", Subject: "common", Version: 1}}},
		Referenced: []*schemav1.Schema{{Id: 20, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
			Text: `syntax = "proto3"; package shop; message Money { int64 cents = 1; }`}},
	}, nil
}

func TestWithProtobuf(t *testing.T) {
	m := &catalogv1.TopicMapping{Topic: "shop.orders", Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF}}
	cols := []types.Field{{Name: "id", Type: types.DataType{Root: types.BigInt}},
		{Name: "price", Type: types.DataType{Root: types.Row, Nullable: true, Fields: []types.Field{{Name: "cents", Type: types.DataType{Root: types.BigInt, Nullable: true}}}}}}
	rp, err := rebuild.Compile(m, cols)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newTables(nil, nil).withProtobuf(context.Background(), m, rp); err == nil || !strings.Contains(err.Error(), "without a schema registry (-schema-addr") {
		t.Fatalf("without registry: %v", err)
	}
	reg := &protoTopicSchemas{text: `syntax = "proto3"; import "shop/common.proto"; message Order { int64 id = 1; shop.Money price = 2; }`}
	rp, err = newTables(nil, reg).withProtobuf(context.Background(), m, rp)
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.asked) != 1 || reg.asked[0].GetTopic() != "shop.orders" || reg.asked[0].GetType() != schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF {
		t.Fatalf("asked %v, want the topic's value subject in Protobuf", reg.asked)
	}
	schema, err := types.ArrowSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	rb.Field(0).(*array.Int64Builder).Append(3)
	sb := rb.Field(1).(*array.StructBuilder)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.Int64Builder).Append(250)
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var r rebuild.Record
	if err := rp.Rebuild(&r, rec, 0, 0); err != nil {
		t.Fatal(err)
	}
	// Magic byte, id 21, [0] shorthand, id = 3, price = {cents: 250}.
	if want := "\x00\x00\x00\x00\x15\x00\x08\x03\x12\x03\x08\xfa\x01"; string(r.Value) != want {
		t.Fatalf("value %x, want %x", r.Value, want)
	}

	// The same schema registered as confluent-kafka-python registers it:
	// a serialized FileDescriptorProto in base64.
	resp, _ := reg.GetTopicSchema(context.Background(), &schemav1.GetTopicSchemaRequest{})
	fd, err := protoschema.Registered(context.Background(), resp.GetSchema(), resp.GetReferenced())
	if err != nil {
		t.Fatal(err)
	}
	// Built by hand, without protoc: no json_name in its fields.
	fdp := protodesc.ToFileDescriptorProto(fd)
	for _, m := range fdp.MessageType {
		for _, f := range m.Field {
			f.JsonName = nil
		}
	}
	raw, err := proto.Marshal(fdp)
	if err != nil {
		t.Fatal(err)
	}
	reg.text = base64.StdEncoding.EncodeToString(raw)
	rp2, err := newTables(nil, reg).withProtobuf(context.Background(), m, rp)
	if err != nil {
		t.Fatal(err)
	}
	var r2 rebuild.Record
	if err := rp2.Rebuild(&r2, rec, 0, 0); err != nil || string(r2.Value) != string(r.Value) {
		t.Fatalf("from the descriptor: %x %v, want %x", r2.Value, err, r.Value)
	}

	reg.text = `syntax = "proto3"; message Order { string id = 1; }`
	if _, err := newTables(nil, reg).withProtobuf(context.Background(), m, rp); err == nil || !strings.Contains(err.Error(), "does not fit the table") {
		t.Fatalf("schema that does not fit: %v", err)
	}
	reg.text = `syntax = "proto3"; message {`
	if _, err := newTables(nil, reg).withProtobuf(context.Background(), m, rp); err == nil || !strings.Contains(err.Error(), "schema id 21 does not compile as Protobuf") {
		t.Fatalf("schema that does not compile: %v", err)
	}
}
