package runtime

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	tracev1 "github.com/ferrygw/ferry/services/api/gen/ferry/trace/v1"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
)

// newRecordingTelemetry returns telemetry whose spans land in memory.
func newRecordingTelemetry(t testing.TB) (*Telemetry, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tel := &Telemetry{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)),
		MeterProvider:  sdkmetric.NewMeterProvider(),
		Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, exp
}

func TestTraceContextRoundTrip(t *testing.T) {
	tel, _ := newRecordingTelemetry(t)
	member, err := baggage.NewMember("tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	bag, err := baggage.New(member)
	if err != nil {
		t.Fatal(err)
	}
	ctx := baggage.ContextWithBaggage(context.Background(), bag)
	ctx, span := tel.Tracer("test").Start(ctx, "produce")
	defer span.End()

	tc := tel.InjectTrace(ctx)
	if tc == nil {
		t.Fatal("InjectTrace returned nil for a context with a span")
	}
	if tc.Carrier["traceparent"] == "" || tc.Carrier["baggage"] == "" {
		t.Fatalf("carrier lacks traceparent or baggage: %v", tc.Carrier)
	}

	// Through the wire format, as on a real stream.
	wire, err := proto.Marshal(tc)
	if err != nil {
		t.Fatal(err)
	}
	var got tracev1.TraceContext
	if err := proto.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}

	out := tel.ExtractTrace(context.Background(), &got)
	sc := trace.SpanContextFromContext(out)
	want := span.SpanContext()
	if sc.TraceID() != want.TraceID() || sc.SpanID() != want.SpanID() {
		t.Fatalf("extracted %s/%s, want %s/%s", sc.TraceID(), sc.SpanID(), want.TraceID(), want.SpanID())
	}
	if !sc.IsRemote() || !sc.IsSampled() {
		t.Errorf("extracted span context remote=%v sampled=%v, want both true", sc.IsRemote(), sc.IsSampled())
	}
	if v := baggage.FromContext(out).Member("tenant").Value(); v != "acme" {
		t.Errorf("baggage tenant = %q, want acme", v)
	}
}

func TestTraceContextEmpty(t *testing.T) {
	tel, _ := newRecordingTelemetry(t)
	if tc := tel.InjectTrace(context.Background()); tc != nil {
		t.Fatalf("InjectTrace without span = %v, want nil", tc)
	}
	type key struct{}
	base := context.WithValue(context.Background(), key{}, 1)
	for _, tc := range []*tracev1.TraceContext{nil, {}, {Carrier: map[string]string{}}} {
		if got := tel.ExtractTrace(base, tc); got != base {
			t.Errorf("ExtractTrace(%v) changed the context", tc)
		}
	}
	// A malformed traceparent yields no span context rather than an error.
	bad := &tracev1.TraceContext{Carrier: map[string]string{"traceparent": "00-zz-zz-01"}}
	if sc := trace.SpanContextFromContext(tel.ExtractTrace(base, bad)); sc.IsValid() {
		t.Errorf("malformed traceparent produced valid span context %v", sc)
	}
}

// TestGRPCPropagation checks the otelgrpc wiring of Dial and NewServer: the
// server span of an RPC joins the client's trace.
func TestGRPCPropagation(t *testing.T) {
	tel, exp := newRecordingTelemetry(t)
	srv := NewServer("127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)), tel, Plaintext())
	fatal := make(chan error, 1)
	if err := srv.Start(context.Background(), hostFunc(func(err error) { fatal <- err })); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())

	conn, err := Dial(srv.Addr().String(), "testsvc", tel, Plaintext())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx, parent := tel.Tracer("test").Start(ctx, "parent")
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	parent.End()

	var server sdktrace.ReadOnlySpan
	for _, s := range exp.GetSpans().Snapshots() {
		if s.SpanKind() == trace.SpanKindServer {
			server = s
		}
	}
	if server == nil {
		t.Fatalf("no server span recorded; spans: %d", len(exp.GetSpans()))
	}
	if server.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Fatalf("server span trace %s, want client trace %s", server.SpanContext().TraceID(), parent.SpanContext().TraceID())
	}
	if !server.Parent().IsRemote() {
		t.Errorf("server span parent is not remote")
	}
	select {
	case err := <-fatal:
		t.Fatalf("server reported fatal: %v", err)
	default:
	}
}

type hostFunc func(error)

func (f hostFunc) ReportFatal(err error) { f(err) }

func BenchmarkInjectTrace(b *testing.B) {
	tel, _ := newRecordingTelemetry(b)
	ctx, span := tel.Tracer("bench").Start(context.Background(), "produce")
	defer span.End()
	b.ReportAllocs()
	for b.Loop() {
		if tel.InjectTrace(ctx) == nil {
			b.Fatal("nil trace context")
		}
	}
}

func BenchmarkExtractTrace(b *testing.B) {
	tel, _ := newRecordingTelemetry(b)
	ctx, span := tel.Tracer("bench").Start(context.Background(), "produce")
	defer span.End()
	tc := tel.InjectTrace(ctx)
	bg := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if !trace.SpanContextFromContext(tel.ExtractTrace(bg, tc)).IsValid() {
			b.Fatal("no span context")
		}
	}
}
