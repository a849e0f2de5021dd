package runtime

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ferrygw/ferry/services/testenv/devpki"
)

// testPKI is a CA in a temp dir with certificates for appendsvc (server)
// and frontdoor (caller), none of which names an address.
func testPKI(t testing.TB) (string, *devpki.CA) {
	t.Helper()
	dir := t.TempDir()
	ca, err := devpki.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteCA(dir); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"appendsvc", "frontdoor"} {
		issue(t, ca, dir, n)
	}
	return dir, ca
}

func issue(t testing.TB, ca *devpki.CA, dir, name string) {
	t.Helper()
	leaf, err := ca.Issue(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.Write(dir, name); err != nil {
		t.Fatal(err)
	}
}

func tlsFiles(dir, name string) GRPCTLSConfig {
	return GRPCTLSConfig{CAFile: filepath.Join(dir, devpki.CAFile), CertFile: devpki.CertFile(dir, name), KeyFile: devpki.KeyFile(dir, name)}
}

func mustSecurity(t testing.TB, cfg GRPCTLSConfig, logger *slog.Logger, mp *sdkmetric.MeterProvider) *TransportSecurity {
	t.Helper()
	var sec *TransportSecurity
	var err error
	if mp != nil {
		sec, err = NewTransportSecurity(cfg, logger, mp.Meter("test"))
	} else {
		sec, err = NewTransportSecurity(cfg, logger, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

// startMTLSServer serves health on loopback with sec and returns its address.
func startMTLSServer(t *testing.T, sec *TransportSecurity, logger *slog.Logger) string {
	t.Helper()
	tel, _ := newRecordingTelemetry(t)
	srv := NewServer("127.0.0.1:0", logger, tel, sec)
	if err := srv.Start(context.Background(), hostFunc(func(err error) { t.Errorf("server failed: %v", err) })); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv.Addr().String()
}

// healthWith makes one health call over creds (no retries: a refused
// handshake must fail the call, not wait).
func healthWith(t *testing.T, addr string, creds credentials.TransportCredentials) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return errors.New(resp.GetStatus().String())
	}
	return nil
}

func TestMutualTLSRefusesCallersWithoutAServiceCertificate(t *testing.T) {
	dir, ca := testPKI(t)
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	addr := startMTLSServer(t, mustSecurity(t, tlsFiles(dir, "appendsvc"), logger, mp), logger)

	frontdoor := mustSecurity(t, tlsFiles(dir, "frontdoor"), nil, nil)

	rogueDir, _ := testPKI(t) // same names, another CA
	roguePair, err := tls.LoadX509KeyPair(devpki.CertFile(rogueDir, "frontdoor"), devpki.KeyFile(rogueDir, "frontdoor"))
	if err != nil {
		t.Fatal(err)
	}

	expired, err := ca.IssueValid("frontdoor", time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	expiredPair, err := expired.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	// Trusts the server but presents no certificate, or an expired one.
	anonymous := credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "appendsvc"})
	rogue := credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "appendsvc", Certificates: []tls.Certificate{roguePair}})
	withExpired := credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "appendsvc", Certificates: []tls.Certificate{expiredPair}})

	refused := []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"plaintext", insecure.NewCredentials()},
		{"TLS without a client certificate", anonymous},
		{"certificate from another CA", rogue},
		{"expired certificate", withExpired},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if err := healthWith(t, addr, tt.creds); err == nil {
				t.Fatal("call succeeded, want it refused")
			}
		})
	}
	// The caller must also refuse a server that is not the service it
	// meant: appendsvc's certificate does not name catalogsvc.
	if err := healthWith(t, addr, frontdoor.ClientCredentials("catalogsvc")); err == nil || !strings.Contains(err.Error(), "catalogsvc") {
		t.Errorf("appendsvc accepted as catalogsvc: %v", err)
	}

	// A valid service certificate works, dialled by IP (the certificate
	// names no address: the service name is what is checked).
	tel, _ := newRecordingTelemetry(t)
	conn, err := Dial(addr, "appendsvc", tel, frontdoor)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("valid caller: %v %v", resp, err)
	}

	if got := strings.Count(logs.String(), "internal gRPC caller refused"); got < len(refused) {
		t.Errorf("%d refusals logged, want at least %d:\n%s", got, len(refused), logs.String())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if n := handshakeFailures(rm, "server"); n < int64(len(refused)) {
		t.Errorf("ferry.grpc.tls.handshake.failures{side=server} = %d, want >= %d", n, len(refused))
	}
}

func handshakeFailures(rm metricdata.ResourceMetrics, side string) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != "ferry.grpc.tls.handshake.failures" || !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				if v, _ := dp.Attributes.Value(attribute.Key("side")); v.AsString() == side {
					n += dp.Value
				}
			}
		}
	}
	return n
}

// servedSerial completes a TLS handshake with the server at addr and
// returns the serial of the certificate it presented.
func servedSerial(t *testing.T, addr string, client *tls.Config) (*big.Int, error) {
	t.Helper()
	client = client.Clone()
	client.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", addr, client)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber, nil
}

func TestMutualTLSReloadsRotatedFiles(t *testing.T) {
	dir, ca := testPKI(t)
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	addr := startMTLSServer(t, mustSecurity(t, tlsFiles(dir, "appendsvc"), logger, nil), logger)
	client, err := devpki.ClientTLS(dir, "frontdoor", "appendsvc")
	if err != nil {
		t.Fatal(err)
	}
	before, err := servedSerial(t, addr, client)
	if err != nil {
		t.Fatal(err)
	}

	// A renewed server certificate is served without a restart.
	issue(t, ca, dir, "appendsvc")
	after, err := servedSerial(t, addr, client)
	if err != nil {
		t.Fatal(err)
	}
	if after.Cmp(before) == 0 {
		t.Fatal("server still presents the certificate it started with")
	}

	// CA rotation: the CA file becomes a bundle of old and new CA, and a
	// caller with a certificate from the new CA is accepted.
	newCA, err := devpki.NewCA("next CA")
	if err != nil {
		t.Fatal(err)
	}
	bundle := append(append([]byte{}, ca.PEM...), newCA.PEM...)
	if err := os.WriteFile(filepath.Join(dir, devpki.CAFile), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	newDir := t.TempDir()
	if err := newCA.WriteCA(newDir); err != nil {
		t.Fatal(err)
	}
	issue(t, newCA, newDir, "frontdoor")
	newClient, err := devpki.ClientTLS(newDir, "frontdoor", "appendsvc")
	if err != nil {
		t.Fatal(err)
	}
	newClient.RootCAs.AddCert(ca.Cert) // the server's certificate is still from the old CA
	if err := healthWith(t, addr, credentials.NewTLS(newClient)); err != nil {
		t.Fatalf("caller with a certificate from the rotated-in CA: %v", err)
	}

	// A broken file (caught mid-rotation) keeps the previous certificate.
	if err := os.WriteFile(devpki.CertFile(dir, "appendsvc"), []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	kept, err := servedSerial(t, addr, client)
	if err != nil {
		t.Fatalf("handshake after a broken rotation: %v", err)
	}
	if kept.Cmp(after) != 0 {
		t.Error("server changed certificate although the new file is broken")
	}
	if !strings.Contains(logs.String(), "certificate reload failed; keeping the previous one") {
		t.Errorf("failed reload not logged:\n%s", logs.String())
	}
}

func TestNewTransportSecurityRefusesUnusableFiles(t *testing.T) {
	dir, _ := testPKI(t)
	otherDir, _ := testPKI(t)
	tests := []struct {
		name    string
		cfg     GRPCTLSConfig
		wantEnv string
		want    string
	}{
		{"missing CA", GRPCTLSConfig{CAFile: filepath.Join(dir, "nope.pem"), CertFile: devpki.CertFile(dir, "appendsvc"), KeyFile: devpki.KeyFile(dir, "appendsvc")},
			EnvGRPCTLSCA, "no such file"},
		{"CA file without certificate", GRPCTLSConfig{CAFile: devpki.KeyFile(dir, "appendsvc"), CertFile: devpki.CertFile(dir, "appendsvc"), KeyFile: devpki.KeyFile(dir, "appendsvc")},
			EnvGRPCTLSCA, "no PEM certificate"},
		{"key of another certificate", GRPCTLSConfig{CAFile: filepath.Join(dir, devpki.CAFile), CertFile: devpki.CertFile(dir, "appendsvc"), KeyFile: devpki.KeyFile(dir, "frontdoor")},
			EnvGRPCTLSCert, "private key does not match"},
		{"certificate from another CA", GRPCTLSConfig{CAFile: filepath.Join(dir, devpki.CAFile), CertFile: devpki.CertFile(otherDir, "appendsvc"), KeyFile: devpki.KeyFile(otherDir, "appendsvc")},
			EnvGRPCTLSCert, "unknown authority"},
		{"nothing chosen", GRPCTLSConfig{}, EnvGRPCTLSCA, EnvGRPCPlaintext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewTransportSecurity(tt.cfg, nil, nil)
			var se *SettingError
			if !errors.As(err, &se) || se.Env != tt.wantEnv || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a setting error for %s mentioning %q", err, tt.wantEnv, tt.want)
			}
		})
	}
}

// TestTranscodesvcBinaryMutualTLS runs the real transcodesvc with mTLS:
// its own -health-probe passes, a plaintext caller is refused.
func TestTranscodesvcBinaryMutualTLS(t *testing.T) {
	bin := buildService(t, "transcodesvc")
	dir := t.TempDir()
	if err := devpki.Generate(dir, []string{"transcodesvc", "frontdoor"}); err != nil {
		t.Fatal(err)
	}
	files := tlsFiles(dir, "transcodesvc")
	addr := freeAddr(t)
	env := hermeticEnv("FERRY_LISTEN="+addr, EnvGRPCTLSCA+"="+files.CAFile, EnvGRPCTLSCert+"="+files.CertFile, EnvGRPCTLSKey+"="+files.KeyFile)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = env
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitServing(t, addr, "transcodesvc", mustSecurity(t, tlsFiles(dir, "frontdoor"), nil, nil))
	if out, code := runBinary(t, bin, env, "-health-probe"); code != 0 {
		t.Errorf("-health-probe with the service's certificate: exit %d: %s", code, out)
	}
	if out, code := runBinary(t, bin, hermeticEnv("FERRY_LISTEN="+addr), "-health-probe"); code == 0 {
		t.Errorf("plaintext -health-probe against an mTLS server passed: %s", out)
	}
	if !strings.Contains(stderr.String(), "internal gRPC caller refused") {
		t.Errorf("refused plaintext probe not logged:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "internal gRPC uses mutual TLS") {
		t.Errorf("logs do not say mTLS is on:\n%s", stderr)
	}
}
