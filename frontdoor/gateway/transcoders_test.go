package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/dnsexpand"
	"github.com/ferrygw/ferry/frontdoor/internal/fakebackends"
	"github.com/ferrygw/ferry/frontdoor/internal/streampool"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/runtime"
	"github.com/ferrygw/ferry/services/testenv/devpki"
	"go.opentelemetry.io/otel/propagation"
)

// switchableResolver answers with whatever IPs were set last.
type switchableResolver struct {
	mu  sync.Mutex
	ips []string
}

func (r *switchableResolver) set(ips ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ips = ips
}

func (r *switchableResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ips) == 0 {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, s := range r.ips {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// TestTranscoderSetFollowsDNS scales a transcodesvc "service name" from one
// instance to two and back to one (the other one), as `docker compose up
// --scale` does: the pool gains and loses instances, jobs reach the new
// one, and the dropped instance's connection is closed. Everything runs
// over internal mTLS with certificates that name no address, as the
// instances are dialled by the IPs the name expanded to.
func TestTranscoderSetFollowsDNS(t *testing.T) {
	pki := t.TempDir()
	if err := devpki.Generate(pki, []string{"transcodesvc", "frontdoor"}); err != nil {
		t.Fatal(err)
	}
	security := func(name string) *runtime.TransportSecurity {
		sec, err := runtime.NewTransportSecurity(runtime.GRPCTLSConfig{CAFile: filepath.Join(pki, devpki.CAFile),
			CertFile: devpki.CertFile(pki, name), KeyFile: devpki.KeyFile(pki, name)}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return sec
	}
	serverSec := security("transcodesvc")
	// Two fake transcoders on one port at two loopback addresses.
	first := &fakebackends.Transcoder{}
	ln1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln1.Addr().(*net.TCPAddr).Port
	ln2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(port)))
	if err != nil {
		t.Skipf("127.0.0.2 not usable here: %v", err)
	}
	second := &fakebackends.Transcoder{}
	for _, s := range []struct {
		ln net.Listener
		tc *fakebackends.Transcoder
	}{{ln1, first}, {ln2, second}} {
		g := grpc.NewServer(grpc.Creds(serverSec.ServerCredentials()))
		transcodev1.RegisterTranscodeServiceServer(g, s.tc)
		go func() { _ = g.Serve(s.ln) }()
		t.Cleanup(g.Stop)
	}

	res := &switchableResolver{}
	res.set("127.0.0.1")
	tel, err := runtime.NewTelemetry(context.Background(), "frontdoor", runtime.TelemetryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	set := newTranscoderSet(nil, 0, tel, security("frontdoor"), slog.New(slog.DiscardHandler))
	set.exp = dnsexpand.New([]string{"transcodesvc:" + strconv.Itoa(port)}, res)
	ctx := context.Background()
	bs, err := set.backends(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := backends.NewTranscoder(streampool.Config{Name: "transcode", MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond},
		bs, propagation.TraceContext{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	set.pool = tc
	if err := set.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := tc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = tc.Shutdown(ctx)
		_ = set.Shutdown(ctx)
	})
	addr1, addr2 := ln1.Addr().String(), ln2.Addr().String()
	transcode := func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		m := &catalogv1.TopicMapping{MappingId: "m"}
		if _, err := tc.Transcode(cctx, m, 0, nil); err != nil {
			t.Error(err)
		}
	}
	instances := func() map[string]bool {
		out := map[string]bool{}
		for a := range tc.Outstanding() {
			if a != "" {
				out[a] = true
			}
		}
		return out
	}

	transcode()
	if got := instances(); len(got) != 1 || !got[addr1] {
		t.Fatalf("instances %v, want only %s", got, addr1)
	}

	// Scaled out: both get jobs (concurrent ones, as the least busy
	// instance is picked).
	res.set("127.0.0.1", "127.0.0.2")
	set.refresh(ctx)
	if got := instances(); len(got) != 2 {
		t.Fatalf("instances %v after scaling out, want 2", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for second.Jobs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the added instance never got a job")
		}
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(transcode)
		}
		wg.Wait()
	}

	// Scaled in to the second one: the first's connection is closed and
	// every job goes to the second.
	res.set("127.0.0.2")
	set.refresh(ctx)
	if got := instances(); len(got) != 1 || !got[addr2] {
		t.Fatalf("instances %v after scaling in, want only %s", got, addr2)
	}
	set.mu.Lock()
	_, stillOpen := set.conns[addr1]
	set.mu.Unlock()
	if stillOpen {
		t.Fatalf("connection to the removed %s kept", addr1)
	}
	before := first.Jobs.Load()
	for range 20 {
		transcode()
	}
	if n := first.Jobs.Load() - before; n != 0 {
		t.Fatalf("the removed instance got %d more jobs", n)
	}
}
