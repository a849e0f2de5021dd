// Command transcodesvc turns Kafka record batches into Arrow IPC batches for
// Fluss. It is stateless, so it scales by running more replicas.
package main

import (
	"context"
	"errors"
	"os"

	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/runtime"
	"github.com/ferrygw/ferry/transcodesvc/internal/server"
)

// version is stamped at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

// config holds transcodesvc's own settings; the shared ones (listen address,
// logging, telemetry, shutdown timeout) are declared by runtime.
type config struct {
	Transcode server.Config
}

func declare(s *runtime.Settings) *config {
	def := server.DefaultConfig()
	c := &config{}
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

func (c *config) Validate() error { return c.Transcode.Validate() }

func main() {
	os.Exit(runtime.Main(runtime.Service[*config]{
		Name:          "transcodesvc",
		DefaultListen: "127.0.0.1:7102",
		Version:       version,
		Declare:       declare,
		Setup:         register,
	}))
}

// register builds the transcoder and registers it on the gRPC server. It
// holds no connections, so there is nothing to add for shutdown: the gRPC
// server's graceful stop waits for open streams, whose handlers wait for
// their jobs.
func register(_ context.Context, app *runtime.App, cfg *config) error {
	svc, err := server.New(cfg.Transcode, app.Logger, server.Telemetry{
		Tracer:     app.Telemetry.TracerProvider,
		Meter:      app.Telemetry.MeterProvider,
		Propagator: app.Telemetry.Propagator,
	})
	if err != nil {
		return err
	}
	transcodev1.RegisterTranscodeServiceServer(app.Server, svc)
	return nil
}
