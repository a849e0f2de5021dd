package jaeger_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ferrygw/ferry/e2e/jaeger"
)

// EnvRequire=1 (set by CI) turns a missing Jaeger binary from a skip into a failure.
const EnvRequire = "FERRY_TEST_REQUIRE_JAEGER"

// requireBinary returns the Jaeger binary, or skips the test when it is not installed (fails
// it when FERRY_TEST_REQUIRE_JAEGER=1, as in CI).
func requireBinary(t *testing.T) string {
	t.Helper()
	bin, err := jaeger.BinaryPath()
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s=1 but Jaeger is unavailable: %v", EnvRequire, err)
		}
		t.Skipf("skipping: %v (set %s=1 to make this a failure)", err, EnvRequire)
	}
	return bin
}

// startJaeger starts a Jaeger on free loopback ports for the test and stops it at cleanup,
// checking that no process of its group survives.
func startJaeger(t *testing.T) *jaeger.Jaeger {
	t.Helper()
	requireBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	j, err := jaeger.Start(ctx, jaeger.Options{Dir: t.TempDir(), MaxTraces: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := j.Stop(); err != nil {
			t.Error(err)
		}
		// The whole process group must be gone: signal 0 to the group reports ESRCH then.
		if err := syscall.Kill(-j.Pid(), 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("jaeger process group %d still exists after Stop (kill 0: %v)", j.Pid(), err)
		}
		if t.Failed() {
			if b, err := os.ReadFile(j.LogPath()); err == nil {
				t.Logf("jaeger.log:\n%s", b)
			}
		}
	})
	return j
}

// newProvider is one service's tracer provider exporting to Jaeger over OTLP/gRPC, as each of
// Ferry's services has its own.
func newProvider(t *testing.T, ctx context.Context, endpoint, service string) *sdktrace.TracerProvider {
	t.Helper()
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatalf("otlp exporter for %s: %v", service, err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName(service)))
	if err != nil {
		t.Fatalf("resource for %s: %v", service, err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	})
	return tp
}

// hop is an in-process gRPC service (the standard health service, so no generated code is
// needed). Its Check handler runs next(ctx): the handler context carries the server span that
// otelgrpc started from the caller's propagated trace context.
type hop struct {
	healthpb.UnimplementedHealthServer
	next func(ctx context.Context) error
}

func (h *hop) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if err := h.next(ctx); err != nil {
		return nil, err
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// serve runs a hop on a loopback listener, instrumented with tp, until the test ends.
func serve(t *testing.T, tp trace.TracerProvider, next func(ctx context.Context) error) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(propagation.TraceContext{}))))
	healthpb.RegisterHealthServer(srv, &hop{next: next})
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return lis.Addr().String()
}

// dial is a client connection instrumented with tp.
func dial(t *testing.T, tp trace.TracerProvider, addr string) healthpb.HealthClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(propagation.TraceContext{}))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return healthpb.NewHealthClient(cc)
}

// TestThreeServiceTrace exports one request's spans from three services (A -gRPC-> B -gRPC-> C),
// each with its own OTLP exporter as separate processes would, and checks that Jaeger assembled
// them into one trace with the right parent/child links.
func TestThreeServiceTrace(t *testing.T) {
	j := startJaeger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Unique service names: the assertions cannot be satisfied by another run's spans.
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	svcA, svcB, svcC := "e2e-a-"+suffix, "e2e-b-"+suffix, "e2e-c-"+suffix
	tpA := newProvider(t, ctx, j.OTLPEndpoint(), svcA)
	tpB := newProvider(t, ctx, j.OTLPEndpoint(), svcB)
	tpC := newProvider(t, ctx, j.OTLPEndpoint(), svcC)

	const records = 42
	addrC := serve(t, tpC, func(ctx context.Context) error {
		_, span := tpC.Tracer("e2e/c").Start(ctx, "c.append",
			trace.WithAttributes(attribute.Int("ferry.records", records), attribute.String("fluss.table", "db.t")))
		time.Sleep(5 * time.Millisecond) // real work has a duration; so must the span
		span.End()
		return nil
	})
	clientBC := dial(t, tpB, addrC)
	addrB := serve(t, tpB, func(ctx context.Context) error {
		_, err := clientBC.Check(ctx, &healthpb.HealthCheckRequest{Service: "c"})
		return err
	})
	clientAB := dial(t, tpA, addrB)

	ctxA, root := tpA.Tracer("e2e/a").Start(ctx, "a.produce", trace.WithSpanKind(trace.SpanKindServer))
	if _, err := clientAB.Check(ctxA, &healthpb.HealthCheckRequest{Service: "b"}); err != nil {
		t.Fatalf("A -> B call: %v", err)
	}
	root.End()
	wantTraceID := root.SpanContext().TraceID().String()

	// Flush every exporter: what is asserted below must have left the process.
	for name, tp := range map[string]*sdktrace.TracerProvider{svcA: tpA, svcB: tpB, svcC: tpC} {
		if err := tp.ForceFlush(ctx); err != nil {
			t.Fatalf("flush %s: %v", name, err)
		}
	}

	// Spans of C come from another exporter than A's root: wait until Jaeger holds all of them.
	tr, err := j.WaitForTrace(ctx, svcA, "a.produce", func(tr jaeger.Trace) bool {
		return len(tr.Find(svcC, "c.append")) == 1 && len(tr.Find(svcB, "")) == 2 && len(tr.Find(svcA, "")) == 2
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", tr.Tree())
	if tr.TraceID != wantTraceID {
		t.Fatalf("found trace %s, the request's trace is %s", tr.TraceID, wantTraceID)
	}
	if got, want := strings.Join(tr.Services(), ","), strings.Join([]string{svcA, svcB, svcC}, ","); got != want {
		t.Fatalf("services in trace = %s, want %s", got, want)
	}
	if len(tr.Spans) != 6 {
		t.Fatalf("trace has %d spans, want 6:\n%s", len(tr.Spans), tr.Tree())
	}

	const method = "grpc.health.v1.Health/Check"
	rootSpan := one(t, tr, svcA, "a.produce")
	aClient := one(t, tr, svcA, method)
	bServer := oneKind(t, tr, svcB, method, jaeger.SpanKindServer)
	bClient := oneKind(t, tr, svcB, method, jaeger.SpanKindClient)
	cServer := one(t, tr, svcC, method)
	cWork := one(t, tr, svcC, "c.append")

	chain := []struct {
		child, parent jaeger.Span
		kind          jaeger.SpanKind
	}{
		{aClient, rootSpan, jaeger.SpanKindClient},
		{bServer, aClient, jaeger.SpanKindServer},
		{bClient, bServer, jaeger.SpanKindClient},
		{cServer, bClient, jaeger.SpanKindServer},
		{cWork, cServer, jaeger.SpanKindInternal},
	}
	if rootSpan.ParentSpanID != "" || rootSpan.Kind != jaeger.SpanKindServer {
		t.Errorf("root = %v, want a parentless server span", rootSpan)
	}
	for _, c := range chain {
		if c.child.ParentSpanID != c.parent.SpanID {
			t.Errorf("%v: parent %s, want %v", c.child, c.child.ParentSpanID, c.parent)
		}
		if c.child.Kind != c.kind {
			t.Errorf("%v: kind %v, want %v", c.child, c.child.Kind, c.kind)
		}
		if c.child.TraceID != wantTraceID {
			t.Errorf("%v: trace %s, want %s", c.child, c.child.TraceID, wantTraceID)
		}
	}
	if !tr.IsAncestor(rootSpan.SpanID, cWork.SpanID) {
		t.Errorf("%v is not a descendant of the root %v", cWork, rootSpan)
	}
	if roots := tr.Roots(); len(roots) != 1 || roots[0].SpanID != rootSpan.SpanID {
		t.Errorf("roots = %v, want only %v", roots, rootSpan)
	}
	// Typed attributes survive the round trip: int as int64, strings, otelgrpc's rpc.* ones.
	if got := cWork.Attributes["ferry.records"]; got != int64(records) {
		t.Errorf("c.append ferry.records = %#v, want int64 %d", got, records)
	}
	if got := cWork.Attributes["fluss.table"]; got != "db.t" {
		t.Errorf("c.append fluss.table = %#v", got)
	}
	if got := cServer.Attributes["rpc.system"]; got != "grpc" && cServer.Attributes["rpc.system.name"] != "grpc" {
		t.Errorf("C's server span has no rpc.system=grpc attribute: %v", cServer.Attributes)
	}
	if cWork.Duration < 5*time.Millisecond || cWork.Start.Before(rootSpan.Start) || cWork.End().After(rootSpan.End()) {
		t.Errorf("c.append [%v, +%v] is not within the root [%v, +%v]", cWork.Start, cWork.Duration, rootSpan.Start, rootSpan.Duration)
	}

	// The other query paths agree with the search result.
	byID, err := j.Trace(ctx, wantTraceID)
	if err != nil {
		t.Fatal(err)
	}
	if len(byID.Spans) != len(tr.Spans) {
		t.Errorf("Trace(%s) has %d spans, search found %d", wantTraceID, len(byID.Spans), len(tr.Spans))
	}
	services, err := j.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{svcA, svcB, svcC} {
		if !contains(services, s) {
			t.Errorf("Services() = %v, missing %s", services, s)
		}
	}
	ops, err := j.Operations(ctx, svcC)
	if err != nil {
		t.Fatal(err)
	}
	if !containsOp(ops, "c.append") || !containsOp(ops, method) {
		t.Errorf("Operations(%s) = %v, want c.append and %s", svcC, ops, method)
	}
	recent, err := j.Traces(ctx, svcB, time.Hour, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recent) != 1 || recent[0].TraceID != wantTraceID {
		t.Errorf("Traces(%s) = %d traces, want exactly the request's", svcB, len(recent))
	}
	// minDuration filters on the matching span: the ~5ms c.append passes 1ms, not 10s.
	slow, err := j.FindTraces(ctx, jaeger.Query{Service: svcC, Operation: "c.append", MinDuration: time.Millisecond})
	if err != nil || len(slow) != 1 {
		t.Errorf("minDuration 1ms: %d traces, err %v; want 1", len(slow), err)
	}
	none, err := j.FindTraces(ctx, jaeger.Query{Service: svcC, Operation: "c.append", MinDuration: 10 * time.Second})
	if err != nil || len(none) != 0 {
		t.Errorf("minDuration 10s: %d traces, err %v; want 0", len(none), err)
	}
	if _, err := j.Trace(ctx, strings.Repeat("ab", 16)); !errors.Is(err, jaeger.ErrTraceNotFound) {
		t.Errorf("Trace(unknown id) error = %v, want ErrTraceNotFound", err)
	}
}

// TestStartFailsOnBusyPort checks that a port clash is reported up front, naming the port,
// instead of surfacing as a start-up timeout.
func TestStartFailsOnBusyPort(t *testing.T) {
	requireBinary(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	port := lis.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := jaeger.Start(ctx, jaeger.Options{Dir: t.TempDir(), OTLPPort: port})
	if err == nil {
		j.Stop()
		t.Fatal("Start succeeded on a busy OTLP port")
	}
	if !strings.Contains(err.Error(), "OTLP port") || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Errorf("error %q does not name the OTLP port %d", err, port)
	}
}

// TestStartReportsEarlyExit checks that a Jaeger that dies during start-up (here: a config it
// rejects, via a wrapper script) fails Start with its log, and leaves nothing running.
func TestStartReportsEarlyExit(t *testing.T) {
	bin := requireBinary(t)
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "jaeger-bad")
	// Appending a second --config merges an unknown component, which the collector rejects.
	script := fmt.Sprintf("#!/bin/sh\nexec %q \"$@\" --config 'yaml:receivers::nosuch_receiver: {}'\n", bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	j, err := jaeger.Start(ctx, jaeger.Options{Dir: filepath.Join(dir, "run"), Binary: wrapper})
	if err == nil {
		j.Stop()
		t.Fatal("Start succeeded with a broken configuration")
	}
	if !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "nosuch_receiver") {
		t.Errorf("error does not report the early exit with Jaeger's reason:\n%v", err)
	}
}

func one(t *testing.T, tr jaeger.Trace, service, op string) jaeger.Span {
	t.Helper()
	s := tr.Find(service, op)
	if len(s) != 1 {
		t.Fatalf("%d spans %s/%s, want 1:\n%s", len(s), service, op, tr.Tree())
	}
	return s[0]
}

func oneKind(t *testing.T, tr jaeger.Trace, service, op string, kind jaeger.SpanKind) jaeger.Span {
	t.Helper()
	var out []jaeger.Span
	for _, s := range tr.Find(service, op) {
		if s.Kind == kind {
			out = append(out, s)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d %s spans %s/%s, want 1:\n%s", len(out), kind, service, op, tr.Tree())
	}
	return out[0]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsOp(ops []jaeger.Operation, name string) bool {
	for _, o := range ops {
		if o.Name == name {
			return true
		}
	}
	return false
}

// envHelper makes the test binary act as a parent that starts Jaeger, prints its pid and then
// waits to be killed (see TestJaegerDiesWithParent).
const envHelper = "FERRY_JAEGER_TEST_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envHelper); dir != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		j, err := jaeger.Start(ctx, jaeger.Options{Dir: dir})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(j.Pid())
		<-ctx.Done() // killed by the test long before this
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// TestJaegerDiesWithParent kills a process that started Jaeger with SIGKILL, so no Stop runs,
// and checks that Jaeger goes with it (Pdeathsig): a test binary killed by `go test -timeout`
// must not leave a Jaeger holding ports behind.
func TestJaegerDiesWithParent(t *testing.T) {
	requireBinary(t)
	// As a child subreaper, this process inherits the orphaned Jaeger and can reap it itself:
	// the test then sees exactly how it died and leaves no zombie for init to collect.
	if err := setChildSubreaper(true); err != nil {
		t.Skipf("skipping: PR_SET_CHILD_SUBREAPER: %v", err)
	}
	defer setChildSubreaper(false)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"="+t.TempDir())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper did not report Jaeger's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper output %q: %v", line, err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("jaeger pid %d not running while its parent lives: %v", pid, err)
	}
	cmd.Process.Kill()
	cmd.Wait()

	deadline := time.Now().Add(10 * time.Second)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if err != nil {
			t.Fatalf("wait4(%d): %v", pid, err)
		}
		if got == pid {
			if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Errorf("jaeger ended with status %v, want killed by SIGKILL (Pdeathsig)", ws)
			}
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(-pid, syscall.SIGKILL) // do not leak it from this test either
			syscall.Wait4(pid, &ws, 0, nil)
			t.Fatalf("jaeger pid %d still alive 10s after its parent was killed", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// setChildSubreaper sets or clears PR_SET_CHILD_SUBREAPER on this process.
func setChildSubreaper(on bool) error {
	const prSetChildSubreaper = 36
	arg := uintptr(0)
	if on {
		arg = 1
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, arg, 0); errno != 0 {
		return errno
	}
	return nil
}

// TestUIAssetsServed checks that Options.UIAssets reaches Jaeger's jaeger_query ui.assets_path:
// the directory's index.html is what the UI routes serve.
func TestUIAssetsServed(t *testing.T) {
	requireBinary(t)
	assets := t.TempDir()
	const marker = "ferry-ui-assets-marker"
	page := `<html><head><base href="/" data-inject-target="BASE_URL"/></head><body>` + marker + `</body></html>`
	if err := os.WriteFile(filepath.Join(assets, "index.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	j, err := jaeger.Start(ctx, jaeger.Options{Dir: t.TempDir(), UIAssets: assets})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Stop()
	for _, path := range []string{"/", "/search"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, j.QueryURL()+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), marker) {
			t.Errorf("GET %s: HTTP %d, body %.200q; want the assets' index.html", path, resp.StatusCode, body)
		}
	}
}
