package inproc

import (
	"context"

	"google.golang.org/grpc"

	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
)

// Transcode is a TranscodeService client that calls srv.
func (c *Conn) Transcode(srv transcodev1.TranscodeServiceServer) transcodev1.TranscodeServiceClient {
	return transcodeClient{c, srv}
}

type transcodeClient struct {
	c   *Conn
	srv transcodev1.TranscodeServiceServer
}

func (x transcodeClient) Transcode(ctx context.Context, _ ...grpc.CallOption) (grpc.BidiStreamingClient[transcodev1.TranscodeRequest, transcodev1.TranscodeResponse], error) {
	return bidi(ctx, x.c, transcodev1.TranscodeService_Transcode_FullMethodName, x.srv.Transcode), nil
}
