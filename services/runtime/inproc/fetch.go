package inproc

import (
	"context"

	"google.golang.org/grpc"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// Fetch is a FetchService client that calls srv.
func (c *Conn) Fetch(srv fetchv1.FetchServiceServer) fetchv1.FetchServiceClient {
	return fetchClient{c, srv}
}

type fetchClient struct {
	c   *Conn
	srv fetchv1.FetchServiceServer
}

func (x fetchClient) Read(ctx context.Context, in *fetchv1.ReadRequest, _ ...grpc.CallOption) (*fetchv1.ReadResponse, error) {
	return unary(ctx, x.c, fetchv1.FetchService_Read_FullMethodName, in, x.srv.Read)
}

func (x fetchClient) ListOffsets(ctx context.Context, in *fetchv1.ListOffsetsRequest, _ ...grpc.CallOption) (*fetchv1.ListOffsetsResponse, error) {
	return unary(ctx, x.c, fetchv1.FetchService_ListOffsets_FullMethodName, in, x.srv.ListOffsets)
}

func (x fetchClient) CommitOffsets(ctx context.Context, in *fetchv1.CommitOffsetsRequest, _ ...grpc.CallOption) (*fetchv1.CommitOffsetsResponse, error) {
	return unary(ctx, x.c, fetchv1.FetchService_CommitOffsets_FullMethodName, in, x.srv.CommitOffsets)
}

func (x fetchClient) ListCommittedOffsets(ctx context.Context, in *fetchv1.ListCommittedOffsetsRequest, _ ...grpc.CallOption) (*fetchv1.ListCommittedOffsetsResponse, error) {
	return unary(ctx, x.c, fetchv1.FetchService_ListCommittedOffsets_FullMethodName, in, x.srv.ListCommittedOffsets)
}

func (x fetchClient) DeleteCommittedOffsets(ctx context.Context, in *fetchv1.DeleteCommittedOffsetsRequest, _ ...grpc.CallOption) (*fetchv1.DeleteCommittedOffsetsResponse, error) {
	return unary(ctx, x.c, fetchv1.FetchService_DeleteCommittedOffsets_FullMethodName, in, x.srv.DeleteCommittedOffsets)
}

func (x fetchClient) ListOffsetGroups(ctx context.Context, in *fetchv1.ListOffsetGroupsRequest, _ ...grpc.CallOption) (*fetchv1.ListOffsetGroupsResponse, error) {
	return unary(ctx, x.c, fetchv1.FetchService_ListOffsetGroups_FullMethodName, in, x.srv.ListOffsetGroups)
}
