package runtime

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// A comma-separated target spreads calls over every replica, which is how
// frontdoor reaches several transcodesvc instances.
func TestDialListRoundRobin(t *testing.T) {
	tel, _ := newRecordingTelemetry(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var hits [2]atomic.Int64
	var addrs []string
	for i := range hits {
		count := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			hits[i].Add(1)
			return h(ctx, req)
		}
		srv := NewServer("127.0.0.1:0", logger, tel, Plaintext(), grpc.ChainUnaryInterceptor(count))
		if err := srv.Start(context.Background(), hostFunc(func(err error) { t.Errorf("server %d: %v", i, err) })); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
		addrs = append(addrs, srv.Addr().String())
	}

	conn, err := Dial(strings.Join(addrs, ", "), "testsvc", tel, Plaintext())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// round_robin only picks READY subchannels, so the second replica may
	// miss the first calls; keep calling until both have served one.
	for hits[0].Load() == 0 || hits[1].Load() == 0 {
		if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("after %d/%d hits: %v", hits[0].Load(), hits[1].Load(), err)
		}
	}
}

func TestDialRejectsBadTargets(t *testing.T) {
	tel, _ := newRecordingTelemetry(t)
	for _, target := range []string{"", " , ", "nohost", "a:1,b", "a:99999"} {
		if conn, err := Dial(target, "testsvc", tel, Plaintext()); err == nil {
			conn.Close()
			t.Errorf("Dial(%q) succeeded, want error", target)
		}
	}
	// URI targets go to gRPC's resolvers untouched.
	conn, err := Dial("dns:///localhost:7101", "testsvc", tel, Plaintext())
	if err != nil {
		t.Fatalf("Dial(dns URI): %v", err)
	}
	conn.Close()
}
