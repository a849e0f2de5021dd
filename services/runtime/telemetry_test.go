package runtime

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// fakeCollector is an OTLP/gRPC trace receiver recording what it gets.
type fakeCollector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	services []string
	spans    []string
}

func (f *fakeCollector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				f.services = append(f.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				f.spans = append(f.spans, s.GetName())
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// fakeMetricsCollector is an OTLP/gRPC metrics receiver recording metric names.
type fakeMetricsCollector struct {
	collectormetrics.UnimplementedMetricsServiceServer
	mu    sync.Mutex
	names []string
}

func (f *fakeMetricsCollector) Export(_ context.Context, req *collectormetrics.ExportMetricsServiceRequest) (*collectormetrics.ExportMetricsServiceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				f.names = append(f.names, m.GetName())
			}
		}
	}
	return &collectormetrics.ExportMetricsServiceResponse{}, nil
}

func TestTelemetryExportsMetricsWhenEnabled(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &fakeMetricsCollector{}
	gs := grpc.NewServer()
	collectormetrics.RegisterMetricsServiceServer(gs, col)
	go gs.Serve(lis)
	defer gs.Stop()

	tel, err := NewTelemetry(context.Background(), "frontdoor", TelemetryConfig{OTLPEndpoint: lis.Addr().String(), ExportMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.ExportingMetrics() {
		t.Fatal("ExportingMetrics() = false")
	}
	counter, err := tel.Meter("test").Int64Counter("ferry.test.requests")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(context.Background(), 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Shutdown collects and pushes a final time.
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	found := false
	for _, n := range col.names {
		found = found || n == "ferry.test.requests"
	}
	if !found {
		t.Fatalf("collector got metrics %v, want ferry.test.requests", col.names)
	}
}

func TestTelemetryExportsToOTLPEndpoint(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &fakeCollector{}
	gs := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(gs, col)
	go gs.Serve(lis)
	defer gs.Stop()

	for _, endpoint := range []string{lis.Addr().String(), "http://" + lis.Addr().String()} {
		t.Run(endpoint, func(t *testing.T) {
			col.mu.Lock()
			col.services, col.spans = nil, nil
			col.mu.Unlock()
			tel, err := NewTelemetry(context.Background(), "appendsvc", TelemetryConfig{OTLPEndpoint: endpoint, ServiceVersion: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if !tel.Exporting() {
				t.Fatal("Exporting() = false with an endpoint")
			}
			_, span := tel.Tracer("test").Start(context.Background(), "append-batch")
			span.End()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// Shutdown flushes the batch processor: the span must have arrived.
			if err := tel.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			col.mu.Lock()
			defer col.mu.Unlock()
			if len(col.spans) != 1 || col.spans[0] != "append-batch" {
				t.Fatalf("collector got spans %v, want [append-batch]", col.spans)
			}
			if len(col.services) != 1 || col.services[0] != "appendsvc" {
				t.Fatalf("collector got service.name %v, want [appendsvc]", col.services)
			}
		})
	}
}

// An unreachable collector must never block startup; shutdown gives up at
// its deadline instead of hanging.
func TestTelemetryUnreachableCollector(t *testing.T) {
	tel, err := NewTelemetry(context.Background(), "svc", TelemetryConfig{OTLPEndpoint: freeAddr(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tel.Tracer("test").Start(context.Background(), "lost")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = tel.Shutdown(ctx) // an error is expected; returning at all is the point
}

func TestTelemetryWithoutEndpoint(t *testing.T) {
	tel, err := NewTelemetry(context.Background(), "svc", TelemetryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if tel.Exporting() {
		t.Fatal("Exporting() = true without endpoint")
	}
	// Spans have valid ids, so context propagates, but nothing records them:
	// nothing would read them.
	ctx, span := tel.Tracer("test").Start(context.Background(), "x")
	defer span.End()
	if !span.SpanContext().IsValid() || span.SpanContext().IsSampled() || span.IsRecording() {
		t.Fatalf("span context %v (recording %v) without exporter, want valid, unsampled, not recording", span.SpanContext(), span.IsRecording())
	}
	_, child := tel.Tracer("test").Start(ctx, "y")
	defer child.End()
	if child.SpanContext().TraceID() != span.SpanContext().TraceID() || child.IsRecording() {
		t.Fatalf("child %v of %v", child.SpanContext(), span.SpanContext())
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
