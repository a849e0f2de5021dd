package registry

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ferrygw/ferry/schemasvc/internal/store/storetest"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
)

func TestSchemaService(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, &storetest.MemLog{}, ordersCatalog())
	srv := NewServer(reg)
	if _, err := srv.GetSchema(ctx, &schemav1.GetSchemaRequest{Id: 42}); status.Code(err) != codes.NotFound {
		t.Errorf("unknown id: %v", err)
	}
	// Nobody registered orders-value: the table's schema is derived and
	// registered, and GetSchema finds it by the id it got.
	ts, err := srv.GetTopicSchema(ctx, &schemav1.GetTopicSchemaRequest{Topic: "orders", Type: schemav1.SchemaType_SCHEMA_TYPE_AVRO})
	if err != nil {
		t.Fatal(err)
	}
	got, err := srv.GetSchema(ctx, &schemav1.GetSchemaRequest{Id: ts.GetSchema().GetId()})
	if err != nil || got.GetSchema().GetText() != ts.GetSchema().GetText() || got.GetSchema().GetType() != schemav1.SchemaType_SCHEMA_TYPE_AVRO {
		t.Errorf("GetSchema(%d) = %v %v", ts.GetSchema().GetId(), got, err)
	}
	// A registered version wins over the derived one once it is the latest.
	id, _, err := reg.Register(ctx, "orders-value", Input{Text: ordersV1})
	if err != nil {
		t.Fatal(err)
	}
	ts, err = srv.GetTopicSchema(ctx, &schemav1.GetTopicSchemaRequest{Topic: "orders"})
	if err != nil || ts.GetSchema().GetId() != id {
		t.Errorf("after registration: %v %v, want id %d", ts, err, id)
	}
	if _, err := srv.GetTopicSchema(ctx, &schemav1.GetTopicSchemaRequest{Topic: "orders", Key: true}); status.Code(err) != codes.NotFound {
		t.Errorf("key of a table without key column: %v", err)
	}
	if _, err := srv.GetTopicSchema(ctx, &schemav1.GetTopicSchemaRequest{Topic: "nosuch"}); status.Code(err) != codes.NotFound {
		t.Errorf("unknown topic: %v", err)
	}
	// A topic nobody registered a schema for, asked for in JSON Schema.
	js, err := NewServer(newRegistry(t, &storetest.MemLog{}, ordersCatalog())).GetTopicSchema(ctx,
		&schemav1.GetTopicSchemaRequest{Topic: "orders", Type: schemav1.SchemaType_SCHEMA_TYPE_JSON})
	if err != nil || js.GetSchema().GetType() != schemav1.SchemaType_SCHEMA_TYPE_JSON || !strings.Contains(js.GetSchema().GetText(), `"required":["id"]`) {
		t.Errorf("JSON derivation: %v %v", js, err)
	}
	// Unset, the type is the one the table's value format reads.
	cat := ordersCatalog()
	cat.topics["orders"].Mapping.ValueFormat = catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA
	js, err = NewServer(newRegistry(t, &storetest.MemLog{}, cat)).GetTopicSchema(ctx, &schemav1.GetTopicSchemaRequest{Topic: "orders"})
	if err != nil || js.GetSchema().GetType() != schemav1.SchemaType_SCHEMA_TYPE_JSON {
		t.Errorf("unset type on a json-schema table: %v %v", js, err)
	}
}
