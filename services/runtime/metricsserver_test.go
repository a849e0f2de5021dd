package runtime

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// scrape GETs the metrics page at addr.
func scrape(t *testing.T, addr string) (string, error) {
	t.Helper()
	resp, err := http.Get("http://" + addr + MetricsPath)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", errors.New(resp.Status)
	}
	return string(b), nil
}

// TestMetricsEndpointServesAppMetrics runs a service with -metrics-addr and
// checks that one scrape holds a meter's counter, otelgrpc's server metrics
// from a real RPC and the Go runtime metrics; after shutdown the port is
// closed.
func TestMetricsEndpointServesAppMetrics(t *testing.T) {
	addr, maddr := freeAddr(t), freeAddr(t)
	started := make(chan struct{})
	var once sync.Once
	svc := testService(func(ctx context.Context, app *App, cfg *testSvcConfig) error {
		if app.Metrics == nil {
			return errors.New("no metrics server although -metrics-addr is set")
		}
		c, err := app.Telemetry.Meter("test").Int64Counter("ferry.test.widgets")
		if err != nil {
			return err
		}
		app.Add(ComponentFuncs{ComponentName: "widgets", StartFunc: func(ctx context.Context, _ Host) error {
			c.Add(ctx, 3)
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
		done <- RunService(ctx, svc, []string{"-metrics-addr", maddr},
			envMap(map[string]string{EnvListen: addr}), stderr)
	}()
	<-started
	waitServing(t, addr, "testsvc", Plaintext()) // a health RPC: otelgrpc records it

	page, err := scrape(t, maddr)
	if err != nil {
		t.Fatalf("scrape: %v\nstderr:\n%s", err, stderr)
	}
	for _, want := range []string{
		"\nferry_test_widgets_total{",
		"rpc_server_call_duration_seconds_count{",
		`rpc_method="grpc.health.v1.Health/Check"`,
		"\ngo_goroutines ",
		"\nprocess_cpu_seconds_total ",
		`service_name="testsvc"`, // target_info carries the resource
	} {
		if !strings.Contains(page, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "ferry_test_widgets_total{") && !strings.HasSuffix(line, " 3") {
			t.Errorf("counter line %q, want value 3", line)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}

	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	if _, err := scrape(t, maddr); err == nil {
		t.Error("metrics endpoint still answers after shutdown")
	}
}

func TestMetricsAddrErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	grpcAddr := freeAddr(t)
	tests := []struct {
		name     string
		env      map[string]string
		wantLine string
	}{
		{name: "malformed", env: map[string]string{EnvMetricsAddr: "nonsense"},
			wantLine: `testsvc: invalid setting FERRY_METRICS_ADDR (-metrics-addr): "nonsense": missing port`},
		{name: "in use", env: map[string]string{EnvListen: grpcAddr, EnvMetricsAddr: busy.Addr().String()},
			wantLine: "testsvc: cannot listen on FERRY_METRICS_ADDR " + busy.Addr().String() + ": address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			setupRan := false
			svc := testService(func(context.Context, *App, *testSvcConfig) error { setupRan = true; return nil })
			code := RunService(context.Background(), svc, nil, envMap(tt.env), &stderr)
			if code != ExitConfig {
				t.Errorf("exit code = %d, want %d", code, ExitConfig)
			}
			if got := strings.TrimRight(stderr.String(), "\n"); got != tt.wantLine {
				t.Errorf("stderr = %q\nwant     %q", got, tt.wantLine)
			}
			if setupRan {
				t.Error("setup ran although the metrics address is unusable")
			}
		})
	}
	// The gRPC port bound before the metrics port failed is released.
	ln, err := net.Listen("tcp", grpcAddr)
	if err != nil {
		t.Fatalf("gRPC port still held after the metrics port failed: %v", err)
	}
	ln.Close()
}

// TestMetricsOffByDefault: without -metrics-addr there is no server and no
// Prometheus reader.
func TestMetricsOffByDefault(t *testing.T) {
	app, _ := newTestApp(t, "127.0.0.1:0")
	if app.Metrics != nil || app.Telemetry.MetricsHandler() != nil {
		t.Fatal("metrics server built without -metrics-addr")
	}
}

// TestMetricsServerStartsFirstStopsLast: the endpoint answers while the
// other components are starting and until they have stopped.
func TestMetricsServerStartsFirstStopsLast(t *testing.T) {
	cfg := plainConfig("ordersvc", "127.0.0.1:0")
	cfg.Telemetry.MetricsAddr = "127.0.0.1:0"
	app, err := NewApp(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var atStart, atStop error
	app.Add(ComponentFuncs{ComponentName: "probe",
		StartFunc: func(context.Context, Host) error {
			_, atStart = scrape(t, app.Metrics.Addr().String())
			return nil
		},
		ShutdownFunc: func(context.Context) error {
			_, atStop = scrape(t, app.Metrics.Addr().String())
			return nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for app.Server.Addr() == nil {
		if time.Now().After(deadline) {
			t.Fatal("server never bound")
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitServing(t, app.Server.Addr().String(), "ordersvc", Plaintext())
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if atStart != nil || atStop != nil {
		t.Fatalf("scrape during start: %v, during shutdown: %v", atStart, atStop)
	}
}
