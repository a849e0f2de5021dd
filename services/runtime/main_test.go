package runtime

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

type testSvcConfig struct {
	Peer  string
	Fluss *FlussConfig
}

func (c *testSvcConfig) Validate() error {
	if c.Peer == "forbidden:1" {
		return &SettingError{Env: "TEST_PEER", Flag: "peer", Value: c.Peer, Err: errors.New("forbidden")}
	}
	return nil
}

func testService(setup func(ctx context.Context, app *App, cfg *testSvcConfig) error) Service[*testSvcConfig] {
	return Service[*testSvcConfig]{
		Name:          "testsvc",
		DefaultListen: "127.0.0.1:0",
		Declare: func(s *Settings) *testSvcConfig {
			c := &testSvcConfig{}
			s.StringVar(&c.Peer, Spec[string]{Flag: "peer", Env: "TEST_PEER", Default: "127.0.0.1:1", Validate: DialAddr})
			return c
		},
		Setup: setup,
	}
}

func TestRunServiceErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		setupErr error
		wantCode int
		wantLine string
	}{
		{name: "bad common setting", env: map[string]string{EnvListen: "nonsense"}, wantCode: ExitConfig,
			wantLine: `testsvc: invalid setting FERRY_LISTEN (-listen): "nonsense": missing port`},
		{name: "bad own setting", args: []string{"-peer", "x"}, wantCode: ExitConfig,
			wantLine: `testsvc: invalid setting TEST_PEER (-peer): "x": missing port`},
		{name: "own Validate", env: map[string]string{"TEST_PEER": "forbidden:1"}, wantCode: ExitConfig,
			wantLine: `testsvc: invalid setting TEST_PEER (-peer): "forbidden:1": forbidden`},
		{name: "setup setting error", setupErr: &SettingError{Env: "X", Flag: "x", Value: "v", Action: "cannot reach", Err: boom},
			wantCode: ExitConfig, wantLine: "testsvc: cannot reach X v: boom"},
		{name: "setup failure", setupErr: boom, wantCode: ExitFailure, wantLine: "testsvc: boom"},
		{name: "multi-line error stays one line", setupErr: errors.Join(boom, errors.New("bang")),
			wantCode: ExitFailure, wantLine: "testsvc: boom; bang"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			svc := testService(func(context.Context, *App, *testSvcConfig) error { return tt.setupErr })
			code := RunService(context.Background(), svc, tt.args, envMap(tt.env), &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d", code, tt.wantCode)
			}
			if got := strings.TrimRight(stderr.String(), "\n"); got != tt.wantLine {
				t.Errorf("stderr = %q\nwant     %q", got, tt.wantLine)
			}
		})
	}
}

func TestRunServiceHelp(t *testing.T) {
	var stderr bytes.Buffer
	code := RunService(context.Background(), testService(nil), []string{"-help"}, envMap(nil), &stderr)
	if code != ExitOK || !strings.Contains(stderr.String(), "-peer / TEST_PEER") {
		t.Fatalf("code %d, output:\n%s", code, stderr.String())
	}
}

func TestRunServiceServesAndStops(t *testing.T) {
	addr := freeAddr(t)
	started := make(chan struct{})
	var once sync.Once
	svc := testService(func(ctx context.Context, app *App, cfg *testSvcConfig) error {
		if LoggerFrom(ctx) != app.Logger {
			return errors.New("setup context does not carry the app logger")
		}
		app.Add(ComponentFuncs{ComponentName: "probe", StartFunc: func(context.Context, Host) error {
			once.Do(func() { close(started) })
			return nil
		}})
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- RunService(ctx, svc, nil, envMap(map[string]string{EnvListen: addr, EnvLogFormat: "json"}), stderr)
	}()
	<-started
	waitServing(t, addr, "testsvc", Plaintext())
	probeEnv := envMap(map[string]string{EnvListen: addr})
	var probeOut bytes.Buffer
	if code := RunService(context.Background(), svc, []string{"-health-probe"}, probeEnv, &probeOut); code != ExitOK {
		t.Errorf("-health-probe against a serving instance: exit %d, %s", code, probeOut.String())
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	probeOut.Reset()
	if code := RunService(context.Background(), svc, []string{"-health-probe"}, probeEnv, &probeOut); code != ExitFailure {
		t.Errorf("-health-probe after shutdown: exit %d, want %d (%s)", code, ExitFailure, probeOut.String())
	}
	if !strings.HasPrefix(probeOut.String(), "testsvc: health check "+addr) {
		t.Errorf("probe failure line = %q", probeOut.String())
	}
	if !strings.Contains(stderr.String(), `"msg":"stopped"`) {
		t.Errorf("json logs lack the stopped record:\n%s", stderr)
	}
}

// waitServing polls grpc health on addr, the service named peer, until SERVING.
func waitServing(t *testing.T, addr, peer string, sec *TransportSecurity) {
	t.Helper()
	tel, _ := newRecordingTelemetry(t)
	conn, err := Dial(addr, peer, tel, sec)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := healthpb.NewHealthClient(conn)
	for {
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never reported SERVING: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// --- tests of the real service binaries ---

var (
	buildMu   sync.Mutex
	buildDir  string
	buildBins = map[string]string{}
)

// buildService compiles a service module's main into a temp dir, once per
// test binary run.
func buildService(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a service binary; skipped with -short")
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := buildBins[name]; ok {
		return bin
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "ferry-runtime-bin-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = dir
	}
	bin := filepath.Join(buildDir, name)
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "..", name)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	buildBins[name] = bin
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// hermeticEnv is the test's environment without Ferry or OTel settings, plus extra.
// Internal gRPC is plaintext unless extra sets the mTLS files.
func hermeticEnv(extra ...string) []string {
	tls := false
	for _, kv := range extra {
		tls = tls || strings.HasPrefix(kv, EnvGRPCTLSCA+"=")
	}
	if !tls {
		extra = append(extra, EnvGRPCPlaintext+"=true")
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "FERRY_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

func runBinary(t *testing.T, bin string, env []string, args ...string) (stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return errBuf.String(), 0
	case errors.As(err, &exitErr):
		return errBuf.String(), exitErr.ExitCode()
	default:
		t.Fatalf("run %s: %v", bin, err)
		return "", -1
	}
}

func TestCatalogsvcBinaryConfigErrors(t *testing.T) {
	bin := buildService(t, "catalogsvc")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyAddr := busy.Addr().String()
	downAddr := freeAddr(t)

	tests := []struct {
		name     string
		env      []string
		args     []string
		wantLine string
	}{
		{name: "listen nonsense", env: []string{"FERRY_LISTEN=nonsense", "FERRY_FLUSS_BOOTSTRAP=127.0.0.1:9123"},
			wantLine: `catalogsvc: invalid setting FERRY_LISTEN (-listen): "nonsense": missing port`},
		{name: "fluss missing", env: []string{"FERRY_LISTEN=127.0.0.1:0"},
			wantLine: `catalogsvc: invalid setting FERRY_FLUSS_BOOTSTRAP (-fluss-bootstrap): "": required, want host:port[,host:port...]`},
		{name: "bad flag value", env: []string{"FERRY_FLUSS_BOOTSTRAP=127.0.0.1:9123"},
			args:     []string{"-log-level", "loud"},
			wantLine: `catalogsvc: invalid setting FERRY_LOG_LEVEL (-log-level): "loud": must be one of debug|info|warn|error`},
		{name: "port in use", env: []string{"FERRY_LISTEN=" + busyAddr, "FERRY_FLUSS_BOOTSTRAP=" + downAddr},
			wantLine: "catalogsvc: cannot listen on FERRY_LISTEN " + busyAddr + ": address already in use"},
		{name: "fluss unreachable", env: []string{"FERRY_LISTEN=127.0.0.1:0", "FERRY_FLUSS_BOOTSTRAP=" + downAddr, "FERRY_FLUSS_CONNECT_TIMEOUT=1s"},
			wantLine: "catalogsvc: cannot reach FERRY_FLUSS_BOOTSTRAP " + downAddr + ": no coordinator answered within 1s: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stderr, code := runBinary(t, bin, hermeticEnv(tt.env...), tt.args...)
			if code != ExitConfig {
				t.Errorf("exit code = %d, want %d", code, ExitConfig)
			}
			if stderr != tt.wantLine+"\n" {
				t.Errorf("stderr = %q\nwant     %q (exactly one line)", stderr, tt.wantLine+"\n")
			}
		})
	}
}

// TestTranscodesvcBinaryLifecycle runs a real service process: it must
// report SERVING over gRPC health and exit 0 on SIGTERM.
func TestTranscodesvcBinaryLifecycle(t *testing.T) {
	bin := buildService(t, "transcodesvc")
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = hermeticEnv("FERRY_LISTEN="+addr, "FERRY_LOG_LEVEL=debug")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitServing(t, addr, "testsvc", Plaintext())
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("transcodesvc after SIGTERM: %v\n%s", err, stderr)
	}
	for _, want := range []string{"service=transcodesvc", "grpc serving", "shutting down", "stopped"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, stderr)
		}
	}
}

func TestProbeTarget(t *testing.T) {
	tests := []struct{ listen, want string }{
		{"127.0.0.1:7101", "127.0.0.1:7101"},
		{":7101", "127.0.0.1:7101"},
		{"0.0.0.0:7101", "127.0.0.1:7101"},
		{"[::]:7101", "[::1]:7101"},
		{"svc.internal:7101", "svc.internal:7101"},
		{"127.0.0.1:0", ""},
	}
	for _, tt := range tests {
		got, err := probeTarget(tt.listen)
		if tt.want == "" {
			if err == nil {
				t.Errorf("probeTarget(%q) = %q, want error", tt.listen, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("probeTarget(%q) = %q, %v; want %q", tt.listen, got, err, tt.want)
		}
	}
}
