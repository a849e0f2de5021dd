package inproc

import (
	"context"

	"google.golang.org/grpc"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
)

// Append is an AppendService client that calls srv.
func (c *Conn) Append(srv appendv1.AppendServiceServer) appendv1.AppendServiceClient {
	return appendClient{c, srv}
}

type appendClient struct {
	c   *Conn
	srv appendv1.AppendServiceServer
}

func (x appendClient) Append(ctx context.Context, _ ...grpc.CallOption) (grpc.BidiStreamingClient[appendv1.AppendRequest, appendv1.AppendResponse], error) {
	return bidi(ctx, x.c, appendv1.AppendService_Append_FullMethodName, x.srv.Append), nil
}

func (x appendClient) InitWriter(ctx context.Context, in *appendv1.InitWriterRequest, _ ...grpc.CallOption) (*appendv1.InitWriterResponse, error) {
	return unary(ctx, x.c, appendv1.AppendService_InitWriter_FullMethodName, in, x.srv.InitWriter)
}

func (x appendClient) GetLatestOffset(ctx context.Context, in *appendv1.GetLatestOffsetRequest, _ ...grpc.CallOption) (*appendv1.GetLatestOffsetResponse, error) {
	return unary(ctx, x.c, appendv1.AppendService_GetLatestOffset_FullMethodName, in, x.srv.GetLatestOffset)
}

func (x appendClient) ListWriterBatches(ctx context.Context, in *appendv1.ListWriterBatchesRequest, _ ...grpc.CallOption) (*appendv1.ListWriterBatchesResponse, error) {
	return unary(ctx, x.c, appendv1.AppendService_ListWriterBatches_FullMethodName, in, x.srv.ListWriterBatches)
}
