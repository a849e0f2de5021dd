// Package service wires transcodesvc together from its settings, for its main
// and for the single-process mode (cmd/ferry).
package service

import (
	"context"
	"errors"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/runtime"
	"github.com/ferrygw/ferry/transcodesvc/internal/server"
)

// Config holds transcodesvc's own settings; the shared ones (listen address,
// logging, telemetry, shutdown timeout) are declared by runtime.
type Config struct {
	Transcode server.Config
	// SchemaAddr is the SchemaService (the schema registry) framed values'
	// writer schemas come from; empty refuses topics of those formats.
	SchemaAddr string
	// Schemas, when set, is an in-process SchemaService used instead of
	// dialling SchemaAddr (the single-process mode).
	Schemas schemav1.SchemaServiceClient
}

// Declare registers the settings on s and returns the config they fill.
func Declare(s *runtime.Settings) *Config {
	def := server.DefaultConfig()
	c := &Config{}
	s.IntVar(&c.Transcode.Workers, runtime.Spec[int]{Flag: "transcode-workers", Env: "FERRY_TRANSCODE_WORKERS",
		Default: def.Workers, Validate: positive,
		Usage: "batches converted at once across all streams (default: one per core)"})
	s.IntVar(&c.Transcode.MaxDecompressedBytes, runtime.Spec[int]{Flag: "transcode-max-decompressed-bytes", Env: "FERRY_TRANSCODE_MAX_DECOMPRESSED_BYTES",
		Default: def.MaxDecompressedBytes, Validate: positive,
		Usage: "largest size one record batch may decompress to; larger batches are refused as CORRUPT_MESSAGE"})
	s.IntVar(&c.Transcode.PlanCacheSize, runtime.Spec[int]{Flag: "transcode-plan-cache-size", Env: "FERRY_TRANSCODE_PLAN_CACHE_SIZE",
		Default: def.PlanCacheSize, Validate: positive,
		Usage: "compiled topic mappings kept across streams"})
	s.IntVar(&c.Transcode.MaxStreamMappings, runtime.Spec[int]{Flag: "transcode-max-stream-mappings", Env: "FERRY_TRANSCODE_MAX_STREAM_MAPPINGS",
		Default: def.MaxStreamMappings, Validate: positive,
		Usage: "topic mappings one stream may have registered at once"})
	s.IntVar(&c.Transcode.MaxStreamPending, runtime.Spec[int]{Flag: "transcode-max-stream-pending", Env: "FERRY_TRANSCODE_MAX_STREAM_PENDING",
		Default: def.MaxStreamPending, Validate: positive,
		Usage: "unanswered jobs per stream before the stream stops reading (backpressure)"})
	s.StringVar(&c.SchemaAddr, runtime.Spec[string]{Flag: "schema-addr", Env: "FERRY_SCHEMA_ADDR",
		Validate: runtime.OptionalDialAddr,
		Usage:    "schema registry (SchemaService) gRPC address host:port the writer schemas of Avro, Protobuf and JSON Schema values are read from; empty: topics with kafka.value.format=avro, protobuf or json-schema are refused"})
	s.IntVar(&c.Transcode.SchemaCacheSize, runtime.Spec[int]{Flag: "schema-cache-size", Env: "FERRY_SCHEMA_CACHE_SIZE",
		Default: def.SchemaCacheSize, Validate: positive,
		Usage: "writer schemas kept by id (an id never changes meaning, so they are never asked for again while kept)"})
	c.Transcode.SchemaTimeout = def.SchemaTimeout
	// The answer must fit the gRPC message limit the runtime sets.
	c.Transcode.MaxOutputBytes = def.MaxOutputBytes
	return c
}

func positive(n int) error {
	if n <= 0 {
		return errors.New("must be positive")
	}
	return nil
}

func (c *Config) Validate() error { return c.Transcode.Validate() }

// New builds the transcoder, registers it on the gRPC server and returns
// it for in-process callers. Its only connection is to the schema registry
// (app.Dial closes it after the gRPC server stopped); the gRPC server's
// graceful stop waits for open streams, whose handlers wait for their jobs.
func New(_ context.Context, app *runtime.App, cfg *Config) (transcodev1.TranscodeServiceServer, error) {
	tc := cfg.Transcode
	tc.Schemas = cfg.Schemas
	if tc.Schemas == nil && cfg.SchemaAddr != "" {
		conn, err := app.Dial("schemasvc", cfg.SchemaAddr)
		if err != nil {
			return nil, err
		}
		tc.Schemas = schemav1.NewSchemaServiceClient(conn)
	}
	svc, err := server.New(tc, app.Logger, server.Telemetry{
		Tracer:     app.Telemetry.TracerProvider,
		Meter:      app.Telemetry.MeterProvider,
		Propagator: app.Telemetry.Propagator,
	})
	if err != nil {
		return nil, err
	}
	transcodev1.RegisterTranscodeServiceServer(app.Server, svc)
	return svc, nil
}

// Setup is New for the service's own process.
func Setup(ctx context.Context, app *runtime.App, cfg *Config) error {
	_, err := New(ctx, app, cfg)
	return err
}
