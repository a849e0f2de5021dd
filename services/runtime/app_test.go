package runtime

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestApp(t *testing.T, listen string) (*App, *syncBuffer) {
	t.Helper()
	cfg := plainConfig("testsvc", listen)
	cfg.ShutdownTimeout = 5 * time.Second
	logs := &syncBuffer{}
	app, err := NewApp(context.Background(), cfg, logs)
	if err != nil {
		t.Fatal(err)
	}
	return app, logs
}

// runApp runs app.Run in a goroutine owned by the test and returns a stop
// function that cancels it and returns Run's result.
func runApp(t *testing.T, app *App) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	var once sync.Once
	var res error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case res = <-done:
			case <-time.After(30 * time.Second):
				res = errors.New("Run did not return after cancel")
			}
		})
		return res
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// waitAddr waits until the server has bound its port.
func waitAddr(t *testing.T, s *Server) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if a := s.Addr(); a != nil {
			return a.String()
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("server never bound its address")
	return ""
}

func healthCheck(ctx context.Context, conn *grpc.ClientConn, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return 0, err
	}
	return resp.GetStatus(), nil
}

func TestServerHealthLifecycle(t *testing.T) {
	app, logs := newTestApp(t, "127.0.0.1:0")
	// A fake registered service shows per-service health follows the server.
	desc := &grpc.ServiceDesc{ServiceName: "ferry.test.v1.Probe", HandlerType: (*any)(nil)}
	app.Server.RegisterService(desc, struct{}{})
	stop := runApp(t, app)
	addr := waitAddr(t, app.Server)

	conn, err := Dial(addr, "testsvc", app.Telemetry, Plaintext())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Start flips health after Serve is launched; poll briefly.
	var st healthpb.HealthCheckResponse_ServingStatus
	for {
		st, err = healthCheck(ctx, conn, "")
		if err == nil && st == healthpb.HealthCheckResponse_SERVING {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("health never SERVING: status %v err %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, err := healthCheck(ctx, conn, desc.ServiceName); err != nil || st != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("service health = %v, %v; want SERVING", st, err)
	}

	// Reflection is registered: list services.
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: ""},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !strings.Contains(strings.Join(names, ","), "grpc.health.v1.Health") {
		t.Errorf("reflection lists %v, want grpc.health.v1.Health among them", names)
	}
	_ = stream.CloseSend()

	if err := stop(); err != nil {
		t.Fatalf("Run returned %v after clean stop", err)
	}
	// After shutdown the port is released: a new listener can take it.
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("port %s still held after shutdown: %v", addr, err)
	}
	lis.Close()
	for _, want := range []string{"grpc serving", "shutting down", "stopped", "service=testsvc"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
}

func TestServerHealthNotServingOnDrain(t *testing.T) {
	app, _ := newTestApp(t, "127.0.0.1:0")
	runApp(t, app)
	addr := waitAddr(t, app.Server)
	conn, err := Dial(addr, "testsvc", app.Telemetry, Plaintext())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := watch.Recv()
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}
	// Shutdown in the background: the Watch stream is in flight, so
	// GracefulStop waits for it while health has already flipped.
	shut := make(chan error, 1)
	go func() { shut <- app.Server.Shutdown(ctx) }()
	r, err := watch.Recv()
	if err != nil {
		t.Fatalf("watch after drain: %v", err)
	}
	if r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("status during drain = %v, want NOT_SERVING", r.GetStatus())
	}
	cancel() // end the stream so GracefulStop can finish
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
}

func TestServerPortInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()

	app, _ := newTestApp(t, addr)
	err = app.Server.Listen()
	want := "cannot listen on FERRY_LISTEN " + addr + ": address already in use"
	if err == nil || err.Error() != want {
		t.Fatalf("Listen error = %v\nwant %s", err, want)
	}
	if ExitCode(err) != ExitConfig {
		t.Errorf("ExitCode = %d, want %d", ExitCode(err), ExitConfig)
	}
	// The helper other listeners (Kafka) use fails the same way.
	if _, err := ListenTCP(addr, "FERRY_KAFKA_LISTEN", "kafka-listen"); err == nil ||
		err.Error() != "cannot listen on FERRY_KAFKA_LISTEN "+addr+": address already in use" {
		t.Errorf("ListenTCP error = %v", err)
	}
	// Run reports the same error and does not hang.
	if err := app.Run(context.Background()); err == nil || err.Error() != want {
		t.Fatalf("Run error = %v, want %s", err, want)
	}
}

// recorder is a component that records lifecycle calls in a shared log.
type recorder struct {
	name     string
	log      *[]string
	mu       *sync.Mutex
	startErr error
	host     chan Host
}

func (r *recorder) Name() string { return r.name }
func (r *recorder) Start(_ context.Context, h Host) error {
	r.mu.Lock()
	*r.log = append(*r.log, "start "+r.name)
	r.mu.Unlock()
	if r.host != nil {
		r.host <- h
	}
	return r.startErr
}
func (r *recorder) Shutdown(context.Context) error {
	r.mu.Lock()
	*r.log = append(*r.log, "stop "+r.name)
	r.mu.Unlock()
	return nil
}

func TestAppOrderAndFailures(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		failStart string // component whose Start fails
		fatal     bool   // component "a" reports a fatal error after start
		wantLog   []string
		wantErr   error
	}{
		{name: "clean", wantLog: []string{"start a", "start b", "stop b", "stop a"}},
		{name: "start failure unwinds", failStart: "b", wantErr: boom,
			wantLog: []string{"start a", "start b", "stop a"}},
		{name: "fatal after start", fatal: true, wantErr: ErrComponentFailed,
			wantLog: []string{"start a", "start b", "stop b", "stop a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, _ := newTestApp(t, "127.0.0.1:0")
			var mu sync.Mutex
			var log []string
			hostCh := make(chan Host, 1)
			for _, n := range []string{"a", "b"} {
				r := &recorder{name: n, log: &log, mu: &mu}
				if n == tt.failStart {
					r.startErr = boom
				}
				if n == "a" {
					r.host = hostCh
				}
				app.Add(r)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- app.Run(ctx) }()
			host := <-hostCh
			if tt.failStart == "" {
				waitAddr(t, app.Server)
				if tt.fatal {
					host.ReportFatal(boom)
					host.ReportFatal(errors.New("second failure is only logged"))
				} else {
					cancel()
				}
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return")
			}
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Run = %v, want nil", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Run = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil && ExitCode(err) != ExitFailure {
				t.Errorf("ExitCode = %d, want %d", ExitCode(err), ExitFailure)
			}
			mu.Lock()
			defer mu.Unlock()
			if strings.Join(log, ",") != strings.Join(tt.wantLog, ",") {
				t.Fatalf("lifecycle = %v, want %v", log, tt.wantLog)
			}
		})
	}
}

// The interceptor runs on every RPC (each Produce fan-out), so its cost
// is tracked.
func BenchmarkUnaryInterceptor(b *testing.B) {
	tel, _ := newRecordingTelemetry(b)
	srv := NewServer("127.0.0.1:0", slog.New(slog.DiscardHandler), tel, Plaintext())
	ctx, span := tel.Tracer("bench").Start(context.Background(), "rpc")
	defer span.End()
	info := &grpc.UnaryServerInfo{FullMethod: "/ferry.append.v1.AppendService/Append"}
	handler := func(ctx context.Context, req any) (any, error) { return req, nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := srv.unaryInterceptor(ctx, 1, info, handler); err != nil {
			b.Fatal(err)
		}
	}
}

func TestUnaryInterceptorRecoversPanic(t *testing.T) {
	tel, _ := newRecordingTelemetry(t)
	logs := &syncBuffer{}
	srv := NewServer("127.0.0.1:0", slog.New(slog.NewTextHandler(logs, nil)), tel, Plaintext())
	info := &grpc.UnaryServerInfo{FullMethod: "/ferry.test.v1.Probe/Boom"}
	_, err := srv.unaryInterceptor(context.Background(), nil, info, func(context.Context, any) (any, error) {
		panic("kaboom")
	})
	if status.Code(err) != codes.Internal {
		t.Fatalf("err = %v, want codes.Internal", err)
	}
	if !strings.Contains(logs.String(), "kaboom") || !strings.Contains(logs.String(), "rpc=/ferry.test.v1.Probe/Boom") {
		t.Errorf("panic not logged with method:\n%s", logs)
	}
	// The handler sees a request-scoped logger carrying the method.
	_, _ = srv.unaryInterceptor(context.Background(), nil, info, func(ctx context.Context, _ any) (any, error) {
		LoggerFrom(ctx).Info("inside handler")
		return nil, nil
	})
	if !strings.Contains(logs.String(), `msg="inside handler" rpc=/ferry.test.v1.Probe/Boom`) {
		t.Errorf("handler logger lacks rpc attribute:\n%s", logs)
	}
}
