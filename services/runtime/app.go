package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// App is one running service: its logger, telemetry, gRPC server and any
// further components, started in the order added (the gRPC server last, so
// it reports SERVING only when everything behind it runs) and shut down in
// reverse order.
type App struct {
	Config    Config
	Logger    *slog.Logger
	Telemetry *Telemetry
	Server    *Server
	// Metrics serves /metrics for scraping; nil without -metrics-addr.
	Metrics *MetricsServer
	// Security protects the server and the connections App.Dial opens.
	Security *TransportSecurity

	components []Component
	fatalOnce  sync.Once
	fatal      chan error
}

// NewApp validates cfg and builds the logger (writing to logOut), the
// telemetry providers and the gRPC server. Nothing listens yet.
func NewApp(ctx context.Context, cfg Config, logOut io.Writer) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger, err := NewLogger(cfg.Log, cfg.Service, logOut)
	if err != nil {
		return nil, err
	}
	tel, err := NewTelemetry(ctx, cfg.Service, cfg.Telemetry)
	if err != nil {
		return nil, err
	}
	sec, err := NewTransportSecurity(cfg.GRPCTLS, logger, tel.Meter("github.com/ferrygw/ferry/services/runtime"))
	if err != nil {
		_ = tel.Shutdown(context.WithoutCancel(ctx))
		return nil, err
	}
	app := &App{
		Config:    cfg,
		Logger:    logger,
		Telemetry: tel,
		Security:  sec,
		Server:    NewServer(cfg.Listen, logger, tel, sec),
		fatal:     make(chan error, 1),
	}
	if h := tel.MetricsHandler(); h != nil {
		app.Metrics = NewMetricsServer(cfg.Telemetry.MetricsAddr, h, logger)
	}
	return app, nil
}

// Add appends a component; components start in the order added.
func (a *App) Add(c Component) { a.components = append(a.components, c) }

// Dial opens a client connection to the service named peer with the App's
// telemetry and transport security (see Dial) and adds a component that
// closes it at shutdown. Because components stop in reverse order, the
// connection outlives every component added after it, i.e. the ones that
// use it.
func (a *App) Dial(peer, target string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	conn, err := Dial(target, peer, a.Telemetry, a.Security, opts...)
	if err != nil {
		return nil, err
	}
	a.Add(ComponentFuncs{
		ComponentName: "grpc-client " + target,
		ShutdownFunc:  func(context.Context) error { return conn.Close() },
	})
	return conn, nil
}

// ReportFatal implements Host. Only the first error is kept; later ones are
// logged because they are usually consequences of the first.
func (a *App) ReportFatal(err error) {
	first := false
	a.fatalOnce.Do(func() {
		first = true
		a.fatal <- err
	})
	if !first {
		a.Logger.Error("further component failure during shutdown", "err", err)
	}
}

// Run starts every component, blocks until ctx is done (the caller's
// signal handling) or a component fails, then shuts down in reverse order
// within Config.ShutdownTimeout and flushes telemetry. It returns nil after
// a clean stop on ctx, and the failure otherwise.
func (a *App) Run(ctx context.Context) error {
	var all []Component
	if a.Metrics != nil {
		all = append(all, a.Metrics)
	}
	all = append(append(all, a.components...), a.Server)
	var started []Component
	var runErr error
	for _, c := range all {
		if err := c.Start(ctx, a); err != nil {
			runErr = fmt.Errorf("start %s: %w", c.Name(), err)
			// A SettingError already names what to fix; keep it unwrapped
			// so the one-line message stays short.
			var se *SettingError
			if errors.As(err, &se) {
				runErr = err
			}
			break
		}
		started = append(started, c)
		a.Logger.Debug("component started", "component", c.Name())
	}

	if runErr == nil {
		a.Logger.Info("started", "listen", addrString(a.Server), "metrics", a.metricsAddr(), "otlp_traces", a.Telemetry.Exporting(), "otlp_metrics", a.Telemetry.ExportingMetrics(), "grpc_mtls", !a.Security.IsPlaintext())
		a.Security.LogMode(a.Logger)
		select {
		case <-ctx.Done():
			a.Logger.Info("shutting down", "reason", context.Cause(ctx))
		case err := <-a.fatal:
			runErr = fmt.Errorf("%w: %w", ErrComponentFailed, err)
			a.Logger.Error("shutting down after component failure", "err", err)
		}
	}

	// Shutdown gets a fresh deadline: ctx is already done on the normal path.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.Config.ShutdownTimeout)
	defer cancel()
	var shutdownErrs []error
	for i := len(started) - 1; i >= 0; i-- {
		c := started[i]
		if err := c.Shutdown(sctx); err != nil {
			shutdownErrs = append(shutdownErrs, fmt.Errorf("shutdown %s: %w", c.Name(), err))
			a.Logger.Error("component shutdown failed", "component", c.Name(), "err", err)
		}
	}
	if len(started) < len(all) && runErr != nil {
		// The server may have bound its port in Listen without starting.
		if err := a.Server.Shutdown(sctx); err != nil {
			shutdownErrs = append(shutdownErrs, err)
		}
	}
	// Telemetry last, so spans of the shutdown itself are flushed. It gets
	// a short budget of its own if the components used up the deadline.
	tctx, tcancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryFlushBudget(sctx))
	defer tcancel()
	if err := a.Telemetry.Shutdown(tctx); err != nil {
		a.Logger.Warn("telemetry flush failed", "err", err)
	}
	if runErr != nil {
		return runErr
	}
	if err := errors.Join(shutdownErrs...); err != nil {
		return err
	}
	a.Logger.Info("stopped")
	return nil
}

func telemetryFlushBudget(ctx context.Context) time.Duration {
	const minBudget = 2 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left > minBudget {
			return left
		}
	}
	return minBudget
}

func (a *App) metricsAddr() string {
	if a.Metrics == nil {
		return ""
	}
	if addr := a.Metrics.Addr(); addr != nil {
		return addr.String()
	}
	return ""
}

func addrString(s *Server) string {
	if a := s.Addr(); a != nil {
		return a.String()
	}
	return ""
}
