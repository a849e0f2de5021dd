package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config is the Kafka listener's configuration.
type Config struct {
	// Listen is the host:port to accept Kafka clients on (port 0 picks one).
	Listen string
	// TLS, when set, makes the listener speak TLS (SSL / SASL_SSL).
	TLS *tls.Config
	// MaxRequestBytes caps one request frame (Kafka's
	// socket.request.max.bytes). A larger frame closes the connection.
	MaxRequestBytes int32
	// IdleTimeout closes a connection that sent nothing and has nothing in
	// flight for this long (Kafka's connections.max.idle.ms).
	IdleTimeout time.Duration
	// WriteTimeout bounds writing one response to a slow client.
	WriteTimeout time.Duration
	// MaxConnections caps concurrent client connections; beyond it new
	// connections are closed at once.
	MaxConnections int
	// MaxInFlightRequests caps pipelined requests per connection that are
	// read but not yet answered.
	MaxInFlightRequests int
	// ConnInFlightBytes and ServerInFlightBytes cap the request bytes held
	// by requests being served, per connection and overall. When a budget
	// is spent the connection stops reading from its socket, which pushes
	// back on the client through TCP instead of buffering.
	ConnInFlightBytes   int64
	ServerInFlightBytes int64
}

// DefaultConfig returns Kafka-like defaults.
func DefaultConfig() Config {
	return Config{
		Listen:              "127.0.0.1:9092",
		MaxRequestBytes:     100 << 20,
		IdleTimeout:         10 * time.Minute,
		WriteTimeout:        30 * time.Second,
		MaxConnections:      4096,
		MaxInFlightRequests: 64,
		ConnInFlightBytes:   128 << 20,
		ServerInFlightBytes: 512 << 20,
	}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Listen == "":
		return errors.New("kafka config: Listen is empty")
	case c.MaxRequestBytes < 64:
		return fmt.Errorf("kafka config: MaxRequestBytes %d is below 64", c.MaxRequestBytes)
	case c.IdleTimeout <= 0:
		return fmt.Errorf("kafka config: IdleTimeout %s must be positive", c.IdleTimeout)
	case c.WriteTimeout <= 0:
		return fmt.Errorf("kafka config: WriteTimeout %s must be positive", c.WriteTimeout)
	case c.MaxConnections <= 0:
		return fmt.Errorf("kafka config: MaxConnections %d must be positive", c.MaxConnections)
	case c.MaxInFlightRequests <= 0:
		return fmt.Errorf("kafka config: MaxInFlightRequests %d must be positive", c.MaxInFlightRequests)
	case c.ConnInFlightBytes < int64(c.MaxRequestBytes):
		// Otherwise a maximal request could never be admitted.
		return fmt.Errorf("kafka config: ConnInFlightBytes %d is below MaxRequestBytes %d", c.ConnInFlightBytes, c.MaxRequestBytes)
	case c.ServerInFlightBytes < c.ConnInFlightBytes:
		return fmt.Errorf("kafka config: ServerInFlightBytes %d is below ConnInFlightBytes %d", c.ServerInFlightBytes, c.ConnInFlightBytes)
	}
	return nil
}

// Server accepts Kafka connections and serves them with the registry's
// handlers. It is a component: Start binds and accepts, Shutdown stops
// accepting, lets every connection finish the requests it has read, then
// closes them.
type Server struct {
	cfg    Config
	Reg    *Registry
	log    *slog.Logger
	tracer trace.Tracer
	// authRequired: only PreAuth APIs are served until SASL succeeds.
	authRequired bool
	plain        PlainAuthenticator
	authz        Authorizer
	// certPrincipal names the client of a TLS connection from its
	// verified certificate (mTLS); nil: certificates name nobody.
	certPrincipal func(*x509.Certificate) (string, error)

	inflight *byteBudget
	// work is the server-wide budget of decoded request cost (see
	// requestShape), sized like inflight.
	work *byteBudget
	// Producers is the idempotent producer state (NewFrontdoor), nil when
	// idempotence is disabled; kept here for ProducerCount and its gauge.
	Producers *idempotence.States
	txns      *txn.Coordinator // nil: transactions not served
	meters    metric.MeterProvider
	metrics   *ServerMetrics
	gauges    metric.Registration
	// hardStop ends handlers still running when the shutdown deadline
	// passes; until then they outlive their connection (see conn.dispatch).
	hardStop    context.Context
	hardStopNow context.CancelFunc

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*conn]struct{}
	Draining atomic.Bool
	connWG   sync.WaitGroup
	acceptWG sync.WaitGroup
}

// Option configures a Server.
type Option func(*Server)

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithListener serves on ln instead of binding Config.Listen, for callers
// that must know the port before building the handlers (to advertise it).
// TLS from Config still applies.
func WithListener(ln net.Listener) Option { return func(s *Server) { s.ln = ln } }

// WithTracerProvider sets where request spans go (default: no-op).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(s *Server) { s.tracer = tp.Tracer("github.com/ferrygw/ferry/frontdoor/internal/kafka") }
}

// WithMeterProvider sets where the frontdoor's metrics go (default: no-op).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(s *Server) { s.meters = mp } }

// WithProducerStates hands the server the idempotent producer state for
// ProducerCount and the producers gauge.
func WithProducerStates(ps *idempotence.States) Option { return func(s *Server) { s.Producers = ps } }

// WithTxnCoordinator closes the transaction coordinator at shutdown.
func WithTxnCoordinator(c *txn.Coordinator) Option { return func(s *Server) { s.txns = c } }

// WithMetrics shares instruments already built for the handlers.
func WithMetrics(m *ServerMetrics) Option { return func(s *Server) { s.metrics = m } }

// WithSASLPlain makes every connection authenticate with SASL/PLAIN
// against auth before any API other than ApiVersions, SaslHandshake and
// SaslAuthenticate. The registry must include the SASL APIs.
func WithSASLPlain(auth PlainAuthenticator) Option {
	return func(s *Server) { s.authRequired, s.plain = true, auth }
}

// Authorizer decides what a principal may do to a topic (acl.File).
type Authorizer interface {
	Allowed(principal string, op acl.Operation, topic string) bool
	AllowedGroup(principal string, op acl.Operation, group string) bool
	AllowedTransactionalID(principal string, op acl.Operation, id string) bool
	AllowedCluster(principal string, op acl.Operation) bool
	// Bindings lists the rules, for DescribeAcls.
	Bindings() []acl.Binding
}

// WithAuthorizer checks every topic of Produce (WRITE) and Metadata
// (DESCRIBE) against a: refused topics get TOPIC_AUTHORIZATION_FAILED, and
// Metadata for all topics leaves them out, as Kafka does.
func WithAuthorizer(a Authorizer) Option { return func(s *Server) { s.authz = a } }

// WithClientCertPrincipal makes a verified client certificate (Config.TLS
// with ClientAuth) authenticate its connection: name gives the user the
// connection acts as (ACL principal User:<name>), unless SASL later names
// another. A certificate name refuses is a failed authentication.
func WithClientCertPrincipal(name func(*x509.Certificate) (string, error)) Option {
	return func(s *Server) { s.certPrincipal = name }
}

// RequireSASL makes every connection authenticate before anything but the
// SASL APIs is served (SCRAM, OAUTHBEARER; WithSASLPlain does it for PLAIN).
func RequireSASL() Option { return func(s *Server) { s.authRequired = true } }

// NewServer validates cfg and builds a server for reg's APIs.
func NewServer(cfg Config, reg *Registry, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		Reg:      reg,
		log:      slog.New(slog.DiscardHandler),
		tracer:   noop.NewTracerProvider().Tracer(""),
		inflight: newByteBudget(cfg.ServerInFlightBytes),
		work:     newByteBudget(WorkBudgetSize(cfg.ServerInFlightBytes)),
		conns:    map[*conn]struct{}{},
	}
	s.hardStop, s.hardStopNow = context.WithCancel(context.Background())
	for _, o := range opts {
		o(s)
	}
	if s.metrics == nil {
		var err error
		if s.metrics, err = NewServerMetrics(s.meters); err != nil {
			return nil, err
		}
	}
	var err error
	if s.gauges, err = s.metrics.observe(s.inflight, s.Producers); err != nil {
		return nil, err
	}
	if s.ln != nil && cfg.TLS != nil {
		s.ln = tls.NewListener(s.ln, cfg.TLS)
	}
	return s, nil
}

// Name implements the runtime component interface.
func (s *Server) Name() string { return "kafka-listener" }

// Listen binds the listener without accepting yet, so a caller learns the
// chosen port (Addr) before Start, e.g. to advertise it.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("kafka listen %s: %w", s.cfg.Listen, err)
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address, nil before Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Start binds (if Listen was not called) and starts accepting. It does not
// block. Accept failures other than shutdown are reported to fatal, which
// may be nil.
func (s *Server) Start(ctx context.Context, fatal func(error)) error {
	if err := s.Listen(); err != nil {
		return err
	}
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	s.log.Info("kafka listener started", "addr", ln.Addr().String(), "tls", s.cfg.TLS != nil, "sasl", s.authRequired)
	s.acceptWG.Add(1)
	go s.acceptLoop(ln, fatal)
	return nil
}

func (s *Server) acceptLoop(ln net.Listener, fatal func(error)) {
	defer s.acceptWG.Done()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.Draining.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Transient (e.g. out of file descriptors): back off and
				// go on, as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("kafka accept failed; retrying", "err", err, "delay", delay)
				time.Sleep(delay)
				continue
			}
			s.log.Error("kafka accept failed", "err", err)
			if fatal != nil {
				fatal(fmt.Errorf("kafka listener: %w", err))
			}
			return
		}
		delay = 0
		s.mu.Lock()
		if s.Draining.Load() {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		if len(s.conns) >= s.cfg.MaxConnections {
			s.mu.Unlock()
			s.log.Warn("kafka connection refused: connection limit reached",
				"remote", nc.RemoteAddr().String(), "max_connections", s.cfg.MaxConnections)
			_ = nc.Close()
			continue
		}
		c := newConn(s, nc)
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.mu.Unlock()
		s.metrics.connOpened()
		go c.serve()
	}
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.metrics.connClosed()
	s.connWG.Done()
}

// NumConns reports the open connections.
func (s *Server) NumConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Shutdown stops accepting, lets each connection answer what it has read,
// then closes it. When ctx expires first the remaining connections are cut
// and ctx's error returned.
func (s *Server) Shutdown(ctx context.Context) error {
	defer func() { _ = s.gauges.Unregister() }()
	s.mu.Lock()
	s.Draining.Store(true)
	ln := s.ln
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	s.acceptWG.Wait()
	for _, c := range conns {
		c.drain()
	}
	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	select {
	case <-done:
		s.hardStopNow()
		s.log.Info("kafka listener stopped", "drained_connections", len(conns))
		return s.stopProducers()
	case <-ctx.Done():
		s.hardStopNow()
		s.mu.Lock()
		left := len(s.conns)
		for c := range s.conns {
			c.closeWith("shutdown deadline passed")
		}
		s.mu.Unlock()
		<-done
		s.log.Warn("kafka listener stopped with connections cut", "cut_connections", left)
		return errors.Join(ctx.Err(), s.stopProducers())
	}
}

// stopProducers writes the idempotence anchors that moved and closes their
// store, once no handler can admit batches any more.
func (s *Server) stopProducers() error {
	if s.txns != nil {
		s.txns.Close()
	}
	if s.Producers == nil {
		return nil
	}
	return s.Producers.StopPersisting()
}

// ProducerCount reports the idempotent producers with state (0 when
// idempotence is disabled).
func (s *Server) ProducerCount() int {
	if s.Producers == nil {
		return 0
	}
	return s.Producers.Len()
}
