// Package service wires schemasvc together from its settings, for its main
// and for the single-process mode (cmd/ferry).
package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrygw/ferry/schemasvc/internal/basicauth"
	"github.com/ferrygw/ferry/schemasvc/internal/registry"
	"github.com/ferrygw/ferry/schemasvc/internal/rest"
	"github.com/ferrygw/ferry/schemasvc/internal/store"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/systable"
	"github.com/ferrygw/ferry/services/runtime"
)

// Registry REST listener settings.
const (
	FlagRegistryListen = "registry-listen"
	EnvRegistryListen  = "FERRY_REGISTRY_LISTEN"
	FlagTLSCert        = "registry-tls-cert"
	EnvTLSCert         = "FERRY_REGISTRY_TLS_CERT"
	FlagTLSKey         = "registry-tls-key"
	EnvTLSKey          = "FERRY_REGISTRY_TLS_KEY"
	FlagUsersFile      = "registry-users-file"
	EnvUsersFile       = "FERRY_REGISTRY_USERS_FILE"
	FlagSCRAMFile      = "registry-scram-file"
	EnvSCRAMFile       = "FERRY_REGISTRY_SCRAM_FILE"
)

// Config holds schemasvc's own settings; the shared ones (gRPC listen
// address, logging, telemetry, shutdown timeout) are declared by runtime.
type Config struct {
	Fluss       *runtime.FlussConfig
	CatalogAddr string
	HTTP        HTTPConfig
	Table       string
}

// Declare registers the settings on s and returns the config they fill.
func Declare(s *runtime.Settings) *Config {
	c := &Config{Fluss: runtime.DeclareFluss(s)}
	// Same flag, environment and default as frontdoor's, so that the
	// single process declares it once.
	s.StringVar(&c.CatalogAddr, runtime.Spec[string]{Flag: "catalog-addr", Env: "FERRY_CATALOG_ADDR",
		Default: "127.0.0.1:7101", Usage: "catalogsvc gRPC address host:port", Validate: runtime.DialAddr})
	s.StringVar(&c.HTTP.Listen, runtime.Spec[string]{Flag: FlagRegistryListen, Env: EnvRegistryListen,
		Default: ":8081", Validate: runtime.ListenAddr,
		Usage: "Schema Registry REST API listen address host:port (Confluent-compatible)"})
	s.StringVar(&c.HTTP.TLSCert, runtime.Spec[string]{Flag: FlagTLSCert, Env: EnvTLSCert,
		Usage: "PEM certificate for the Schema Registry REST listener; empty: plain HTTP"})
	s.StringVar(&c.HTTP.TLSKey, runtime.Spec[string]{Flag: FlagTLSKey, Env: EnvTLSKey,
		Usage: "PEM private key for -registry-tls-cert"})
	s.StringVar(&c.HTTP.UsersFile, runtime.Spec[string]{Flag: FlagUsersFile, Env: EnvUsersFile,
		Usage: "users file (frontdoor's -sasl-users-file format) whose users may call the REST API with HTTP Basic; with -registry-scram-file unset too: no authentication"})
	s.StringVar(&c.HTTP.SCRAMFile, runtime.Spec[string]{Flag: FlagSCRAMFile, Env: EnvSCRAMFile,
		Usage: "SCRAM credentials file (frontdoor's -sasl-scram-file) whose users may call the REST API with HTTP Basic"})
	s.StringVar(&c.Table, runtime.Spec[string]{Flag: "schemas-table", Env: "FERRY_SCHEMAS_TABLE",
		Default: store.DefaultTable,
		Usage:   "Fluss table database.table keeping the registry's schemas, subjects and configs; created (with its database) at start"})
	return c
}

// Validate checks the settings that depend on each other.
func (c *Config) Validate() error {
	if err := c.Fluss.Validate(); err != nil {
		return err
	}
	if (c.HTTP.TLSCert == "") != (c.HTTP.TLSKey == "") {
		return &runtime.SettingError{Env: EnvTLSCert, Flag: FlagTLSCert, Value: c.HTTP.TLSCert,
			Err: errors.New("set together with " + EnvTLSKey)}
	}
	return nil
}

// New connects to Fluss and registers the SchemaService, which it returns
// for in-process callers, and adds the REST listener; catalog resolves
// subjects' tables.
func New(ctx context.Context, app *runtime.App, cfg *Config, catalog catalogv1.CatalogServiceClient) (schemav1.SchemaServiceServer, error) {
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
	log, err := store.NewFlussLog(client, cfg.Table, systable.Options{Logger: app.Logger, MeterProvider: app.Telemetry.MeterProvider})
	if err != nil {
		return nil, err
	}
	// The table is made sure of at start, in the background, so that the
	// first request does not wait for its creation.
	prep := systable.NewPreparer(log.Table())
	app.Add(runtime.ComponentFuncs{ComponentName: "schemas-table",
		StartFunc:    func(ctx context.Context, _ runtime.Host) error { return prep.Start(ctx) },
		ShutdownFunc: prep.Shutdown})
	reg, err := registry.New(log, catalog, app.Logger, app.Telemetry.MeterProvider)
	if err != nil {
		return nil, err
	}
	var auth rest.Authenticator
	if cfg.HTTP.UsersFile != "" || cfg.HTTP.SCRAMFile != "" {
		users, err := basicauth.Load(cfg.HTTP.UsersFile, cfg.HTTP.SCRAMFile)
		if err != nil {
			return nil, &runtime.SettingError{Env: EnvUsersFile, Flag: FlagUsersFile, Value: cfg.HTTP.UsersFile, Err: err}
		}
		auth = users
	}
	app.Add(newHTTPServer(cfg.HTTP, rest.Handler(reg, auth, app.Logger), app))
	srv := registry.NewServer(reg)
	schemav1.RegisterSchemaServiceServer(app.Server, srv)
	return srv, nil
}

// Setup is New for the service's own process: catalogsvc over gRPC.
func Setup(ctx context.Context, app *runtime.App, cfg *Config) error {
	conn, err := app.Dial("catalogsvc", cfg.CatalogAddr)
	if err != nil {
		return err
	}
	_, err = New(ctx, app, cfg, catalogv1.NewCatalogServiceClient(conn))
	return err
}
