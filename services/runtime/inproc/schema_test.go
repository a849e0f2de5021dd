package inproc

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
)

type schemaServer struct {
	schemav1.UnimplementedSchemaServiceServer
}

func (schemaServer) GetSchema(_ context.Context, in *schemav1.GetSchemaRequest) (*schemav1.GetSchemaResponse, error) {
	if in.GetId() != 7 {
		return nil, status.Error(codes.NotFound, "no such id")
	}
	return &schemav1.GetSchemaResponse{Schema: &schemav1.Schema{Id: 7, Text: `"string"`}}, nil
}

func (schemaServer) GetTopicSchema(_ context.Context, in *schemav1.GetTopicSchemaRequest) (*schemav1.GetTopicSchemaResponse, error) {
	return &schemav1.GetTopicSchemaResponse{Schema: &schemav1.Schema{Id: 8, Text: in.GetTopic()}}, nil
}

// Both SchemaService methods reach the server, answers and errors alike.
func TestSchemaClientCallsServer(t *testing.T) {
	c, _, _ := newConn(t)
	client := c.Schema(schemaServer{})
	ctx := context.Background()
	got, err := client.GetSchema(ctx, &schemav1.GetSchemaRequest{Id: 7})
	if err != nil || got.GetSchema().GetText() != `"string"` {
		t.Fatalf("GetSchema = %v, %v", got, err)
	}
	if _, err := client.GetSchema(ctx, &schemav1.GetSchemaRequest{Id: 9}); status.Code(err) != codes.NotFound {
		t.Errorf("GetSchema of an unknown id: %v, want NotFound", err)
	}
	ts, err := client.GetTopicSchema(ctx, &schemav1.GetTopicSchemaRequest{Topic: "orders"})
	if err != nil || ts.GetSchema().GetId() != 8 || ts.GetSchema().GetText() != "orders" {
		t.Errorf("GetTopicSchema = %v, %v", ts, err)
	}
}
