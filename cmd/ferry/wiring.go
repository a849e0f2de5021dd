package main

import (
	"context"

	appendsvc "github.com/ferrygw/ferry/appendsvc/service"
	catalogsvc "github.com/ferrygw/ferry/catalogsvc/service"
	fetchsvc "github.com/ferrygw/ferry/fetchsvc/service"
	"github.com/ferrygw/ferry/frontdoor/gateway"
	schemasvc "github.com/ferrygw/ferry/schemasvc/service"
	"github.com/ferrygw/ferry/services/runtime"
	"github.com/ferrygw/ferry/services/runtime/inproc"
	transcodesvc "github.com/ferrygw/ferry/transcodesvc/service"
)

// defaultListen is the gRPC port of the single process: next to the
// services' own defaults (7101-7105), which it replaces.
const defaultListen = "127.0.0.1:7100"

// service is the single process for runtime.Main.
func service(version string) runtime.Service[*config] {
	return runtime.Service[*config]{
		Name:          "ferry",
		DefaultListen: defaultListen,
		Version:       version,
		Declare:       declare,
		Setup:         setup,
	}
}

// config is every service's own settings, declared on one registry.
type config struct {
	Catalog   *catalogsvc.Config
	Transcode *transcodesvc.Config
	Append    *appendsvc.Config
	Fetch     *fetchsvc.Config
	Schema    *schemasvc.Config
	Frontdoor *gateway.Config

	settings *runtime.Settings // where each value came from, after parsing
}

func declare(s *runtime.Settings) *config {
	return &config{
		Catalog:   catalogsvc.Declare(s),
		Transcode: transcodesvc.Declare(s),
		Append:    appendsvc.Declare(s),
		Fetch:     fetchsvc.Declare(s),
		Schema:    schemasvc.Declare(s),
		Frontdoor: gateway.Declare(s),
		settings:  s,
	}
}

// unusedFlags are the settings that say where a service's peers are: in
// this process they are no address.
var unusedFlags = []string{"catalog-addr", "transcode-addr", "transcode-resolve-interval", "append-addr", "fetch-addr", "schema-addr"}

// ignored lists the unused settings that were set, by flag or environment.
func (c *config) ignored() []string {
	var out []string
	for _, f := range unusedFlags {
		if src := c.settings.Source(f); src != "default" {
			out = append(out, "-"+f+" ("+src+")")
		}
	}
	return out
}

func (c *config) Validate() error {
	for _, v := range []interface{ Validate() error }{c.Catalog, c.Transcode, c.Append, c.Fetch, c.Schema, c.Frontdoor} {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// setup builds each service as its own process would, in the order of the
// microservices stack (frontdoor last), and hands frontdoor in-process
// clients of the others. Every service is also registered on the gRPC
// server, so its health shows there and tools can call it.
func setup(ctx context.Context, app *runtime.App, c *config) error {
	if ig := c.ignored(); len(ig) > 0 {
		app.Logger.Warn("settings of frontdoor's peer addresses are not used in a single process", "ignored", ig)
	}
	cat, err := catalogsvc.New(ctx, app, c.Catalog)
	if err != nil {
		return err
	}
	in, err := inproc.New(app.Telemetry.TracerProvider, app.Telemetry.MeterProvider, app.Logger)
	if err != nil {
		return err
	}
	// The Schema Registry's REST API listens on its own port
	// (-registry-listen); transcodesvc and fetchsvc reach its
	// SchemaService in-process through in.Schema(sch).
	sch, err := schemasvc.New(ctx, app, c.Schema, in.Catalog(cat))
	if err != nil {
		return err
	}
	c.Transcode.Schemas = in.Schema(sch)
	c.Fetch.Schemas = in.Schema(sch)
	// Answers are not serialized on their way to frontdoor: the
	// converters must not reuse their bytes.
	c.Transcode.Transcode.AnswersShared = true
	tc, err := transcodesvc.New(ctx, app, c.Transcode)
	if err != nil {
		return err
	}
	ap, err := appendsvc.New(ctx, app, c.Append)
	if err != nil {
		return err
	}
	fe, err := fetchsvc.New(ctx, app, c.Fetch)
	if err != nil {
		return err
	}
	peers := gateway.InProcessPeers(in.Catalog(cat), in.Transcode(tc), in.Append(ap), in.Fetch(fe))
	return gateway.SetupInProcess(ctx, app, c.Frontdoor, peers)
}
