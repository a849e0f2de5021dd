// Package inproc connects the generated gRPC client interfaces of Ferry's
// services to their server implementations in the same process, for the
// single-process mode (cmd/ferry): a call runs the handler with the
// caller's own messages, without serialization, TLS or a loopback
// connection.
//
// What the gRPC server adds to a handler is kept: every call is a span
// named after its method and counts in the rpc.client.call.duration
// histogram, as otelgrpc's would (rpc.system.name "ferry_inprocess"), the
// handler's context carries a logger tagged with the method
// (runtime.LoggerFrom), a handler panic becomes codes.Internal, and errors
// reach the caller as gRPC statuses. Call options are ignored.
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
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ferrygw/ferry/services/runtime"
)

// Conn is what the in-process clients of one process share: the tracer
// their spans come from, their duration histogram and the logger their
// handlers get.
type Conn struct {
	tracer   trace.Tracer
	duration metric.Float64Histogram
	log      *slog.Logger
}

const instrumentation = "github.com/ferrygw/ferry/services/runtime/inproc"

// New returns a Conn whose calls are traced by tp, measured by mp and
// logged by log.
func New(tp trace.TracerProvider, mp metric.MeterProvider, log *slog.Logger) (*Conn, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	duration, err := mp.Meter(instrumentation).Float64Histogram("rpc.client.call.duration", metric.WithUnit("s"),
		metric.WithDescription("In-process calls between the services of one process, as otelgrpc measures gRPC calls"))
	if err != nil {
		return nil, err
	}
	return &Conn{tracer: tp.Tracer(instrumentation), duration: duration, log: log}, nil
}

// call is one call in progress.
type call struct {
	c      *Conn
	method string // "pkg.Service/Method"
	start  time.Time
	span   trace.Span
	log    *slog.Logger
}

// begin starts a call of method (a gRPC full method name,
// "/pkg.Service/Method") and returns the handler's context: its span and
// a logger tagged with the method and the trace id.
func (c *Conn) begin(ctx context.Context, method string) (context.Context, *call) {
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
	return runtime.WithLogger(ctx, l), &call{c: c, method: name, start: time.Now(), span: span, log: l}
}

// finish ends the call with the status err becomes and returns that
// status as an error, as a gRPC client would see it. A panic of the
// handler, passed as recovered, is logged and becomes codes.Internal.
func (k *call) finish(err error, recovered any) error {
	span, l := k.span, k.log
	if recovered != nil {
		l.Error("rpc handler panicked", "panic", fmt.Sprint(recovered), "stack", string(debug.Stack()))
		err = status.Error(codes.Internal, "internal error")
	}
	err = toStatus(err)
	code := status.Code(err)
	k.c.duration.Record(context.Background(), time.Since(k.start).Seconds(), metric.WithAttributes(
		attribute.String("rpc.system.name", "ferry_inprocess"),
		attribute.String("rpc.method", k.method),
		attribute.String("rpc.response.status_code", code.String()),
	))
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
	ctx, k := c.begin(ctx, method)
	defer func() {
		err = k.finish(err, recover())
		if err != nil {
			resp = nil
		}
	}()
	return h(ctx, req)
}
