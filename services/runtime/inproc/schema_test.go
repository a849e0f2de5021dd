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

func (schemaServer) GetSchema(_ context.Context, r *schemav1.GetSchemaRequest) (*schemav1.GetSchemaResponse, error) {
	if r.GetId() != 3 {
		return nil, status.Error(codes.NotFound, "no such id")
	}
	return &schemav1.GetSchemaResponse{Schema: &schemav1.Schema{Id: 3, Text: `"long"`}}, nil
}

func TestSchemaClient(t *testing.T) {
	c, _, _ := newConn(t)
	client := c.Schema(schemaServer{})
	resp, err := client.GetSchema(context.Background(), &schemav1.GetSchemaRequest{Id: 3})
	if err != nil || resp.GetSchema().GetText() != `"long"` {
		t.Fatalf("GetSchema: %v %v", resp, err)
	}
	if _, err := client.GetSchema(context.Background(), &schemav1.GetSchemaRequest{Id: 4}); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown id: %v, want NotFound as over gRPC", err)
	}
	if _, err := client.GetTopicSchema(context.Background(), &schemav1.GetTopicSchemaRequest{Topic: "t"}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("GetTopicSchema: %v", err)
	}
}
