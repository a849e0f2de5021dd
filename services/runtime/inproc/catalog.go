package inproc

import (
	"context"

	"google.golang.org/grpc"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// Catalog is a CatalogService client that calls srv.
func (c *Conn) Catalog(srv catalogv1.CatalogServiceServer) catalogv1.CatalogServiceClient {
	return catalogClient{c, srv}
}

type catalogClient struct {
	c   *Conn
	srv catalogv1.CatalogServiceServer
}

func (x catalogClient) ResolveTopics(ctx context.Context, in *catalogv1.ResolveTopicsRequest, _ ...grpc.CallOption) (*catalogv1.ResolveTopicsResponse, error) {
	return unary(ctx, x.c, catalogv1.CatalogService_ResolveTopics_FullMethodName, in, x.srv.ResolveTopics)
}

func (x catalogClient) ListTopics(ctx context.Context, in *catalogv1.ListTopicsRequest, _ ...grpc.CallOption) (*catalogv1.ListTopicsResponse, error) {
	return unary(ctx, x.c, catalogv1.CatalogService_ListTopics_FullMethodName, in, x.srv.ListTopics)
}

func (x catalogClient) Metadata(ctx context.Context, in *catalogv1.MetadataRequest, _ ...grpc.CallOption) (*catalogv1.MetadataResponse, error) {
	return unary(ctx, x.c, catalogv1.CatalogService_Metadata_FullMethodName, in, x.srv.Metadata)
}

func (x catalogClient) Heartbeat(ctx context.Context, in *catalogv1.HeartbeatRequest, _ ...grpc.CallOption) (*catalogv1.HeartbeatResponse, error) {
	return unary(ctx, x.c, catalogv1.CatalogService_Heartbeat_FullMethodName, in, x.srv.Heartbeat)
}
