package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

// MaxMessageSize bounds gRPC messages in both directions. Produce requests
// carry whole Kafka record batches, which routinely exceed gRPC's 4 MiB
// default; 64 MiB stays well above Kafka's own request limits.
const MaxMessageSize = 64 << 20

// Transport sizes of every internal gRPC connection, client and server
// side. Jobs are batches of tens to hundreds of KiB on a few long-lived
// streams: with gRPC's defaults (64 KiB windows, 32 KiB socket buffers)
// a batch waits for a window update mid-message and takes several reads
// and writes. Fixed windows also turn off gRPC's BDP probing, which only
// ever grows them.
const (
	streamWindow    = 4 << 20
	connWindow      = 16 << 20
	transportBuffer = 256 << 10
)

// Keepalive policy shared by servers and clients: clients ping idle
// connections every clientKeepaliveTime so a dead peer is noticed within
// a minute; the server must permit at least that rate or it would close the
// connection with ENHANCE_YOUR_CALM.
const (
	clientKeepaliveTime    = 30 * time.Second
	clientKeepaliveTimeout = 10 * time.Second
	serverMinPingInterval  = 10 * time.Second
)

// Server is the service's gRPC server as a Component: it registers health
// and reflection, instruments every RPC with otelgrpc, recovers panics, and
// puts a request-scoped logger into each handler's context (see LoggerFrom).
// It implements grpc.ServiceRegistrar, so generated RegisterXxxServer
// functions take it directly.
type Server struct {
	listen string
	logger *slog.Logger
	grpc   *grpc.Server
	health *health.Server

	mu       sync.Mutex
	lis      net.Listener
	services []string
	started  bool
	served   chan struct{} // closed when Serve returns
}

// NewServer builds a server for cfg.Listen protected by sec (mutual TLS or
// explicit plaintext); nothing is bound until Listen or Start. extra
// options are appended after the defaults.
func NewServer(listen string, logger *slog.Logger, tel *Telemetry, sec *TransportSecurity, extra ...grpc.ServerOption) *Server {
	s := &Server{listen: listen, logger: logger, health: health.NewServer(), served: make(chan struct{})}
	opts := []grpc.ServerOption{
		grpc.Creds(sec.ServerCredentials()),
		grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(tel.TracerProvider),
			otelgrpc.WithMeterProvider(tel.MeterProvider),
			otelgrpc.WithPropagators(tel.Propagator),
		)),
		grpc.ChainUnaryInterceptor(s.unaryInterceptor),
		grpc.ChainStreamInterceptor(s.streamInterceptor),
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.MaxSendMsgSize(MaxMessageSize),
		grpc.ForceServerCodecV2(codec{}),
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
		grpc.ReadBufferSize(transportBuffer),
		grpc.WriteBufferSize(transportBuffer),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime: serverMinPingInterval, PermitWithoutStream: true,
		}),
	}
	s.grpc = grpc.NewServer(append(opts, extra...)...)
	// Not serving until Start: a health probe during startup must not pass.
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	return s
}

// RegisterService implements grpc.ServiceRegistrar. It must be called
// before Start; the service's health status follows the server's.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		panic("runtime: RegisterService after Start")
	}
	s.grpc.RegisterService(desc, impl)
	s.services = append(s.services, desc.ServiceName)
	s.health.SetServingStatus(desc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
}

// GRPC exposes the underlying server for the rare registration that needs it.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Health exposes the health server so a service can report NOT_SERVING
// while a dependency is down and SERVING again when it recovers.
func (s *Server) Health() *health.Server { return s.health }

// Name implements Component.
func (s *Server) Name() string { return "grpc-server" }

// Listen binds the listen address now, so "address already in use" is
// reported before slower startup work. Start calls it if needed.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lis != nil {
		return nil
	}
	lis, err := ListenTCP(s.listen, EnvListen, FlagListen)
	if err != nil {
		return err
	}
	s.lis = lis
	return nil
}

// ListenTCP binds addr for the setting named by env and flag. Failure is a
// *SettingError reading "cannot listen on ENV addr: address already in use",
// so every listener of a service (gRPC, Kafka) fails the same way.
func ListenTCP(addr, env, flag string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &SettingError{Env: env, Flag: flag, Value: addr, Action: "cannot listen on", Err: listenReason(err)}
	}
	return lis, nil
}

// listenReason reduces net's "listen tcp 1.2.3.4:5: bind: address already in
// use" to the errno text; the caller already names the address.
func listenReason(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	var sys *os.SyscallError
	if errors.As(err, &sys) {
		return sys.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// Addr returns the bound address (useful with port 0), or nil before Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lis == nil {
		return nil
	}
	return s.lis.Addr()
}

// Start implements Component: it binds (if Listen was not called), serves in
// a goroutine owned by the server, and flips health to SERVING.
func (s *Server) Start(_ context.Context, host Host) error {
	if err := s.Listen(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("grpc server started twice")
	}
	s.started = true
	lis, services := s.lis, append([]string{}, s.services...)
	s.mu.Unlock()

	go func() {
		defer close(s.served)
		// Serve returns nil after Stop/GracefulStop; anything else is fatal.
		if err := s.grpc.Serve(lis); err != nil {
			host.ReportFatal(fmt.Errorf("grpc serve on %s: %w", lis.Addr(), err))
		}
	}()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	for _, name := range services {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	s.logger.Info("grpc serving", "addr", lis.Addr().String(), "services", services)
	return nil
}

// Shutdown implements Component: health goes NOT_SERVING first so load
// balancers stop sending work, then in-flight RPCs may finish until ctx
// expires, after which remaining connections are cut.
func (s *Server) Shutdown(ctx context.Context) error {
	s.health.Shutdown()
	s.mu.Lock()
	started, lis := s.started, s.lis
	s.mu.Unlock()
	if !started {
		// Bound by Listen but never served: just release the port.
		if lis != nil {
			return lis.Close()
		}
		return nil
	}
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.logger.Warn("grpc graceful stop timed out; closing remaining connections", "err", ctx.Err())
		s.grpc.Stop()
		<-done
	}
	<-s.served
	return nil
}

// rpcLogger returns the logger for one RPC, tagged with the method and the
// trace id (when sampled) so logs and traces can be joined.
func (s *Server) rpcLogger(ctx context.Context, method string) *slog.Logger {
	l := s.logger.With("rpc", method)
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		l = l.With("trace_id", sc.TraceID().String())
	}
	return l
}

func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	l := s.rpcLogger(ctx, info.FullMethod)
	defer recoverRPC(l, &err)
	resp, err = handler(WithLogger(ctx, l), req)
	logRPCError(l, err)
	return resp, err
}

func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	l := s.rpcLogger(ss.Context(), info.FullMethod)
	defer recoverRPC(l, &err)
	err = handler(srv, &loggedStream{ServerStream: ss, ctx: WithLogger(ss.Context(), l)})
	logRPCError(l, err)
	return err
}

// recoverRPC turns a handler panic into codes.Internal: one bad request must
// not take down a process that serves many Kafka clients.
func recoverRPC(l *slog.Logger, err *error) {
	if r := recover(); r != nil {
		l.Error("rpc handler panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = status.Error(codes.Internal, "internal error")
	}
}

// logRPCError logs server-side faults; client-caused statuses are the
// caller's business and would only add noise at warn level.
func logRPCError(l *slog.Logger, err error) {
	if err == nil {
		return
	}
	switch status.Code(err) {
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unavailable:
		l.Warn("rpc failed", "code", status.Code(err).String(), "err", err)
	default:
		l.Debug("rpc returned error", "code", status.Code(err).String(), "err", err)
	}
}

type loggedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *loggedStream) Context() context.Context { return s.ctx }
