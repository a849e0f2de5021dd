package backends

import (
	"context"

	tracev1 "github.com/ferrygw/ferry/services/api/gen/ferry/trace/v1"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// traceContext captures ctx's span context for a stream message: a
// long-lived stream's headers carry only the trace of whoever opened it,
// so every job carries its own Kafka request's trace.
func traceContext(ctx context.Context, prop propagation.TextMapPropagator) *tracev1.TraceContext {
	if prop == nil {
		prop = otel.GetTextMapPropagator()
	}
	carrier := propagation.MapCarrier{}
	prop.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil
	}
	return &tracev1.TraceContext{Carrier: carrier}
}
