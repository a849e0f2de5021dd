package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes of a service process.
const (
	ExitOK      = 0
	ExitFailure = 1 // a component failed or shutdown was not clean
	ExitConfig  = 2 // a setting is invalid or unusable (bad value, port in use, dependency unreachable)
)

// Service describes one service binary to Main. C is the service's own
// config type, usually a pointer to a struct whose fields Declare binds to
// settings; if C has a Validate() error method it runs after parsing.
type Service[C any] struct {
	Name          string
	DefaultListen string
	Version       string
	// Declare registers the service's own settings and returns its config,
	// which Parse fills in. Nil: the service has no settings of its own.
	Declare func(s *Settings) C
	// Setup wires the service into the app once config is valid: register
	// gRPC services on app.Server, add components with app.Add, dial peers.
	// Errors of type *SettingError exit with ExitConfig.
	Setup func(ctx context.Context, app *App, cfg C) error
}

// Main runs svc with the process's arguments, environment and signals and
// returns the exit code; a service's main is os.Exit(runtime.Main(svc)).
func Main[C any](svc Service[C]) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, restore default handling so a second one
	// kills a shutdown that hangs.
	go func() { <-ctx.Done(); stop() }()
	return RunService(ctx, svc, os.Args[1:], os.LookupEnv, os.Stderr)
}

// RunService is Main with its inputs made explicit for tests: it parses
// args and env, builds the App, runs svc.Setup and then the App until ctx is
// done. Every failure is printed to stderr as one line "<service>: <error>".
func RunService[C any](ctx context.Context, svc Service[C], args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	err := runService(ctx, svc, args, lookupEnv, stderr)
	if errors.Is(err, ErrHelp) {
		return ExitOK
	}
	if err != nil {
		// One line, whatever the error wraps: operators grep for it.
		msg := strings.ReplaceAll(err.Error(), "\n", "; ")
		fmt.Fprintf(stderr, "%s: %s\n", svc.Name, msg)
		return ExitCode(err)
	}
	return ExitOK
}

// ExitCode maps an error from RunService's steps to the process exit code.
func ExitCode(err error) int {
	var se *SettingError
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &se), errors.As(err, &ue):
		return ExitConfig
	default:
		return ExitFailure
	}
}

func runService[C any](ctx context.Context, svc Service[C], args []string, lookupEnv func(string) (string, bool), stderr io.Writer) error {
	cfg := DefaultConfig(svc.Name, svc.DefaultListen)
	cfg.Telemetry.ServiceVersion = svc.Version
	settings := NewSettings(svc.Name)
	cfg.Declare(settings)
	var probe bool
	settings.BoolVar(&probe, Spec[bool]{Flag: FlagHealthProbe,
		Usage: "check the health of the instance these settings describe and exit 0 if SERVING"})
	var own C
	if svc.Declare != nil {
		own = svc.Declare(settings)
	}
	if err := settings.Parse(args, lookupEnv, stderr); err != nil {
		return err
	}
	if probe {
		tel, err := NewTelemetry(ctx, svc.Name, TelemetryConfig{})
		if err != nil {
			return err
		}
		defer tel.Shutdown(context.WithoutCancel(ctx))
		sec, err := NewTransportSecurity(cfg.GRPCTLS, nil, nil)
		if err != nil {
			return err
		}
		return ProbeHealth(ctx, svc.Name, cfg.Listen, tel, sec)
	}
	if v, ok := any(own).(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return err
		}
	}

	app, err := NewApp(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	app.Telemetry.InstallGlobals(app.Logger)
	// Bind early: a port in use is a config error and should not wait for
	// slower setup such as reaching Fluss.
	if err := app.Server.Listen(); err != nil {
		_ = app.Telemetry.Shutdown(context.WithoutCancel(ctx))
		return err
	}
	if app.Metrics != nil {
		if err := app.Metrics.Listen(); err != nil {
			_ = app.Server.Shutdown(context.WithoutCancel(ctx))
			_ = app.Telemetry.Shutdown(context.WithoutCancel(ctx))
			return err
		}
	}
	if cfg.PprofAddr != "" {
		// Added first, so it outlives every other component at shutdown.
		ps, err := newPprofServer(cfg.PprofAddr)
		if err != nil {
			_ = app.Server.Shutdown(context.WithoutCancel(ctx))
			if app.Metrics != nil {
				_ = app.Metrics.Shutdown(context.WithoutCancel(ctx))
			}
			_ = app.Telemetry.Shutdown(context.WithoutCancel(ctx))
			return err
		}
		app.Add(ps)
	}
	if svc.Setup != nil {
		if err := svc.Setup(WithLogger(ctx, app.Logger), app, own); err != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
			defer cancel()
			_ = app.Server.Shutdown(sctx)
			if app.Metrics != nil {
				_ = app.Metrics.Shutdown(sctx)
			}
			_ = app.Telemetry.Shutdown(sctx)
			return err
		}
	}
	return app.Run(ctx)
}
