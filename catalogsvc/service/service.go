// Package service wires catalogsvc together: its settings, the Fluss
// client, the catalog, the broker registry and the gRPC service.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ferrygw/ferry/catalogsvc/internal/brokers"
	"github.com/ferrygw/ferry/catalogsvc/internal/catalog"
	"github.com/ferrygw/ferry/catalogsvc/internal/flussadapter"
	"github.com/ferrygw/ferry/catalogsvc/internal/mapping"
	"github.com/ferrygw/ferry/catalogsvc/internal/server"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/runtime"
)

// Names of catalogsvc's own settings.
const (
	FlagRefreshInterval = "refresh-interval"
	EnvRefreshInterval  = "FERRY_CATALOG_REFRESH_INTERVAL"
	FlagRefreshTimeout  = "refresh-timeout"
	EnvRefreshTimeout   = "FERRY_CATALOG_REFRESH_TIMEOUT"
	FlagMinRefreshGap   = "refresh-min-gap"
	EnvMinRefreshGap    = "FERRY_CATALOG_REFRESH_MIN_GAP"
	FlagClusterID       = "cluster-id"
	EnvClusterID        = "FERRY_CLUSTER_ID"
	FlagDatabases       = "databases"
	EnvDatabases        = "FERRY_CATALOG_DATABASES"
	FlagExpose          = "expose"
	EnvExpose           = "FERRY_CATALOG_EXPOSE"
	FlagMaxLease        = "max-broker-lease"
	EnvMaxLease         = "FERRY_CATALOG_MAX_BROKER_LEASE"
)

// Config is catalogsvc's own configuration.
type Config struct {
	Fluss           *runtime.FlussConfig
	RefreshInterval time.Duration
	RefreshTimeout  time.Duration
	MinRefreshGap   time.Duration
	// ClusterID is the Kafka cluster id; empty derives it from the Fluss
	// bootstrap addresses (mapping.DeriveClusterID).
	ClusterID string
	// Databases is a comma-separated list; empty means every database.
	Databases string
	// Expose is opt-in or all (mapping.ParseExposure).
	Expose   string
	MaxLease time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() *Config {
	return &Config{
		Fluss:           &runtime.FlussConfig{ConnectTimeout: 10 * time.Second},
		RefreshInterval: 10 * time.Second,
		RefreshTimeout:  30 * time.Second,
		MinRefreshGap:   time.Second,
		Expose:          "opt-in",
		MaxLease:        5 * time.Minute,
	}
}

// Declare registers the settings on s and returns the config they fill.
func Declare(s *runtime.Settings) *Config {
	c := DefaultConfig()
	c.Fluss = runtime.DeclareFluss(s)
	s.DurationVar(&c.RefreshInterval, runtime.Spec[time.Duration]{Flag: FlagRefreshInterval, Env: EnvRefreshInterval,
		Default: c.RefreshInterval, Validate: runtime.PositiveDuration,
		Usage: "how often the catalog re-reads every table from Fluss (unknown topics also trigger a read)"})
	s.DurationVar(&c.RefreshTimeout, runtime.Spec[time.Duration]{Flag: FlagRefreshTimeout, Env: EnvRefreshTimeout,
		Default: c.RefreshTimeout, Validate: runtime.PositiveDuration,
		Usage: "deadline of one catalog read from Fluss"})
	s.DurationVar(&c.MinRefreshGap, runtime.Spec[time.Duration]{Flag: FlagMinRefreshGap, Env: EnvMinRefreshGap,
		Default: c.MinRefreshGap, Validate: nonNegative,
		Usage: "least time between two reads triggered by lookups of unknown topics"})
	s.StringVar(&c.ClusterID, runtime.Spec[string]{Flag: FlagClusterID, Env: EnvClusterID,
		Validate: optional(mapping.ValidateClusterID),
		Usage:    "Kafka cluster id (empty: derived from the Fluss bootstrap addresses)"})
	s.StringVar(&c.Databases, runtime.Spec[string]{Flag: FlagDatabases, Env: EnvDatabases,
		Validate: validDatabases,
		Usage:    "comma-separated Fluss databases whose tables may be topics (empty: every database)"})
	s.StringVar(&c.Expose, runtime.Spec[string]{Flag: FlagExpose, Env: EnvExpose, Default: c.Expose,
		Validate: func(v string) error { _, err := mapping.ParseExposure(v); return err },
		Usage:    "opt-in: only tables with kafka.enabled=true are topics; all: every compatible table unless kafka.enabled=false"})
	s.DurationVar(&c.MaxLease, runtime.Spec[time.Duration]{Flag: FlagMaxLease, Env: EnvMaxLease,
		Default: c.MaxLease, Validate: runtime.PositiveDuration,
		Usage: "longest broker lease a frontdoor heartbeat may ask for"})
	return c
}

func nonNegative(d time.Duration) error {
	if d < 0 {
		return errors.New("must not be negative")
	}
	return nil
}

func optional(check func(string) error) func(string) error {
	return func(v string) error {
		if v == "" {
			return nil
		}
		return check(v)
	}
}

func validDatabases(v string) error {
	for _, db := range runtime.SplitList(v) {
		if err := mapping.ValidateFlussName(db); err != nil {
			return fmt.Errorf("database %w", err)
		}
	}
	return nil
}

// Validate checks a Config, naming the bad setting.
func (c *Config) Validate() error {
	if c.Fluss == nil {
		return &runtime.SettingError{Env: runtime.EnvFlussBootstrap, Flag: runtime.FlagFlussBootstrap, Err: errors.New("not set")}
	}
	if err := c.Fluss.Validate(); err != nil {
		return err
	}
	durations := []struct {
		env, flag string
		d         time.Duration
		check     func(time.Duration) error
	}{
		{EnvRefreshInterval, FlagRefreshInterval, c.RefreshInterval, runtime.PositiveDuration},
		{EnvRefreshTimeout, FlagRefreshTimeout, c.RefreshTimeout, runtime.PositiveDuration},
		{EnvMinRefreshGap, FlagMinRefreshGap, c.MinRefreshGap, nonNegative},
		{EnvMaxLease, FlagMaxLease, c.MaxLease, runtime.PositiveDuration},
	}
	for _, d := range durations {
		if err := d.check(d.d); err != nil {
			return &runtime.SettingError{Env: d.env, Flag: d.flag, Value: d.d.String(), Err: err}
		}
	}
	strs := []struct {
		env, flag, v string
		check        func(string) error
	}{
		{EnvClusterID, FlagClusterID, c.ClusterID, optional(mapping.ValidateClusterID)},
		{EnvDatabases, FlagDatabases, c.Databases, validDatabases},
		{EnvExpose, FlagExpose, c.Expose, func(v string) error { _, err := mapping.ParseExposure(v); return err }},
	}
	for _, s := range strs {
		if err := s.check(s.v); err != nil {
			return &runtime.SettingError{Env: s.env, Flag: s.flag, Value: s.v, Err: err}
		}
	}
	return nil
}

// CatalogConfig turns the settings into the catalog's configuration.
func (c *Config) CatalogConfig() catalog.Config {
	clusterID := c.ClusterID
	if clusterID == "" {
		clusterID = mapping.DeriveClusterID(c.Fluss.Addrs())
	}
	// Validate already vetted the value; the zero Exposure (opt-in) is the
	// safe fallback should it not have run.
	exposure, _ := mapping.ParseExposure(c.Expose)
	return catalog.Config{
		RefreshInterval: c.RefreshInterval,
		RefreshTimeout:  c.RefreshTimeout,
		MinRefreshGap:   c.MinRefreshGap,
		Databases:       runtime.SplitList(c.Databases),
		Concurrency:     8,
		Mapping:         mapping.Options{ClusterID: clusterID, Exposure: exposure},
	}
}

// Setup is New for catalogsvc's own process.
func Setup(ctx context.Context, app *runtime.App, cfg *Config) error {
	_, err := New(ctx, app, cfg)
	return err
}

// New builds catalogsvc on app: it checks that Fluss is reachable (a
// wrong address fails startup with a message naming the setting), then
// adds the Fluss client, the catalog and the CatalogService, which it
// returns for in-process callers.
func New(ctx context.Context, app *runtime.App, cfg *Config) (catalogv1.CatalogServiceServer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := runtime.CheckFlussReachable(ctx, cfg.Fluss); err != nil {
		return nil, err
	}
	version := app.Config.Telemetry.ServiceVersion
	if version == "" {
		version = "dev"
	}
	opts := []fluss.Option{fluss.WithLogger(app.Logger), fluss.WithTracerProvider(app.Telemetry.TracerProvider),
		fluss.WithClientSoftware("ferry-catalogsvc", version)}
	if cfg.Fluss.SASLUsername != "" {
		password, err := cfg.Fluss.SASLPassword()
		if err != nil {
			return nil, err
		}
		opts = append(opts, fluss.WithSASLPlain(cfg.Fluss.SASLUsername, password))
	}
	admin := flussadapter.NewLazy(func(ctx context.Context) (*fluss.Client, error) {
		return fluss.Dial(ctx, cfg.Fluss.Bootstrap, opts...)
	})
	if err := checkLogin(ctx, admin, cfg.Fluss, app.Logger); err != nil {
		return nil, err
	}
	ccfg := cfg.CatalogConfig()
	cat, err := catalog.New(flussadapter.New(admin), ccfg, app.Logger,
		catalog.WithTracerProvider(app.Telemetry.TracerProvider),
		catalog.WithMeterProvider(app.Telemetry.MeterProvider))
	if err != nil {
		return nil, err
	}
	// Added before the catalog, so it is shut down after it.
	app.Add(runtime.ComponentFuncs{
		ComponentName: "fluss-client",
		ShutdownFunc:  func(context.Context) error { return admin.Close() },
	})
	app.Add(runtime.ComponentFuncs{
		ComponentName: "catalog",
		StartFunc:     func(ctx context.Context, _ runtime.Host) error { return cat.Start(ctx) },
		ShutdownFunc:  cat.Shutdown,
	})
	registry := brokers.NewRegistry(cfg.MaxLease, time.Now)
	svc := server.New(cat, registry, ccfg.Mapping.ClusterID, app.Logger)
	catalogv1.RegisterCatalogServiceServer(app.Server, svc)
	app.Logger.Info("catalog configured", "cluster_id", ccfg.Mapping.ClusterID, "expose", ccfg.Mapping.Exposure.String(),
		"databases", cfg.Databases, "refresh_interval", cfg.RefreshInterval)
	return svc, nil
}

// checkLogin makes a refused Fluss login a start-up error. Any other failure
// (Fluss still starting, say) only logs: the catalog starts anyway, dials
// again on use and answers from its last state meanwhile.
func checkLogin(ctx context.Context, admin *flussadapter.Lazy, cfg *runtime.FlussConfig, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	_, err := admin.ListDatabases(ctx)
	if fluss.IsAuthentication(err) {
		return cfg.LoginError(err)
	}
	if err != nil {
		log.Warn("fluss not usable yet; the catalog retries on use", "err", err)
	}
	return nil
}
