package reader

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// topicSchemas answers GetTopicSchema with one schema, recording what was
// asked.
type topicSchemas struct {
	schemav1.SchemaServiceClient
	asked []*schemav1.GetTopicSchemaRequest
	text  string
	err   error
}

func (f *topicSchemas) GetTopicSchema(_ context.Context, req *schemav1.GetTopicSchemaRequest, _ ...grpc.CallOption) (*schemav1.GetTopicSchemaResponse, error) {
	f.asked = append(f.asked, req)
	if f.err != nil {
		return nil, f.err
	}
	return &schemav1.GetTopicSchemaResponse{Schema: &schemav1.Schema{Id: 12, Type: schemav1.SchemaType_SCHEMA_TYPE_AVRO, Text: f.text}}, nil
}

func TestWithAvro(t *testing.T) {
	m := &catalogv1.TopicMapping{Topic: "shop.orders.20261204", FlussPartition: &catalogv1.FlussPartition{TableTopic: "shop.orders"},
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO}}
	rp, err := rebuild.Compile(m, []types.Field{{Name: "id", Type: types.DataType{Root: types.BigInt}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newTables(nil, nil).withAvro(context.Background(), m, rp); err == nil || !strings.Contains(err.Error(), "without a schema registry (-schema-addr") {
		t.Fatalf("without registry: %v", err)
	}
	reg := &topicSchemas{text: `{"type":"record","name":"o","fields":[{"name":"id","type":"long"}]}`}
	if _, err := newTables(nil, reg).withAvro(context.Background(), m, rp); err != nil {
		t.Fatal(err)
	}
	if len(reg.asked) != 1 || reg.asked[0].GetTopic() != "shop.orders" || reg.asked[0].GetKey() || reg.asked[0].GetType() != schemav1.SchemaType_SCHEMA_TYPE_AVRO {
		t.Fatalf("asked %v, want the table's topic's value subject in Avro", reg.asked)
	}
	reg.err = errors.New("registry down")
	if _, err := newTables(nil, reg).withAvro(context.Background(), m, rp); err == nil || !strings.Contains(err.Error(), "registry down") {
		t.Fatalf("registry error: %v", err)
	}
	// A JSON Schema topic asks for a JSON Schema and refuses another type.
	reg.err = nil
	if _, _, err := newTables(nil, reg).topicSchema(context.Background(), m, false, schemav1.SchemaType_SCHEMA_TYPE_JSON); err == nil ||
		!strings.Contains(err.Error(), "schema id 12 for topic shop.orders is SCHEMA_TYPE_AVRO, not SCHEMA_TYPE_JSON") {
		t.Fatalf("type mismatch: %v", err)
	}
	if last := reg.asked[len(reg.asked)-1]; last.GetType() != schemav1.SchemaType_SCHEMA_TYPE_JSON {
		t.Fatalf("asked %v, want a JSON Schema", last)
	}
	reg.text = `{"type":"record","name":"o","fields":[{"name":"id","type":"string"}]}`
	if _, err := newTables(nil, reg).withAvro(context.Background(), m, rp); err == nil || !strings.Contains(err.Error(), "schema id 12 does not fit the table") {
		t.Fatalf("schema that does not fit: %v", err)
	}
}

// TestWithFramedKeys: a primary-key table with kafka.key.format=avro asks
// for its key subject and serves keys framed with its id.
func TestWithFramedKeys(t *testing.T) {
	m := &catalogv1.TopicMapping{Topic: "shop.orders", Kind: catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, PrimaryKeys: []string{"id"},
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON, KeyFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO}}
	rp, err := rebuild.Compile(m, []types.Field{{Name: "id", Type: types.DataType{Root: types.BigInt}}, {Name: "v", Type: types.DataType{Root: types.String, Nullable: true}}})
	if err != nil {
		t.Fatal(err)
	}
	reg := &topicSchemas{text: `{"type":"record","name":"k","fields":[{"name":"id","type":"long"}]}`}
	if _, err := newTables(nil, reg).withFramedKeys(context.Background(), m, rp); err != nil {
		t.Fatal(err)
	}
	if len(reg.asked) != 1 || reg.asked[0].GetTopic() != "shop.orders" || !reg.asked[0].GetKey() || reg.asked[0].GetType() != schemav1.SchemaType_SCHEMA_TYPE_AVRO {
		t.Fatalf("asked %v, want the key subject in Avro", reg.asked)
	}
	reg.text = `{"type":"record","name":"k","fields":[{"name":"id","type":"string"}]}`
	if _, err := newTables(nil, reg).withFramedKeys(context.Background(), m, rp); err == nil || !strings.Contains(err.Error(), "key: rebuild: schema id 12 does not fit the table") {
		t.Fatalf("key schema that does not fit: %v", err)
	}
}
