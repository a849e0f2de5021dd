package suite

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/ferrygw/ferry/e2e/stack"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/testenv/devpki"
)

// TestInternalGRPCRefusesCallersWithoutServiceCertificate calls the stack's appendsvc,
// catalogsvc and transcodesvc directly, as a process on the same network that skipped
// frontdoor would: without TLS, with TLS but no certificate, and with a certificate from
// another CA, every call is refused before it reaches the service (Unavailable: the TLS
// handshake fails) and the refusal is in the service's log. With the stack's own certificate
// the same calls are served.
func TestInternalGRPCRefusesCallersWithoutServiceCertificate(t *testing.T) {
	e, _ := need(t)
	if e.stack.Config().GRPCPlaintext {
		t.Skip("the suite's stack runs plaintext")
	}
	stackCA, err := os.ReadFile(filepath.Join(e.stack.PKIDir(), devpki.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(stackCA)
	otherDir := t.TempDir()
	if err := devpki.Generate(otherDir, []string{stack.ClientCertName}); err != nil {
		t.Fatal(err)
	}
	otherPair, err := tls.LoadX509KeyPair(devpki.CertFile(otherDir, stack.ClientCertName), devpki.KeyFile(otherDir, stack.ClientCertName))
	if err != nil {
		t.Fatal(err)
	}

	// One real RPC per service; the request need not be meaningful, it must not get through.
	calls := map[string]func(ctx context.Context, cc *grpc.ClientConn) error{
		stack.Append: func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := appendv1.NewAppendServiceClient(cc).GetLatestOffset(ctx, &appendv1.GetLatestOffsetRequest{})
			return err
		},
		stack.Catalog: func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := catalogv1.NewCatalogServiceClient(cc).ListTopics(ctx, &catalogv1.ListTopicsRequest{})
			return err
		},
		stack.Transcode: func(ctx context.Context, cc *grpc.ClientConn) error {
			st, err := transcodev1.NewTranscodeServiceClient(cc).Transcode(ctx)
			if err != nil {
				return err
			}
			_, err = st.Recv() // the stream only fails once the connection does
			return err
		},
	}
	for _, svc := range []string{stack.Append, stack.Catalog, stack.Transcode} {
		t.Run(svc, func(t *testing.T) {
			spec, ok := e.stack.Spec(svc)
			if !ok {
				t.Fatalf("no %s in the stack", svc)
			}
			refused := []struct {
				name  string
				creds credentials.TransportCredentials
			}{
				{"plaintext", insecure.NewCredentials()},
				{"TLS without certificate", credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: svc})},
				{"certificate from another CA", credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: svc, Certificates: []tls.Certificate{otherPair}})},
			}
			for _, r := range refused {
				err := callWith(t, spec.GRPCAddr, r.creds, calls[svc])
				if status.Code(err) != codes.Unavailable {
					t.Errorf("%s: %v, want the call refused (Unavailable)", r.name, err)
				}
			}
			if p := e.stack.Service(svc); p == nil || !strings.Contains(p.LogTail(200), "internal gRPC caller refused") {
				t.Errorf("%s's log does not record the refused callers", svc)
			}

			good, err := e.stack.Credentials(svc)
			if err != nil {
				t.Fatal(err)
			}
			err = callWith(t, spec.GRPCAddr, good, func(ctx context.Context, cc *grpc.ClientConn) error {
				resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
				if err == nil && resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
					t.Errorf("health %s", resp.GetStatus())
				}
				return err
			})
			if err != nil {
				t.Errorf("caller with the stack's certificate: %v", err)
			}
			if svc == stack.Catalog {
				if err := callWith(t, spec.GRPCAddr, good, calls[svc]); err != nil {
					t.Errorf("ListTopics with the stack's certificate: %v", err)
				}
			}
		})
	}
}

func callWith(t *testing.T, addr string, creds credentials.TransportCredentials, call func(context.Context, *grpc.ClientConn) error) error {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return call(ctx, cc)
}
