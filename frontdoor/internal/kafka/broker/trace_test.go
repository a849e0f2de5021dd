package broker

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestProduceTraceReachesStreams: the kafka.produce span is a trace root
// and its trace id travels inside the transcode stream message.
func TestProduceTraceReachesStreams(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	h := newHarness(t, harnessOpts{tp: tp})
	c := dialRaw(t, h.addr)
	if ec := c.roundTrip(produceReq(12, 1, "orders", 0, batchOf(t, "traced"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; ec != 0 {
		t.Fatalf("error %d", ec)
	}
	var root sdktrace.ReadOnlySpan
	waitFor(t, func() bool {
		for _, s := range rec.Ended() {
			if s.Name() == "kafka.produce" {
				root = s
				return true
			}
		}
		return false
	})
	if root.Parent().IsValid() {
		t.Fatal("kafka.produce has a parent; it must be the trace root")
	}
	carrier := h.tcs[0].LastTrace.Load()
	if carrier == nil {
		t.Fatal("transcode job carried no trace context")
	}
	if tp := (*carrier)["traceparent"]; !strings.Contains(tp, root.SpanContext().TraceID().String()) {
		t.Fatalf("traceparent %q is not in trace %s", tp, root.SpanContext().TraceID())
	}
}
