// Command fetchsvc serves Fluss tables to Kafka consumers on behalf of
// frontdoor: it reads log buckets over Fluss's own RPC protocol and answers
// with Kafka record batches rebuilt per each topic's mapping.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ferrygw/ferry/fetchsvc/internal/groupoffsets"
	"github.com/ferrygw/ferry/fetchsvc/internal/reader"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/runtime"
)

// version is stamped at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

// config holds fetchsvc's own settings; the shared ones (listen address,
// logging, telemetry, shutdown timeout) are declared by runtime.
type config struct {
	Fluss *runtime.FlussConfig
	Read  reader.Config
}

func declare(s *runtime.Settings) *config {
	c := &config{Fluss: runtime.DeclareFluss(s)}
	s.DurationVar(&c.Read.PollInterval, runtime.Spec[time.Duration]{Flag: "fetch-poll-interval", Env: "FERRY_FETCH_POLL_INTERVAL",
		Default: reader.DefaultPollInterval, Validate: runtime.PositiveDuration,
		Usage: "longest pause between reads while a consumer waits for data (its added tail latency)"})
	s.StringVar(&c.Read.GroupOffsetsTable, runtime.Spec[string]{Flag: "group-offsets-table", Env: "FERRY_GROUP_OFFSETS_TABLE",
		Default: groupoffsets.DefaultTable,
		Usage:   "Fluss table database.table keeping consumer groups' committed offsets; created (with its database) when first needed"})
	return c
}

func (c *config) Validate() error { return c.Fluss.Validate() }

func main() {
	os.Exit(runtime.Main(runtime.Service[*config]{
		Name:          "fetchsvc",
		DefaultListen: "127.0.0.1:7105",
		Version:       version,
		Declare:       declare,
		Setup:         register,
	}))
}

// register connects to Fluss (waiting for it up to the connect timeout)
// and registers the fetch service; the client closes at shutdown, after
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
	svc, err := reader.New(cfg.Read, client, app.Logger, app.Telemetry.MeterProvider)
	if err != nil {
		return err
	}
	fetchv1.RegisterFetchServiceServer(app.Server, svc)
	return nil
}
