// Package inproc connects the generated gRPC client interfaces of Ferry's
// services to their server implementations in the same process, for the
// single-process mode (cmd/ferry): a call runs the handler with the
// caller's own messages, without serialization, TLS or a loopback
// connection.
//
// What the gRPC server adds to a handler is kept: every call is a span
// named after its method, the handler's context carries a logger tagged
// with the method (runtime.LoggerFrom), a handler panic becomes
// codes.Internal, and errors reach the caller as gRPC statuses. Call
// options are ignored.
//
// Messages are shared, not copied, which gRPC's contract allows: neither
// side may change a message after sending it, and the receiver may keep
// it. A server whose answers point into buffers it reuses must not reuse
// them in this mode (transcodesvc's server.Config.AnswersShared).
package inproc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ferrygw/ferry/services/runtime"
)

// Conn is what the in-process clients of one process share: the tracer
// their spans come from and the logger their handlers get.
type Conn struct {
	tracer trace.Tracer
	log    *slog.Logger
}

// New returns a Conn whose calls are traced by tp and logged by log.
func New(tp trace.TracerProvider, log *slog.Logger) *Conn {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Conn{tracer: tp.Tracer("github.com/ferrygw/ferry/services/runtime/inproc"), log: log}
}

// start begins the span of one call of method (a gRPC full method name,
// "/pkg.Service/Method") and returns the handler's context: the span and
// a logger tagged with the method and the trace id.
func (c *Conn) start(ctx context.Context, method string) (context.Context, trace.Span, *slog.Logger) {
	name := strings.TrimPrefix(method, "/")
	service, rpc, _ := strings.Cut(name, "/")
	ctx, span := c.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("rpc.system", "ferry_inprocess"),
		attribute.String("rpc.service", service),
		attribute.String("rpc.method", rpc),
	))
	l := c.log.With("rpc", method)
	if sc := span.SpanContext(); sc.IsSampled() {
		l = l.With("trace_id", sc.TraceID().String())
	}
	return runtime.WithLogger(ctx, l), span, l
}

// finish ends a call's span with the status err becomes and returns that
// status as an error, as a gRPC client would see it. A panic of the
// handler, passed as recovered, is logged and becomes codes.Internal.
func finish(span trace.Span, l *slog.Logger, err error, recovered any) error {
	if recovered != nil {
		l.Error("rpc handler panicked", "panic", fmt.Sprint(recovered), "stack", string(debug.Stack()))
		err = status.Error(codes.Internal, "internal error")
	}
	err = toStatus(err)
	code := status.Code(err)
	span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(code)))
	switch code {
	case codes.OK:
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unavailable:
		span.SetStatus(otelcodes.Error, err.Error())
		l.Warn("rpc failed", "code", code.String(), "err", err)
	default:
		span.SetStatus(otelcodes.Error, err.Error())
		l.Debug("rpc returned error", "code", code.String(), "err", err)
	}
	span.End()
	return err
}

// toStatus turns a handler's error into what a gRPC client gets: statuses
// as they are, context errors as Canceled or DeadlineExceeded, anything
// else as Unknown with its text.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	return status.Error(codes.Unknown, err.Error())
}

// unary runs one unary call of method: handler h with req, in a span.
func unary[Req, Resp any](ctx context.Context, c *Conn, method string, req *Req, h func(context.Context, *Req) (*Resp, error)) (resp *Resp, err error) {
	ctx, span, l := c.start(ctx, method)
	defer func() {
		err = finish(span, l, err, recover())
		if err != nil {
			resp = nil
		}
	}()
	return h(ctx, req)
}
