package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// MetricsPath is where the metrics server answers scrapes.
const MetricsPath = "/metrics"

// MetricsServer is the HTTP server behind -metrics-addr as a Component. It
// starts before every other component, so a process that hangs while
// starting can be scraped, and stops after them.
type MetricsServer struct {
	addr   string
	logger *slog.Logger
	srv    *http.Server

	mu      sync.Mutex
	lis     net.Listener
	started bool
	served  chan struct{} // closed when Serve returns
}

// NewMetricsServer serves h at MetricsPath on addr; nothing is bound until
// Listen or Start.
func NewMetricsServer(addr string, h http.Handler, logger *slog.Logger) *MetricsServer {
	mux := http.NewServeMux()
	mux.Handle("GET "+MetricsPath, h)
	return &MetricsServer{
		addr:   addr,
		logger: logger,
		// A scrape is small; the timeouts only keep a stuck scraper from
		// holding a connection forever.
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       2 * time.Minute,
		},
		served: make(chan struct{}),
	}
}

// Name implements Component.
func (m *MetricsServer) Name() string { return "metrics-server" }

// Listen binds the address now; failure is a *SettingError naming
// FERRY_METRICS_ADDR, like a used gRPC port.
func (m *MetricsServer) Listen() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lis != nil {
		return nil
	}
	lis, err := ListenTCP(m.addr, EnvMetricsAddr, FlagMetricsAddr)
	if err != nil {
		return err
	}
	m.lis = lis
	return nil
}

// Addr returns the bound address, or nil before Listen.
func (m *MetricsServer) Addr() net.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lis == nil {
		return nil
	}
	return m.lis.Addr()
}

// Start implements Component.
func (m *MetricsServer) Start(_ context.Context, host Host) error {
	if err := m.Listen(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return errors.New("metrics server started twice")
	}
	m.started = true
	lis := m.lis
	m.mu.Unlock()
	go func() {
		defer close(m.served)
		if err := m.srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
			host.ReportFatal(fmt.Errorf("metrics serve on %s: %w", lis.Addr(), err))
		}
	}()
	m.logger.Info("metrics serving", "addr", lis.Addr().String(), "path", MetricsPath)
	return nil
}

// Shutdown implements Component: scrapes in progress may finish until ctx
// expires, then the remaining connections are closed.
func (m *MetricsServer) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	started, lis := m.started, m.lis
	m.mu.Unlock()
	if !started {
		if lis != nil {
			return lis.Close()
		}
		return nil
	}
	err := m.srv.Shutdown(ctx)
	if err != nil {
		m.logger.Warn("metrics server graceful stop timed out; closing connections", "err", err)
		_ = m.srv.Close()
	}
	<-m.served
	return nil
}
