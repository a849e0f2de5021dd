package service

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/ferrygw/ferry/services/runtime"
)

// HTTPConfig is the REST listener's settings.
type HTTPConfig struct {
	Listen          string
	TLSCert, TLSKey string
	UsersFile       string
	SCRAMFile       string
}

// httpServer is the REST listener as a runtime.Component.
type httpServer struct {
	cfg    HTTPConfig
	app    *runtime.App
	srv    *http.Server
	served chan struct{} // closed when Serve returns; nil until started
}

func newHTTPServer(cfg HTTPConfig, h http.Handler, app *runtime.App) *httpServer {
	// otelhttp: a span per request (joining the caller's trace) and the
	// http.server.* metrics.
	h = otelhttp.NewHandler(h, "schemaregistry",
		otelhttp.WithTracerProvider(app.Telemetry.TracerProvider),
		otelhttp.WithMeterProvider(app.Telemetry.MeterProvider),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if r.Pattern != "" {
				return r.Pattern
			}
			return r.Method
		}))
	return &httpServer{cfg: cfg, app: app,
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}}
}

func (s *httpServer) Name() string { return "schema-registry-http" }

func (s *httpServer) Start(_ context.Context, host runtime.Host) error {
	lis, err := runtime.ListenTCP(s.cfg.Listen, EnvRegistryListen, FlagRegistryListen)
	if err != nil {
		return err
	}
	if s.cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
		if err != nil {
			_ = lis.Close()
			return &runtime.SettingError{Env: EnvTLSCert, Flag: FlagTLSCert, Value: s.cfg.TLSCert, Err: err}
		}
		lis = tls.NewListener(lis, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
			host.ReportFatal(fmt.Errorf("schema registry serve on %s: %w", lis.Addr(), err))
		}
	}()
	s.app.Logger.Info("schema registry serving", "addr", lis.Addr().String(), "tls", s.cfg.TLSCert != "",
		"basic_auth", s.cfg.UsersFile != "" || s.cfg.SCRAMFile != "")
	return nil
}

func (s *httpServer) Shutdown(ctx context.Context) error {
	if s.served == nil {
		return nil
	}
	if err := s.srv.Shutdown(ctx); err != nil {
		s.app.Logger.Warn("schema registry graceful stop timed out; closing connections", "err", err)
		_ = s.srv.Close()
	}
	<-s.served
	return nil
}
