// Package service wires fetchsvc together from its settings, for its main
// and for the single-process mode (cmd/ferry).
package service

import (
	"context"
	"fmt"
	"time"

	"github.com/ferrygw/ferry/fetchsvc/internal/groupoffsets"
	"github.com/ferrygw/ferry/fetchsvc/internal/reader"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/systable"
	"github.com/ferrygw/ferry/services/runtime"
)

// Config holds fetchsvc's own settings; the shared ones (listen address,
// logging, telemetry, shutdown timeout) are declared by runtime.
type Config struct {
	Fluss *runtime.FlussConfig
	Read  reader.Config
	// SchemaAddr is the SchemaService (the schema registry) whose schemas
	// AVRO topics are served in; empty refuses to read those topics.
	SchemaAddr string
	// Schemas, when set, is an in-process SchemaService used instead of
	// dialling SchemaAddr (the single-process mode).
	Schemas schemav1.SchemaServiceClient
}

// Declare registers the settings on s and returns the config they fill.
func Declare(s *runtime.Settings) *Config {
	c := &Config{Fluss: runtime.DeclareFluss(s)}
	s.DurationVar(&c.Read.PollInterval, runtime.Spec[time.Duration]{Flag: "fetch-poll-interval", Env: "FERRY_FETCH_POLL_INTERVAL",
		Default: reader.DefaultPollInterval, Validate: runtime.PositiveDuration,
		Usage: "longest pause between reads while a consumer waits for data (its added tail latency)"})
	s.StringVar(&c.Read.GroupOffsetsTable, runtime.Spec[string]{Flag: "group-offsets-table", Env: "FERRY_GROUP_OFFSETS_TABLE",
		Default: groupoffsets.DefaultTable,
		Usage:   "Fluss table database.table keeping consumer groups' committed offsets; created (with its database) at start"})
	s.StringVar(&c.SchemaAddr, runtime.Spec[string]{Flag: "schema-addr", Env: "FERRY_SCHEMA_ADDR",
		Validate: runtime.OptionalDialAddr,
		Usage:    "schema registry (SchemaService) gRPC address host:port whose schemas Avro, Protobuf and JSON Schema topics are served in; empty: topics with kafka.value.format=avro, protobuf or json-schema are not served"})
	return c
}

func (c *Config) Validate() error { return c.Fluss.Validate() }

// New connects to Fluss (waiting for it up to the connect timeout)
// and registers the fetch service, which it returns for in-process callers;
// the client closes at shutdown, after the gRPC server stopped.
func New(ctx context.Context, app *runtime.App, cfg *Config) (fetchv1.FetchServiceServer, error) {
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
	read := cfg.Read
	read.Schemas = cfg.Schemas
	if read.Schemas == nil && cfg.SchemaAddr != "" {
		conn, err := app.Dial("schemasvc", cfg.SchemaAddr)
		if err != nil {
			return nil, err
		}
		read.Schemas = schemav1.NewSchemaServiceClient(conn)
	}
	svc, err := reader.New(read, client, app.Logger, app.Telemetry.MeterProvider)
	if err != nil {
		return nil, err
	}
	// The offsets table is made sure of at start, in the background, so
	// that the first group commit does not wait for its creation.
	prep := systable.NewPreparer(svc.OffsetsTable())
	app.Add(runtime.ComponentFuncs{ComponentName: "group-offsets-table",
		StartFunc:    func(ctx context.Context, _ runtime.Host) error { return prep.Start(ctx) },
		ShutdownFunc: prep.Shutdown})
	fetchv1.RegisterFetchServiceServer(app.Server, svc)
	return svc, nil
}

// Setup is New for the service's own process.
func Setup(ctx context.Context, app *runtime.App, cfg *Config) error {
	_, err := New(ctx, app, cfg)
	return err
}
