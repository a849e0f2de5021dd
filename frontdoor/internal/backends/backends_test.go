package backends

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/fakebackends"
	"github.com/ferrygw/ferry/frontdoor/internal/streampool"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func serveOn(t *testing.T, addr string, register func(*grpc.Server)) (*grpc.Server, string) {
	t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return s, ln.Addr().String()
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func newCatalog(t *testing.T, fake *fakebackends.Catalog) *Catalog {
	t.Helper()
	_, addr := serveOn(t, "127.0.0.1:0", func(s *grpc.Server) { catalogv1.RegisterCatalogServiceServer(s, fake) })
	c, err := NewCatalog(CatalogConfig{TTL: time.Minute, NegativeTTL: time.Second, CallTimeout: 5 * time.Second, Lease: 3 * time.Second,
		Self: &catalogv1.Broker{NodeId: 1, Host: "127.0.0.1", Port: 9092}}, catalogv1.NewCatalogServiceClient(dial(t, addr)), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCatalogCachesByTTL(t *testing.T) {
	fake := fakebackends.NewCatalog()
	fake.AddTopic("a", 1, 1)
	c := newCatalog(t, fake)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	ctx := context.Background()

	got, err := c.Resolve(ctx, []string{"a", "missing"})
	if err != nil || got["a"].Mapping == nil || got["missing"].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("resolve: %+v %v", got, err)
	}
	if _, err := c.Resolve(ctx, []string{"a", "missing"}); err != nil || fake.Resolves.Load() != 1 {
		t.Fatalf("second resolve asked catalogsvc again: %d calls, %v", fake.Resolves.Load(), err)
	}
	now = now.Add(2 * time.Second) // negative entry expired, positive not
	fake.AddTopic("missing", 1, 2)
	got, _ = c.Resolve(ctx, []string{"a", "missing"})
	if got["missing"].Mapping == nil || fake.Resolves.Load() != 2 {
		t.Fatalf("created topic not seen after the negative TTL: %+v, %d calls", got["missing"], fake.Resolves.Load())
	}
	now = now.Add(2 * time.Minute)
	c.Resolve(ctx, []string{"a"})
	if fake.Resolves.Load() != 3 {
		t.Fatalf("expired mapping not refreshed: %d calls", fake.Resolves.Load())
	}
}

// TestCatalogSweepsExpiredEntries: producers naming ever new unknown
// topics leave the cache bounded by what has not expired.
func TestCatalogSweepsExpiredEntries(t *testing.T) {
	fake := fakebackends.NewCatalog()
	fake.AddTopic("a", 1, 1)
	c := newCatalog(t, fake)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	ctx := context.Background()
	for round := range 20 {
		names := []string{"a"}
		for i := range minSweep {
			names = append(names, fmt.Sprintf("missing-%d-%d", round, i))
		}
		if _, err := c.Resolve(ctx, names); err != nil {
			t.Fatal(err)
		}
		now = now.Add(2 * time.Second) // this round's unknown topics expire
	}
	c.mu.Lock()
	size := len(c.cache)
	_, hasA := c.cache["a"]
	c.mu.Unlock()
	if size > 4*minSweep || !hasA {
		t.Fatalf("cache holds %d entries (a cached: %v) after 20 rounds of %d unknown topics; want at most %d", size, hasA, minSweep, 4*minSweep)
	}
}

// TestCatalogMarkStale: a table Fluss reported gone is asked for again at
// once, naming its id as stale, and again after the negative TTL while
// catalogsvc still answers the old id; the new id is cached as usual.
func TestCatalogMarkStale(t *testing.T) {
	fake := fakebackends.NewCatalog()
	fake.AddTopic("t", 1, 5)
	c := newCatalog(t, fake)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	ctx := context.Background()
	resolve := func() (int64, []int64) {
		t.Helper()
		got, err := c.Resolve(ctx, []string{"t"})
		if err != nil {
			t.Fatal(err)
		}
		fake.Mu.Lock()
		defer fake.Mu.Unlock()
		return got["t"].Mapping.GetTableId(), fake.LastStale
	}
	if id, stale := resolve(); id != 5 || len(stale) != 0 {
		t.Fatalf("first resolve: table %d, stale %v", id, stale)
	}
	c.MarkStale("t", 5)
	if id, stale := resolve(); id != 5 || fake.Resolves.Load() != 2 || len(stale) != 1 || stale[0] != 5 {
		t.Fatalf("after MarkStale: table %d, stale %v, %d calls; want a new call naming 5", id, stale, fake.Resolves.Load())
	}
	// catalogsvc catches up; the old answer was kept only for the negative TTL.
	fake.AddTopic("t", 1, 6)
	now = now.Add(2 * time.Second)
	if id, stale := resolve(); id != 6 || fake.Resolves.Load() != 3 || len(stale) != 1 {
		t.Fatalf("after the negative TTL: table %d, stale %v, %d calls", id, stale, fake.Resolves.Load())
	}
	now = now.Add(2 * time.Second)
	if id, _ := resolve(); id != 6 || fake.Resolves.Load() != 3 {
		t.Fatalf("new mapping not cached for the TTL: table %d, %d calls", id, fake.Resolves.Load())
	}
	now = now.Add(2 * time.Minute)
	if _, stale := resolve(); len(stale) != 0 {
		t.Fatalf("stale id still sent after the new table was found: %v", stale)
	}
}

// TestCatalogMarkPartitionGone: the topic of a Fluss partition a read found
// gone is asked for again at once, naming the partition as stale, until
// catalogsvc no longer maps it.
func TestCatalogMarkPartitionGone(t *testing.T) {
	fake := fakebackends.NewCatalog()
	fake.AddPartitionTopic("t.x", "t", "x", 1, 5, 9)
	c := newCatalog(t, fake)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	ctx := context.Background()
	resolve := func() (Topic, []int64) {
		t.Helper()
		got, err := c.Resolve(ctx, []string{"t.x"})
		if err != nil {
			t.Fatal(err)
		}
		fake.Mu.Lock()
		defer fake.Mu.Unlock()
		return got["t.x"], fake.LastStalePartitions
	}
	if _, stale := resolve(); len(stale) != 0 {
		t.Fatalf("first resolve: stale %v", stale)
	}
	c.MarkPartitionGone("t.x", 9)
	if tp, stale := resolve(); tp.Mapping == nil || fake.Resolves.Load() != 2 || !slices.Equal(stale, []int64{9}) {
		t.Fatalf("after MarkPartitionGone: %+v, stale %v, %d calls; want a new call naming 9", tp, stale, fake.Resolves.Load())
	}
	// catalogsvc catches up after the negative TTL; then nothing is stale.
	fake.RemoveTopic("t.x")
	now = now.Add(2 * time.Second)
	if tp, stale := resolve(); tp.Mapping != nil || tp.ErrorCode != kerr.UnknownTopicOrPartition.Code || !slices.Equal(stale, []int64{9}) {
		t.Fatalf("after the negative TTL: %+v, stale %v", tp, stale)
	}
	now = now.Add(2 * time.Second)
	if _, stale := resolve(); len(stale) != 0 {
		t.Fatalf("stale partition still sent after catalogsvc dropped the topic: %v", stale)
	}
}

func TestCatalogConcurrentCallersShareOneCall(t *testing.T) {
	fake := fakebackends.NewCatalog()
	fake.AddTopic("a", 1, 1)
	c := newCatalog(t, fake)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := c.Resolve(context.Background(), []string{"a"}); err != nil || got["a"].Mapping == nil {
				t.Errorf("resolve: %+v %v", got, err)
			}
		}()
	}
	wg.Wait()
	if n := fake.Resolves.Load(); n > 2 {
		t.Fatalf("%d ResolveTopics calls for one topic", n)
	}
}

func TestCatalogDown(t *testing.T) {
	fake := fakebackends.NewCatalog()
	fake.Down.Store(true)
	c := newCatalog(t, fake)
	if _, err := c.Resolve(context.Background(), []string{"a"}); err == nil {
		t.Fatal("no error with catalogsvc down")
	}
	if _, err := c.Metadata(context.Background(), nil, true); err == nil {
		t.Fatal("no metadata error with catalogsvc down")
	}
}

func TestCatalogConfigValidate(t *testing.T) {
	good := CatalogConfig{TTL: time.Second, CallTimeout: time.Second, Lease: time.Second, Self: &catalogv1.Broker{Host: "h", Port: 1}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*CatalogConfig){
		"ttl":     func(c *CatalogConfig) { c.TTL = 0 },
		"timeout": func(c *CatalogConfig) { c.CallTimeout = 0 },
		"self":    func(c *CatalogConfig) { c.Self = nil },
		"port":    func(c *CatalogConfig) { c.Self = &catalogv1.Broker{Host: "h", Port: 70000} },
		"node":    func(c *CatalogConfig) { c.Self = &catalogv1.Broker{Host: "h", Port: 1, NodeId: -1} },
	} {
		c := good
		mut(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestAppenderResendsInOrderAfterRestart: appends sent to an appendsvc
// that dies unanswered are sent again, in submission order, once it is
// back; order per bucket survives the restart.
func TestAppenderResendsInOrderAfterRestart(t *testing.T) {
	hung := fakebackends.NewAppender()
	hung.Hold.Store(true)
	srv, addr := serveOn(t, "127.0.0.1:0", func(s *grpc.Server) { appendv1.RegisterAppendServiceServer(s, hung) })
	ap, err := NewAppender(streampool.Config{Name: "append", MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond},
		[]streampool.Backend[appendv1.AppendServiceClient]{{Addr: addr, Client: appendv1.NewAppendServiceClient(dial(t, addr))}}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := ap.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer ap.Shutdown(context.Background())

	const n = 30
	var pending []*Pending
	for i := 0; i < n; i++ {
		pending = append(pending, ap.Submit(context.Background(), &appendv1.AppendRequest{
			TableId: 5, BucketId: 0, ArrowIpc: fakebackends.EncodeValues(fmt.Sprintf("%03d", i)), RecordCount: 1,
			WriterId: -1, BatchSequence: -1,
		}))
	}
	deadline := time.Now().Add(10 * time.Second)
	for hung.Calls.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("hung appender got %d of %d", hung.Calls.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.Stop()
	healthy := fakebackends.NewAppender()
	serveOn(t, addr, func(s *grpc.Server) { appendv1.RegisterAppendServiceServer(s, healthy) })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i, p := range pending {
		resp, err := p.Wait(ctx)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if resp.BaseOffset != int64(i) {
			t.Fatalf("append %d landed at offset %d", i, resp.BaseOffset)
		}
	}
	log := healthy.Log(5, 0)
	for i, v := range log {
		if v != fmt.Sprintf("%03d", i) {
			t.Fatalf("offset %d holds %s: order broken by the resend", i, v)
		}
	}
}
