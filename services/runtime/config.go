package runtime

import (
	"errors"
	"net/url"
	"strings"
	"time"
)

// Names of the settings every service has. They are a contract with the
// stack launcher and the deploy files: do not rename.
const (
	FlagListen          = "listen"
	EnvListen           = "FERRY_LISTEN"
	FlagLogLevel        = "log-level"
	EnvLogLevel         = "FERRY_LOG_LEVEL"
	FlagLogFormat       = "log-format"
	EnvLogFormat        = "FERRY_LOG_FORMAT"
	FlagOTLPEndpoint    = "otlp-endpoint"
	EnvOTLPEndpoint     = "OTEL_EXPORTER_OTLP_ENDPOINT"
	FlagOTLPMetrics     = "otlp-metrics"
	EnvOTLPMetrics      = "FERRY_OTLP_METRICS"
	FlagMetricsAddr     = "metrics-addr"
	EnvMetricsAddr      = "FERRY_METRICS_ADDR"
	FlagShutdownTimeout = "shutdown-timeout"
	EnvShutdownTimeout  = "FERRY_SHUTDOWN_TIMEOUT"
)

// Config is what every service shares: its gRPC address, logging, telemetry
// and how long a graceful shutdown may take.
type Config struct {
	// Service is the name used in logs, the OTel service.name and errors.
	Service string
	// Listen is the gRPC host:port (port 0 picks a free port).
	Listen          string
	Log             LogConfig
	Telemetry       TelemetryConfig
	ShutdownTimeout time.Duration
	// PprofAddr, when set, serves net/http/pprof (with block and mutex
	// profiling on) at this host:port. Empty: off.
	PprofAddr string
	// GRPCTLS protects the gRPC server and every internal client.
	GRPCTLS GRPCTLSConfig
}

// LogConfig selects the slog handler.
type LogConfig struct {
	Level  string // debug|info|warn|error
	Format string // text|json
}

// TelemetryConfig configures OpenTelemetry export.
type TelemetryConfig struct {
	// OTLPEndpoint is host:port (or http://host:port) of an OTLP/gRPC
	// collector. Empty: spans are created and propagated but not exported.
	OTLPEndpoint string
	// ExportMetrics also pushes metrics to OTLPEndpoint. Off by default
	// because Jaeger, the usual endpoint, accepts traces only and would
	// answer every push with Unimplemented.
	ExportMetrics bool
	// MetricsAddr, when set, is the host:port of an HTTP server that
	// serves the service's metrics at /metrics in the Prometheus text
	// format, for scraping. Empty: no such server.
	MetricsAddr string
	// ServiceVersion, when set, becomes the service.version resource attribute.
	ServiceVersion string
}

// DefaultConfig returns the defaults for a service listening on listen.
func DefaultConfig(service, listen string) Config {
	return Config{
		Service:         service,
		Listen:          listen,
		Log:             LogConfig{Level: "info", Format: "text"},
		ShutdownTimeout: 15 * time.Second,
	}
}

var (
	validLogLevel  = OneOf("debug", "info", "warn", "error")
	validLogFormat = OneOf("text", "json")
)

// Declare registers the common settings on s, bound to c's fields; c's
// current values are the defaults.
func (c *Config) Declare(s *Settings) {
	s.StringVar(&c.Listen, Spec[string]{Flag: FlagListen, Env: EnvListen, Default: c.Listen,
		Usage: "gRPC listen address host:port", Validate: ListenAddr})
	s.StringVar(&c.Log.Level, Spec[string]{Flag: FlagLogLevel, Env: EnvLogLevel, Default: c.Log.Level,
		Usage: "log level: debug|info|warn|error", Validate: validLogLevel})
	s.StringVar(&c.Log.Format, Spec[string]{Flag: FlagLogFormat, Env: EnvLogFormat, Default: c.Log.Format,
		Usage: "log format: text|json", Validate: validLogFormat})
	s.StringVar(&c.Telemetry.OTLPEndpoint, Spec[string]{Flag: FlagOTLPEndpoint, Env: EnvOTLPEndpoint,
		Default: c.Telemetry.OTLPEndpoint, Validate: validOTLPEndpoint,
		Usage: "OTLP/gRPC collector host:port (e.g. Jaeger 127.0.0.1:4317); empty: traces are not exported"})
	s.BoolVar(&c.Telemetry.ExportMetrics, Spec[bool]{Flag: FlagOTLPMetrics, Env: EnvOTLPMetrics,
		Default: c.Telemetry.ExportMetrics,
		Usage:   "also export metrics to the OTLP endpoint (the collector must accept OTLP metrics; Jaeger does not)"})
	s.StringVar(&c.Telemetry.MetricsAddr, Spec[string]{Flag: FlagMetricsAddr, Env: EnvMetricsAddr,
		Default: c.Telemetry.MetricsAddr, Validate: OptionalListenAddr,
		Usage: "HTTP host:port serving Prometheus metrics at /metrics; empty: no metrics endpoint"})
	s.DurationVar(&c.ShutdownTimeout, Spec[time.Duration]{Flag: FlagShutdownTimeout, Env: EnvShutdownTimeout,
		Default: c.ShutdownTimeout, Validate: PositiveDuration,
		Usage: "how long a graceful shutdown may take before connections are cut"})
	s.StringVar(&c.PprofAddr, Spec[string]{Flag: FlagPprofAddr, Env: EnvPprofAddr, Default: c.PprofAddr,
		Validate: validPprofAddr,
		Usage:    "serve Go profiles (net/http/pprof, with block and mutex profiling) at host:port; empty: off. Not for untrusted networks"})
	c.GRPCTLS.declare(s)
}

// Validate checks a Config built in code the same way Parse checks settings.
func (c Config) Validate() error {
	if c.Service == "" {
		return errors.New("runtime: Config.Service is empty")
	}
	checks := []struct {
		env, flag, value string
		check            func(string) error
	}{
		{EnvListen, FlagListen, c.Listen, ListenAddr},
		{EnvLogLevel, FlagLogLevel, c.Log.Level, validLogLevel},
		{EnvLogFormat, FlagLogFormat, c.Log.Format, validLogFormat},
		{EnvOTLPEndpoint, FlagOTLPEndpoint, c.Telemetry.OTLPEndpoint, validOTLPEndpoint},
		{EnvMetricsAddr, FlagMetricsAddr, c.Telemetry.MetricsAddr, OptionalListenAddr},
		{EnvPprofAddr, FlagPprofAddr, c.PprofAddr, validPprofAddr},
	}
	for _, ch := range checks {
		if err := ch.check(ch.value); err != nil {
			return &SettingError{Env: ch.env, Flag: ch.flag, Value: ch.value, Err: err}
		}
	}
	if err := PositiveDuration(c.ShutdownTimeout); err != nil {
		return &SettingError{Env: EnvShutdownTimeout, Flag: FlagShutdownTimeout, Value: c.ShutdownTimeout.String(), Err: err}
	}
	return c.GRPCTLS.Validate()
}

// validOTLPEndpoint accepts empty, host:port, or an http(s) URL whose host
// has a port, the spellings OTel SDKs accept for OTEL_EXPORTER_OTLP_ENDPOINT.
func validOTLPEndpoint(v string) error {
	if v == "" {
		return nil
	}
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil {
			return errors.New("not a URL")
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return errors.New("scheme must be http or https")
		}
		if u.Port() == "" {
			return errors.New("missing port")
		}
		return DialAddr(u.Host)
	}
	return DialAddr(v)
}
