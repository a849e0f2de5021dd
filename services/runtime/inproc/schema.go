package inproc

import (
	"context"

	"google.golang.org/grpc"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
)

// Schema is a SchemaService client that calls srv.
func (c *Conn) Schema(srv schemav1.SchemaServiceServer) schemav1.SchemaServiceClient {
	return schemaClient{c, srv}
}

type schemaClient struct {
	c   *Conn
	srv schemav1.SchemaServiceServer
}

func (x schemaClient) GetSchema(ctx context.Context, in *schemav1.GetSchemaRequest, _ ...grpc.CallOption) (*schemav1.GetSchemaResponse, error) {
	return unary(ctx, x.c, schemav1.SchemaService_GetSchema_FullMethodName, in, x.srv.GetSchema)
}

func (x schemaClient) GetTopicSchema(ctx context.Context, in *schemav1.GetTopicSchemaRequest, _ ...grpc.CallOption) (*schemav1.GetTopicSchemaResponse, error) {
	return unary(ctx, x.c, schemav1.SchemaService_GetTopicSchema_FullMethodName, in, x.srv.GetTopicSchema)
}
