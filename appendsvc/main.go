// Command appendsvc writes Arrow record batches into Fluss tables over
// Fluss's own RPC protocol, on behalf of frontdoor.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ferrygw/ferry/appendsvc/internal/appender"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/runtime"
)

// version is stamped at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

// config holds appendsvc's own settings; the shared ones (listen address,
// logging, telemetry, shutdown timeout) are declared by runtime.
type config struct {
	Fluss  *runtime.FlussConfig
	Append appender.Config
}

func declare(s *runtime.Settings) *config {
	c := &config{Fluss: runtime.DeclareFluss(s)}
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

func (c *config) Validate() error {
	if err := c.Fluss.Validate(); err != nil {
		return err
	}
	return c.Append.WithDefaults().Validate()
}

func main() {
	os.Exit(runtime.Main(runtime.Service[*config]{
		Name:          "appendsvc",
		DefaultListen: "127.0.0.1:7103",
		Version:       version,
		Declare:       declare,
		Setup:         register,
	}))
}

// register connects to Fluss (waiting for it up to the connect timeout)
// and registers the append service; the client closes at shutdown, after
// the gRPC server stopped.
func register(ctx context.Context, app *runtime.App, cfg *config) error {
	if err := runtime.CheckFlussReachable(ctx, cfg.Fluss); err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.Fluss.ConnectTimeout)
	defer cancel()
	opts := []fluss.Option{fluss.WithLogger(app.Logger), fluss.WithTracerProvider(app.Telemetry.TracerProvider)}
	if cfg.Fluss.SASLUsername != "" {
		password, err := cfg.Fluss.SASLPassword()
		if err != nil {
			return err
		}
		opts = append(opts, fluss.WithSASLPlain(cfg.Fluss.SASLUsername, password))
	}
	client, err := fluss.DialAuthorized(dctx, cfg.Fluss.Bootstrap, opts...)
	if fluss.IsAuthentication(err) {
		return cfg.Fluss.LoginError(err)
	}
	if err != nil {
		return fmt.Errorf("fluss: %w", err)
	}
	app.Add(runtime.ComponentFuncs{ComponentName: "fluss-client", ShutdownFunc: func(context.Context) error { return client.Close() }})
	svc, err := appender.New(cfg.Append, appender.NewClientAdapter(client, app.Logger), app.Logger,
		app.Telemetry.TracerProvider, app.Telemetry.MeterProvider, app.Telemetry.Propagator)
	if err != nil {
		return err
	}
	appendv1.RegisterAppendServiceServer(app.Server, svc)
	return nil
}
