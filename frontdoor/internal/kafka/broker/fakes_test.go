package broker

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/produce"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/fakebackends"
	"github.com/ferrygw/ferry/frontdoor/internal/streampool"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// grpcServe runs srv on a loopback port until the test ends.
func grpcServe(t testing.TB, register func(*grpc.Server)) (string, *grpc.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String(), s
}

func grpcDial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

type harness struct {
	cat     *fakebackends.Catalog
	tcs     []*fakebackends.Transcoder
	tcSrvs  []*grpc.Server
	ap      *fakebackends.Appender
	srv     *kafka.Server
	addr    string
	catalog *backends.Catalog
	tc      *backends.Transcoder
	// What restartFrontdoor builds the next server from.
	cfg  kafka.Config
	deps Deps
}

type harnessOpts struct {
	cfg         func(*kafka.Config)
	produce     func(*produce.ProduceConfig)
	sasl        kafka.PlainAuthenticator
	scram       kafka.ScramAuthenticator
	token       kafka.TokenAuthenticator
	authz       kafka.Authorizer
	certName    func(*x509.Certificate) (string, error)
	transcoders int
	hold        chan struct{}
	tp          trace.TracerProvider
	mp          metric.MeterProvider
	jitter      time.Duration
	// noIdempotence leaves InitProducerId unserved.
	noIdempotence bool
	// stateDir persists idempotence anchors there.
	stateDir string
	// fetcher, when set, serves Fetch, ListOffsets and the groups as
	// fetchsvc would.
	fetcher fetchv1.FetchServiceServer
	// offsets, when set, serves the group APIs with it as fetchsvc's
	// offsets store.
	offsets *fakebackends.Offsets
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("FERRY_TEST_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	h := &harness{cat: fakebackends.NewCatalog(), ap: fakebackends.NewAppender()}
	log := testLogger(t)
	catAddr, _ := grpcServe(t, func(s *grpc.Server) { catalogv1.RegisterCatalogServiceServer(s, h.cat) })
	apAddr, _ := grpcServe(t, func(s *grpc.Server) { appendv1.RegisterAppendServiceServer(s, h.ap) })
	if o.transcoders == 0 {
		o.transcoders = 1
	}
	var tcBackends []streampool.Backend[transcodev1.TranscodeServiceClient]
	for i := 0; i < o.transcoders; i++ {
		ft := &fakebackends.Transcoder{Hold: o.hold, Jitter: o.jitter}
		addr, gs := grpcServe(t, func(s *grpc.Server) { transcodev1.RegisterTranscodeServiceServer(s, ft) })
		h.tcs = append(h.tcs, ft)
		h.tcSrvs = append(h.tcSrvs, gs)
		tcBackends = append(tcBackends, streampool.Backend[transcodev1.TranscodeServiceClient]{Addr: addr, Client: transcodev1.NewTranscodeServiceClient(grpcDial(t, addr))})
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	cat, err := backends.NewCatalog(backends.CatalogConfig{
		TTL: time.Minute, NegativeTTL: 0, CallTimeout: 5 * time.Second, Lease: 3 * time.Second,
		Self: &catalogv1.Broker{NodeId: 7, Host: "127.0.0.1", Port: int32(port)},
	}, catalogv1.NewCatalogServiceClient(grpcDial(t, catAddr)), log)
	if err != nil {
		t.Fatal(err)
	}
	h.catalog = cat
	poolCfg := streampool.Config{Name: "transcode", MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	prop := propagation.TraceContext{}
	tc, err := backends.NewTranscoder(poolCfg, tcBackends, prop, log)
	if err != nil {
		t.Fatal(err)
	}
	h.tc = tc
	poolCfg.Name = "append"
	ap, err := backends.NewAppender(poolCfg, []streampool.Backend[appendv1.AppendServiceClient]{{Addr: apAddr, Client: appendv1.NewAppendServiceClient(grpcDial(t, apAddr))}}, prop, log)
	if err != nil {
		t.Fatal(err)
	}
	fetchSrv := o.fetcher
	if o.offsets != nil {
		if fetchSrv != nil {
			t.Fatal("harness: fetcher and offsets both set")
		}
		fetchSrv = o.offsets
	}
	var fetcher *backends.Fetcher
	if fetchSrv != nil {
		fAddr, _ := grpcServe(t, func(s *grpc.Server) { fetchv1.RegisterFetchServiceServer(s, fetchSrv) })
		fetcher = backends.NewFetcher([]streampool.Backend[fetchv1.FetchServiceClient]{{Addr: fAddr, Client: fetchv1.NewFetchServiceClient(grpcDial(t, fAddr))}})
	}
	cfg := kafka.DefaultConfig()
	cfg.Listen = h.addr
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	pc := produce.DefaultProduceConfig()
	if o.produce != nil {
		o.produce(&pc)
	}
	h.cfg = cfg
	h.deps = Deps{Catalog: cat, Transcoder: tc, Appender: ap, Fetcher: fetcher, Produce: pc, SASL: o.sasl, Scram: o.scram, Token: o.token, Authorizer: o.authz, CertPrincipal: o.certName, Logger: log, Listener: ln, TracerProvider: o.tp, MeterProvider: o.mp,
		DisableIdempotence: o.noIdempotence, StateDir: o.stateDir}
	srv, err := NewFrontdoor(cfg, h.deps)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	ctx := context.Background()
	for _, start := range []func(context.Context) error{tc.Start, ap.Start, cat.StartHeartbeat} {
		if err := start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Start(ctx, func(err error) { t.Errorf("listener failed: %v", err) }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.srv.Shutdown(sctx)
		_ = cat.ShutdownHeartbeat(sctx)
		_ = ap.Shutdown(sctx)
		_ = tc.Shutdown(sctx)
	})
	h.cat.AddTopic("orders", 4, 100)
	h.cat.AddTopic("events", 2, 200)
	return h
}

// restartFrontdoor replaces the Kafka server by a new one on the same
// address and backends, as a frontdoor killed and started again: the
// idempotence anchors are not flushed on the way down (a crash), and the
// new server reads them back from the state dir.
func (h *harness) restartFrontdoor(t testing.TB) {
	t.Helper()
	if err := h.srv.Producers.Abandon(); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.srv.Shutdown(sctx)
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	d := h.deps
	d.Listener = ln
	srv, err := NewFrontdoor(h.cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background(), func(err error) { t.Errorf("listener failed: %v", err) }); err != nil {
		t.Fatal(err)
	}
	h.srv = srv
}

// rawClient speaks the wire protocol by hand, for malformed input.
type rawClient struct {
	t    testing.TB
	conn net.Conn
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawClient{t: t, conn: c}
}

// frame builds a request frame: header v1/v2 as the version needs.
func frame(req kmsg.Request, corr int32, clientID *string) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if clientID == nil {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
		b = append(b, *clientID...)
	}
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send writes req and returns its correlation id.
func (c *rawClient) send(req kmsg.Request) int32 {
	c.corr++
	id := "raw-test"
	c.write(frame(req, c.corr, &id))
	return c.corr
}

// readFrame reads one response frame.
func (c *rawClient) readFrame() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.conn, b)
	return b, err
}

// recv reads the response to req (sent with corr) and decodes it.
func (c *rawClient) recv(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	b, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(b)); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	b = b[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() && resp.Key() != kafka.ApiVersionsKey {
		if b[0] != 0 {
			c.t.Fatalf("response header tags %d, want 0", b[0])
		}
		b = b[1:]
	}
	if err := resp.ReadFrom(b); err != nil {
		c.t.Fatalf("decode %T: %v", resp, err)
	}
	return resp
}

func (c *rawClient) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	return c.recv(req, c.send(req))
}

// expectClosed asserts the server closes the connection without answering.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := c.readFrame()
	if err == nil {
		c.t.Fatalf("connection still open; got a %d-byte frame", len(b))
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatalf("connection not closed within 10s")
	}
}
