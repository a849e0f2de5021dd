package inproc

import (
	"context"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// streamBuffer is how many messages each direction of a stream holds
// before the sender waits, as gRPC's flow-control window lets a sender run
// ahead of its receiver.
const streamBuffer = 16

// stream is one bidirectional streaming call: the client's and the
// server's ends over two channels. The server's handler runs in its own
// goroutine; the call ends when it returns, or when the client's context
// ends.
type stream[Req, Resp any] struct {
	clientCtx context.Context
	serverCtx context.Context // ends with the client's, or when the handler returns
	cancel    context.CancelFunc

	reqs       chan *Req
	resps      chan *Resp
	closeSend  sync.Once
	sendClosed chan struct{} // closed by CloseSend
	done       chan struct{} // closed when the handler returned
	err        error         // the handler's status; read after done

	mu         sync.Mutex
	header     metadata.MD
	trailer    metadata.MD
	headerSent chan struct{} // closed once the header is final
	headerOnce sync.Once
}

// bidi opens a stream of method and runs handler h on its server end in
// a new goroutine. The returned client end is what the generated client's
// method returns.
func bidi[Req, Resp any](ctx context.Context, c *Conn, method string, h func(grpc.BidiStreamingServer[Req, Resp]) error) grpc.BidiStreamingClient[Req, Resp] {
	sctx, k := c.begin(ctx, method)
	sctx, cancel := context.WithCancel(sctx)
	s := &stream[Req, Resp]{
		clientCtx:  ctx,
		serverCtx:  sctx,
		cancel:     cancel,
		reqs:       make(chan *Req, streamBuffer),
		resps:      make(chan *Resp, streamBuffer),
		sendClosed: make(chan struct{}),
		done:       make(chan struct{}),
		headerSent: make(chan struct{}),
	}
	go func() {
		var err error
		defer func() {
			s.err = k.finish(err, recover())
			s.sendHeader()
			cancel()
			close(s.done)
		}()
		err = h(serverEnd[Req, Resp]{s})
	}()
	return clientEnd[Req, Resp]{s}
}

func (s *stream[Req, Resp]) sendHeader() { s.headerOnce.Do(func() { close(s.headerSent) }) }

// clientEnd implements grpc.BidiStreamingClient.
type clientEnd[Req, Resp any] struct{ s *stream[Req, Resp] }

// Send hands m to the server. As with gRPC, a stream that has ended
// answers io.EOF and Recv tells why.
func (c clientEnd[Req, Resp]) Send(m *Req) error {
	s := c.s
	select {
	case <-s.sendClosed:
		return status.Error(codes.Internal, "SendMsg called after CloseSend")
	case <-s.done:
		return io.EOF
	default:
	}
	select {
	case s.reqs <- m:
		return nil
	case <-s.done:
		return io.EOF
	case <-s.clientCtx.Done():
		return io.EOF
	}
}

// Recv returns the server's next message; io.EOF once the handler
// returned nil and every message it sent was received, or its status.
func (c clientEnd[Req, Resp]) Recv() (*Resp, error) {
	s := c.s
	select {
	case m := <-s.resps:
		return m, nil
	case <-s.done:
		// The handler sends nothing more: hand out what it sent first.
		select {
		case m := <-s.resps:
			return m, nil
		default:
		}
		if s.err != nil {
			return nil, s.err
		}
		return nil, io.EOF
	case <-s.clientCtx.Done():
		return nil, status.FromContextError(s.clientCtx.Err()).Err()
	}
}

func (c clientEnd[Req, Resp]) CloseSend() error {
	c.s.closeSend.Do(func() { close(c.s.sendClosed) })
	return nil
}

// Header waits for the server's header, as gRPC does.
func (c clientEnd[Req, Resp]) Header() (metadata.MD, error) {
	s := c.s
	select {
	case <-s.headerSent:
	case <-s.clientCtx.Done():
		return nil, status.FromContextError(s.clientCtx.Err()).Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header.Copy(), nil
}

// Trailer is the server's trailer once the stream has ended.
func (c clientEnd[Req, Resp]) Trailer() metadata.MD {
	s := c.s
	select {
	case <-s.done:
	default:
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trailer.Copy()
}

func (c clientEnd[Req, Resp]) Context() context.Context { return c.s.clientCtx }

func (c clientEnd[Req, Resp]) SendMsg(m any) error {
	req, ok := m.(*Req)
	if !ok {
		return status.Errorf(codes.Internal, "in-process stream: SendMsg of %T", m)
	}
	return c.Send(req)
}

// RecvMsg copies the next message into m, for callers of the untyped
// interface; Recv hands the message over without a copy.
func (c clientEnd[Req, Resp]) RecvMsg(m any) error {
	resp, err := c.Recv()
	if err != nil {
		return err
	}
	return copyInto(m, resp)
}

// serverEnd implements grpc.BidiStreamingServer.
type serverEnd[Req, Resp any] struct{ s *stream[Req, Resp] }

// Recv returns the client's next message; io.EOF once the client closed
// its side and every message it sent was received.
func (e serverEnd[Req, Resp]) Recv() (*Req, error) {
	s := e.s
	select {
	case m := <-s.reqs:
		return m, nil
	case <-s.sendClosed:
		select {
		case m := <-s.reqs:
			return m, nil
		default:
			return nil, io.EOF
		}
	case <-s.serverCtx.Done():
		return nil, status.FromContextError(s.serverCtx.Err()).Err()
	}
}

func (e serverEnd[Req, Resp]) Send(m *Resp) error {
	s := e.s
	s.sendHeader()
	select {
	case s.resps <- m:
		return nil
	case <-s.serverCtx.Done():
		return status.FromContextError(s.serverCtx.Err()).Err()
	}
}

func (e serverEnd[Req, Resp]) SetHeader(md metadata.MD) error {
	s := e.s
	select {
	case <-s.headerSent:
		return status.Error(codes.Internal, "SetHeader after the header was sent")
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.header = metadata.Join(s.header, md)
	return nil
}

func (e serverEnd[Req, Resp]) SendHeader(md metadata.MD) error {
	if err := e.SetHeader(md); err != nil {
		return err
	}
	e.s.sendHeader()
	return nil
}

func (e serverEnd[Req, Resp]) SetTrailer(md metadata.MD) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trailer = metadata.Join(s.trailer, md)
}

func (e serverEnd[Req, Resp]) Context() context.Context { return e.s.serverCtx }

func (e serverEnd[Req, Resp]) SendMsg(m any) error {
	resp, ok := m.(*Resp)
	if !ok {
		return status.Errorf(codes.Internal, "in-process stream: SendMsg of %T", m)
	}
	return e.Send(resp)
}

// RecvMsg copies the next message into m (see clientEnd.RecvMsg).
func (e serverEnd[Req, Resp]) RecvMsg(m any) error {
	req, err := e.Recv()
	if err != nil {
		return err
	}
	return copyInto(m, req)
}

// copyInto makes dst a copy of src, both protobuf messages.
func copyInto(dst, src any) error {
	d, ok1 := dst.(proto.Message)
	s, ok2 := src.(proto.Message)
	if !ok1 || !ok2 {
		return status.Errorf(codes.Internal, "in-process stream: RecvMsg into %T", dst)
	}
	proto.Reset(d)
	proto.Merge(d, s)
	return nil
}
