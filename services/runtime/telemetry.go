package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry owns the service's OpenTelemetry providers. Spans are recorded
// and leave the process only when an OTLP endpoint is configured (then
// OTEL_TRACES_SAMPLER decides which, every one by default); without one
// they are not recorded, but their trace context is still made and
// propagated.
type Telemetry struct {
	TracerProvider   *sdktrace.TracerProvider
	MeterProvider    *sdkmetric.MeterProvider
	Propagator       propagation.TextMapPropagator
	exporting        bool
	exportingMetrics bool
	// scrape holds what the Prometheus reader collects into; nil unless
	// TelemetryConfig.MetricsAddr is set.
	scrape *prometheus.Registry
}

// metricExportInterval is how often metrics are pushed when an endpoint is
// configured; the SDK default of 60s makes local debugging slow.
const metricExportInterval = 15 * time.Second

// NewTelemetry builds the providers. It does not touch the OTel globals; see
// InstallGlobals. The OTLP exporters connect lazily, so an absent collector
// never blocks startup: spans are dropped by the batch processor instead.
func NewTelemetry(ctx context.Context, service string, cfg TelemetryConfig) (*Telemetry, error) {
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName(service))}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(cfg.ServiceVersion)))
	}
	res, err := resource.New(ctx, append(attrs,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
	)...)
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}

	t := &Telemetry{
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	mpOpts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if cfg.OTLPEndpoint != "" {
		traceExp, err := otlptracegrpc.New(ctx, traceEndpointOptions(cfg.OTLPEndpoint)...)
		if err != nil {
			return nil, &SettingError{Env: EnvOTLPEndpoint, Flag: FlagOTLPEndpoint, Value: cfg.OTLPEndpoint, Err: err}
		}
		tpOpts = append(tpOpts, sdktrace.WithBatcher(traceExp))
		t.exporting = true
	}
	if cfg.OTLPEndpoint != "" && cfg.ExportMetrics {
		metricExp, err := otlpmetricgrpc.New(ctx, metricEndpointOptions(cfg.OTLPEndpoint)...)
		if err != nil {
			return nil, &SettingError{Env: EnvOTLPEndpoint, Flag: FlagOTLPEndpoint, Value: cfg.OTLPEndpoint, Err: err}
		}
		mpOpts = append(mpOpts, sdkmetric.WithReader(
			sdkmetric.NewPeriodicReader(metricExp, sdkmetric.WithInterval(metricExportInterval))))
		t.exportingMetrics = true
	}
	if cfg.MetricsAddr != "" {
		// A registry of our own, not the client library's global one, so
		// only this provider's instruments and the runtime collectors
		// below are served.
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return nil, fmt.Errorf("prometheus exporter: %w", err)
		}
		// Go runtime and process metrics (goroutines, heap, GC, CPU, open
		// files) come with the client library at no extra dependency;
		// they are scraped only, not pushed over OTLP.
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return nil, fmt.Errorf("prometheus go collector: %w", err)
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, fmt.Errorf("prometheus process collector: %w", err)
		}
		mpOpts = append(mpOpts, sdkmetric.WithReader(exp))
		t.scrape = reg
	}
	if !t.exporting {
		// Nothing would read them: recording every batch's spans for
		// nobody cost frontdoor and appendsvc 5-10% of their CPU.
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.NeverSample()))
	}
	t.TracerProvider = sdktrace.NewTracerProvider(tpOpts...)
	t.MeterProvider = sdkmetric.NewMeterProvider(mpOpts...)
	return t, nil
}

// Exporting reports whether spans leave the process.
func (t *Telemetry) Exporting() bool { return t.exporting }

// ExportingMetrics reports whether metrics are pushed over OTLP.
func (t *Telemetry) ExportingMetrics() bool { return t.exportingMetrics }

// MetricsHandler serves the metrics in the Prometheus text format, or is
// nil when TelemetryConfig.MetricsAddr was empty.
func (t *Telemetry) MetricsHandler() http.Handler {
	if t.scrape == nil {
		return nil
	}
	return promhttp.HandlerFor(t.scrape, promhttp.HandlerOpts{})
}

// Tracer returns a named tracer from the service's provider.
func (t *Telemetry) Tracer(name string) trace.Tracer { return t.TracerProvider.Tracer(name) }

// Meter returns a named meter from the service's provider.
func (t *Telemetry) Meter(name string) metric.Meter { return t.MeterProvider.Meter(name) }

// InstallGlobals makes these providers the OTel globals, for libraries that
// only know otel.GetTracerProvider, and routes OTel's internal errors (failed
// exports) to logger instead of the standard log package. Only a process
// entry point should call it.
func (t *Telemetry) InstallGlobals(logger *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("opentelemetry", "err", err)
	}))
	otel.SetTracerProvider(t.TracerProvider)
	otel.SetMeterProvider(t.MeterProvider)
	otel.SetTextMapPropagator(t.Propagator)
}

// Shutdown flushes pending spans and metrics within ctx's deadline.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	return errors.Join(t.TracerProvider.Shutdown(ctx), t.MeterProvider.Shutdown(ctx))
}

// The exporters take either a bare host:port (we then speak plaintext, the
// usual loopback/sidecar collector) or a URL whose scheme decides TLS.
func traceEndpointOptions(ep string) []otlptracegrpc.Option {
	if strings.Contains(ep, "://") {
		return []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(ep)}
	}
	return []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(ep), otlptracegrpc.WithInsecure()}
}

func metricEndpointOptions(ep string) []otlpmetricgrpc.Option {
	if strings.Contains(ep, "://") {
		return []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpointURL(ep)}
	}
	return []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(ep), otlpmetricgrpc.WithInsecure()}
}
