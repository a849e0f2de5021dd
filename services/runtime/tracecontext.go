package runtime

import (
	"context"

	tracev1 "github.com/ferrygw/ferry/services/api/gen/ferry/trace/v1"
	"go.opentelemetry.io/otel/propagation"
)

// A long-lived gRPC stream carries trace headers once, when it opens, but
// each message on it belongs to a different Kafka request with its own
// trace. InjectTrace and ExtractTrace move the trace context through a
// ferry.trace.v1.TraceContext field on each message instead.

// InjectTrace returns ctx's trace context (W3C traceparent/tracestate and
// baggage, as p encodes them) for a message's trace field, or nil when ctx
// carries nothing to propagate, which keeps untraced messages small.
func InjectTrace(ctx context.Context, p propagation.TextMapPropagator) *tracev1.TraceContext {
	carrier := propagation.MapCarrier{}
	p.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil
	}
	return &tracev1.TraceContext{Carrier: carrier}
}

// ExtractTrace returns ctx extended with the remote trace context of tc, so
// spans started from it become children of the sender's span. A nil or
// empty tc returns ctx unchanged.
func ExtractTrace(ctx context.Context, p propagation.TextMapPropagator, tc *tracev1.TraceContext) context.Context {
	if len(tc.GetCarrier()) == 0 {
		return ctx
	}
	return p.Extract(ctx, propagation.MapCarrier(tc.GetCarrier()))
}

// InjectTrace is the package function with the service's propagator.
func (t *Telemetry) InjectTrace(ctx context.Context) *tracev1.TraceContext {
	return InjectTrace(ctx, t.Propagator)
}

// ExtractTrace is the package function with the service's propagator.
func (t *Telemetry) ExtractTrace(ctx context.Context, tc *tracev1.TraceContext) context.Context {
	return ExtractTrace(ctx, t.Propagator, tc)
}
