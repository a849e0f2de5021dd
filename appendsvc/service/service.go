// Package service wires appendsvc together from its settings, for its main
// and for the single-process mode (cmd/ferry).
package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferrygw/ferry/appendsvc/internal/appender"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/runtime"
)

// Config holds appendsvc's own settings; the shared ones (listen address,
// logging, telemetry, shutdown timeout) are declared by runtime.
type Config struct {
	Fluss  *runtime.FlussConfig
	Append appender.Config
}

// Declare registers the settings on s and returns the config they fill.
func Declare(s *runtime.Settings) *Config {
	c := &Config{Fluss: runtime.DeclareFluss(s)}
	s.DurationVar(&c.Append.DefaultTimeout, runtime.Spec[time.Duration]{Flag: "append-default-timeout", Env: "FERRY_APPEND_DEFAULT_TIMEOUT",
		Default: appender.DefaultTimeout, Validate: runtime.PositiveDuration,
		Usage: "how long a job without timeout_ms may take, retries included"})
	s.DurationVar(&c.Append.MaxTimeout, runtime.Spec[time.Duration]{Flag: "append-max-timeout", Env: "FERRY_APPEND_MAX_TIMEOUT",
		Default: appender.DefaultMaxTimeout, Validate: runtime.PositiveDuration,
		Usage: "upper bound for a job's timeout_ms"})
	s.IntVar(&c.Append.MaxPending, runtime.Spec[int]{Flag: "append-max-pending", Env: "FERRY_APPEND_MAX_PENDING",
		Default: appender.DefaultMaxPending, Validate: positive,
		Usage: "unanswered jobs per stream before the stream stops reading (backpressure)"})
	s.IntVar(&c.Append.MaxCoalesceBytes, runtime.Spec[int]{Flag: "append-max-coalesce-bytes", Env: "FERRY_APPEND_MAX_COALESCE_BYTES",
		Default: appender.DefaultMaxCoalesceBytes, Validate: positive,
		Usage: "bytes of queued batches of one bucket sent in one Fluss request (1 = one batch per request)"})
	return c
}

func positive(n int) error {
	if n <= 0 {
		return errors.New("must be positive")
	}
	return nil
}

func (c *Config) Validate() error {
	if err := c.Fluss.Validate(); err != nil {
		return err
	}
	return c.Append.WithDefaults().Validate()
}

// New connects to Fluss (waiting for it up to the connect timeout)
// and registers the append service, which it returns for in-process callers;
// the client closes at shutdown, after the gRPC server stopped.
func New(ctx context.Context, app *runtime.App, cfg *Config) (appendv1.AppendServiceServer, error) {
	if err := runtime.CheckFlussReachable(ctx, cfg.Fluss); err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.Fluss.ConnectTimeout)
	defer cancel()
	opts := []fluss.Option{fluss.WithLogger(app.Logger), fluss.WithTracerProvider(app.Telemetry.TracerProvider)}
	if cfg.Fluss.SASLUsername != "" {
		password, err := cfg.Fluss.SASLPassword()
		if err != nil {
			return nil, err
		}
		opts = append(opts, fluss.WithSASLPlain(cfg.Fluss.SASLUsername, password))
	}
	client, err := fluss.DialAuthorized(dctx, cfg.Fluss.Bootstrap, opts...)
	if fluss.IsAuthentication(err) {
		return nil, cfg.Fluss.LoginError(err)
	}
	if err != nil {
		return nil, fmt.Errorf("fluss: %w", err)
	}
	app.Add(runtime.ComponentFuncs{ComponentName: "fluss-client", ShutdownFunc: func(context.Context) error { return client.Close() }})
	svc, err := appender.New(cfg.Append, appender.NewClientAdapter(client, app.Logger), app.Logger,
		app.Telemetry.TracerProvider, app.Telemetry.MeterProvider, app.Telemetry.Propagator)
	if err != nil {
		return nil, err
	}
	appendv1.RegisterAppendServiceServer(app.Server, svc)
	return svc, nil
}

// Setup is New for the service's own process.
func Setup(ctx context.Context, app *runtime.App, cfg *Config) error {
	_, err := New(ctx, app, cfg)
	return err
}
