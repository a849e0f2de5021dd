package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygw/ferry/catalogsvc/internal/mapping"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestLoadListsExposedTopicsSorted(t *testing.T) {
	f := newFake()
	f.create("shop", "orders")
	f.create("shop", "audit", mapping.PropTopic, "audit-events")
	f.create("shop", "private", mapping.PropEnabled, "false")
	f.create("crm", "leads")
	f.create("crm", "keyed")
	// A shape Ferry does not write: refused, so not listed.
	f.alter("crm", "keyed", func(t *mapping.Table) { t.PrimaryKeys = []string{"id"}; t.Properties[mapping.PropKvFormat] = "INDEXED" })
	c, _ := startCatalog(t, f, testConfig())

	topics, err := c.Topics(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range topics {
		names = append(names, m.Topic)
	}
	if got, want := strings.Join(names, ","), "audit-events,crm.leads,shop.orders"; got != want {
		t.Fatalf("topics = %s, want %s", got, want)
	}
	if topics[2].PartitionCount != 2 || topics[2].Database != "shop" || topics[2].Table != "orders" {
		t.Errorf("shop.orders mapping = %v", topics[2])
	}
}

func TestResolveAnswers(t *testing.T) {
	f := newFake()
	f.create("shop", "orders")
	f.create("shop", "private", mapping.PropEnabled, "false")
	f.create("shop", "broken", mapping.PropValueFormat, "xml")
	f.create("shop", "renamed", mapping.PropTopic, "events")
	c, _ := startCatalog(t, f, testConfig())

	tests := []struct {
		topic   string
		code    int16
		message string
	}{
		{"shop.orders", 0, ""},
		{"events", 0, ""},
		{"shop.renamed", kerr.UnknownTopicOrPartition.Code, "does not exist"},
		{"shop.private", kerr.UnknownTopicOrPartition.Code, "kafka.enabled=true"},
		{"shop.broken", kerr.InvalidTopicException.Code, `kafka.value.format is "xml"`},
		{"shop.nothing", kerr.UnknownTopicOrPartition.Code, "no exposed Fluss table shop.nothing"},
		{"bare", kerr.UnknownTopicOrPartition.Code, "named database.table or by a table's kafka.topic"},
		{"bad/name", kerr.InvalidTopicException.Code, "contains '/'"},
		{"", kerr.InvalidTopicException.Code, "empty"},
	}
	names := make([]string, len(tests))
	for i, tt := range tests {
		names[i] = tt.topic
	}
	results := c.Resolve(ctxT(t), names)
	if len(results) != len(tests) {
		t.Fatalf("%d results for %d topics", len(results), len(tests))
	}
	for i, tt := range tests {
		r := results[i]
		if r.Topic != tt.topic || r.Code != tt.code || !strings.Contains(r.Message, tt.message) {
			t.Errorf("%q: got code %d %q, want code %d containing %q", tt.topic, r.Code, r.Message, tt.code, tt.message)
		}
		if (r.Mapping != nil) != (tt.code == 0) {
			t.Errorf("%q: mapping %v with code %d", tt.topic, r.Mapping, r.Code)
		}
	}
	if results[1].Mapping.Table != "renamed" {
		t.Errorf("events maps to %s, want renamed", results[1].Mapping.Table)
	}
}

func TestTableCreatedLaterAppearsAtFirstLookup(t *testing.T) {
	f := newFake()
	c, _ := startCatalog(t, f, testConfig())
	if r := c.Resolve(ctxT(t), []string{"shop.late"}); r[0].Code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("before create: %+v", r[0])
	}
	f.create("shop", "late")
	before := f.lists.Load()
	r := c.Resolve(ctxT(t), []string{"shop.late"})
	if r[0].Code != 0 || r[0].Mapping.Topic != "shop.late" {
		t.Fatalf("after create: %+v", r[0])
	}
	if n := f.lists.Load() - before; n != 1 {
		t.Errorf("lookup ran %d refreshes, want 1", n)
	}
	// Known topics are answered from memory.
	before = f.lists.Load()
	c.Resolve(ctxT(t), []string{"shop.late"})
	if n := f.lists.Load() - before; n != 0 {
		t.Errorf("lookup of a known topic ran %d refreshes", n)
	}
}

func TestOnDemandRefreshReadsOnlyNewTables(t *testing.T) {
	f := newFake()
	for i := range 5 {
		f.create("shop", fmt.Sprintf("t%d", i))
	}
	c, _ := startCatalog(t, f, testConfig())
	f.create("shop", "new")
	f.alter("shop", "t0", func(t *mapping.Table) { t.CustomProperties[mapping.PropEnabled] = "false" })
	gets := f.gets.Load()
	if r := c.Resolve(ctxT(t), []string{"shop.new", "shop.nope"}); r[0].Code != 0 || r[1].Code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("lookup: %+v", r)
	}
	if n := f.gets.Load() - gets; n != 1 {
		t.Errorf("on-demand refresh read %d tables, want 1 (the new one)", n)
	}
	// The change to a known table waits for the full refresh.
	if r := c.Resolve(ctxT(t), []string{"shop.t0"})[0]; r.Code != 0 {
		t.Errorf("t0 before a full refresh: %+v", r)
	}
	if err := c.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if r := c.Resolve(ctxT(t), []string{"shop.t0"})[0]; r.Code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("t0 after a full refresh: %+v", r)
	}
}

func TestOnDemandRefreshSeesRecreatedTable(t *testing.T) {
	f := newFake()
	old := f.create("shop", "t")
	c, _ := startCatalog(t, f, testConfig())
	f.drop("shop", "t")
	// An on-demand refresh (for another name) observes the drop ...
	c.Resolve(ctxT(t), []string{"shop.other"})
	if _, ok := c.Snapshot().Lookup("shop.t"); ok {
		t.Fatal("dropped table still in the snapshot")
	}
	// ... so the table created again is read afresh, not from memory.
	f.create("shop", "t")
	r := c.Resolve(ctxT(t), []string{"shop.t"})[0]
	if r.Code != 0 || r.Mapping.TableId == old.TableID {
		t.Errorf("recreated table: %+v (old id %d)", r, old.TableID)
	}
}

func TestPeriodicRefreshPicksUpChanges(t *testing.T) {
	f := newFake()
	f.create("shop", "orders")
	cfg := testConfig()
	cfg.RefreshInterval = 20 * time.Millisecond
	c, logs := startCatalog(t, f, cfg)

	f.create("shop", "later")
	f.drop("shop", "orders")
	waitFor(t, "the periodic refresh to see the changes", func() bool {
		s := c.Snapshot()
		_, hasLater := s.Lookup("shop.later")
		_, hasOrders := s.Lookup("shop.orders")
		return hasLater && !hasOrders
	})
	waitFor(t, "the removal to be logged", func() bool { return logs.count("topic removed") == 1 })
	if !strings.Contains(logs.String(), "table=shop.orders") {
		t.Errorf("removal log does not name the table:\n%s", logs)
	}
}

func TestDroppedTableDisappearsAndRecreatedGetsNewID(t *testing.T) {
	f := newFake()
	f.create("shop", "orders")
	c, _ := startCatalog(t, f, testConfig())
	first := c.Resolve(ctxT(t), []string{"shop.orders"})[0].Mapping

	f.drop("shop", "orders")
	if err := c.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if r := c.Resolve(ctxT(t), []string{"shop.orders"})[0]; r.Code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("dropped table still resolves: %+v", r)
	}
	f.create("shop", "orders")
	again := c.Resolve(ctxT(t), []string{"shop.orders"})[0].Mapping
	if again == nil {
		t.Fatal("recreated table does not resolve")
	}
	if string(again.TopicId) == string(first.TopicId) || again.MappingId == first.MappingId {
		t.Error("recreated table kept the topic id or mapping id of the dropped one")
	}
}

func TestUnreachableFluss(t *testing.T) {
	f := newFake()
	f.setErr(errUnreachable)
	c, logs := startCatalog(t, f, testConfig())

	r := c.Resolve(ctxT(t), []string{"shop.orders"})[0]
	if r.Code != kerr.LeaderNotAvailable.Code || !strings.Contains(r.Message, "connection refused") {
		t.Errorf("never loaded: %+v, want LEADER_NOT_AVAILABLE naming the cause", r)
	}
	if _, err := c.Topics(ctxT(t)); !errors.Is(err, ErrNotLoaded) || !errors.Is(err, errUnreachable) {
		t.Errorf("Topics = %v, want ErrNotLoaded wrapping the cause", err)
	}

	// Fluss comes back: the next lookup loads.
	f.setErr(nil)
	f.create("shop", "orders")
	if r := c.Resolve(ctxT(t), []string{"shop.orders"})[0]; r.Code != 0 {
		t.Fatalf("after recovery: %+v", r)
	}
	if logs.count("catalog refresh succeeded again") != 1 {
		t.Errorf("recovery not logged once:\n%s", logs)
	}

	// Fluss goes away again: the last good state stays.
	f.setErr(errUnreachable)
	if err := c.Refresh(ctxT(t)); !errors.Is(err, errUnreachable) {
		t.Fatalf("Refresh = %v, want the Fluss error", err)
	}
	if r := c.Resolve(ctxT(t), []string{"shop.orders"})[0]; r.Code != 0 {
		t.Errorf("last good state lost: %+v", r)
	}
	if r := c.Resolve(ctxT(t), []string{"shop.other"})[0]; r.Code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic with stale state: %+v", r)
	}
	_ = c.Refresh(ctxT(t))
	// The same failure three times (Refresh, the lookup of shop.other,
	// Refresh): one warning, the repeats at debug level.
	if n := logs.count("serving the last good state"); n != 3 {
		t.Errorf("%d failure lines for 3 failed refreshes, want 3", n)
	}
	if n := strings.Count(logs.String(), "level=WARN msg=\"catalog refresh failed; serving the last good state\""); n != 1 {
		t.Errorf("%d warnings for one persisting failure, want 1", n)
	}
}

func TestLoopRetriesSoonUntilFirstLoad(t *testing.T) {
	f := newFake()
	f.setErr(errUnreachable)
	f.create("shop", "orders")
	// The interval is an hour: only the first-load retries can load it.
	c, _ := startCatalog(t, f, testConfig())
	waitFor(t, "a retry", func() bool { return f.lists.Load() >= 2 })
	f.setErr(nil)
	waitFor(t, "the first load", func() bool { return c.Snapshot() != nil })
	// Loaded: back to the (hour-long) interval, no more retries.
	n := f.lists.Load()
	time.Sleep(300 * time.Millisecond)
	if f.lists.Load() != n {
		t.Errorf("still retrying after the first load")
	}
}

func TestPartialFailureKeepsLastState(t *testing.T) {
	f := newFake()
	f.create("shop", "orders")
	f.create("shop", "items")
	c, _ := startCatalog(t, f, testConfig())

	f.mu.Lock()
	f.getErr["shop.items"] = errors.New("request timed out")
	f.mu.Unlock()
	f.drop("shop", "orders")
	if err := c.Refresh(ctxT(t)); err == nil || !strings.Contains(err.Error(), "read table shop.items") {
		t.Fatalf("Refresh = %v, want the failing table named", err)
	}
	if _, ok := c.Snapshot().Lookup("shop.orders"); !ok {
		t.Error("a failed refresh published a partial state")
	}

	// A table dropped between listing and reading is skipped, not an error.
	f.mu.Lock()
	f.getErr["shop.items"] = fmt.Errorf("table shop.items: %w", ErrNotFound)
	f.mu.Unlock()
	if err := c.Refresh(ctxT(t)); err != nil {
		t.Fatalf("Refresh with a vanished table = %v", err)
	}
	if n := len(c.Snapshot().Topics()); n != 0 {
		t.Errorf("%d topics, want 0", n)
	}
}

func TestUnreadableTableIsRefusedNotFatal(t *testing.T) {
	f := newFake()
	f.create("shop", "orders")
	f.create("shop", "exotic")
	f.mu.Lock()
	f.getErr["shop.exotic"] = &TableError{Err: errors.New(`unknown type "VARIANT"`)}
	f.mu.Unlock()
	c, logs := startCatalog(t, f, testConfig())
	r := c.Resolve(ctxT(t), []string{"shop.orders", "shop.exotic"})
	if r[0].Code != 0 {
		t.Errorf("readable table: %+v", r[0])
	}
	if r[1].Code != kerr.InvalidTopicException.Code || !strings.Contains(r[1].Message, `unknown type "VARIANT"`) {
		t.Errorf("unreadable table: %+v", r[1])
	}
	if logs.count("cannot read its metadata") != 1 {
		t.Errorf("unreadable table not logged once:\n%s", logs)
	}
}

func TestCollisionRefusesBoth(t *testing.T) {
	f := newFake()
	f.create("a", "b")
	f.create("x", "y", mapping.PropTopic, "a.b")
	f.create("x", "z")
	c, logs := startCatalog(t, f, testConfig())

	r := c.Resolve(ctxT(t), []string{"a.b", "x.z"})
	if r[0].Code != kerr.InvalidTopicException.Code || !strings.Contains(r[0].Message, "claimed by tables a.b, x.y") {
		t.Errorf("colliding topic: %+v", r[0])
	}
	if r[1].Code != 0 {
		t.Errorf("unrelated topic: %+v", r[1])
	}
	if n := logs.count("claimed by tables a.b, x.y"); n != 2 {
		t.Errorf("collision logged %d times, want once per table (2):\n%s", n, logs)
	}
	// Resolving the clash exposes both.
	f.alter("x", "y", func(t *mapping.Table) { t.CustomProperties[mapping.PropTopic] = "xy" })
	if err := c.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if r := c.Resolve(ctxT(t), []string{"a.b", "xy"}); r[0].Code != 0 || r[1].Code != 0 {
		t.Errorf("after rename: %+v", r)
	}
}

func TestExposedTopicWinsNameOverRefusedTable(t *testing.T) {
	f := newFake()
	f.create("a", "b")
	// Claims a.b too, but is refused, so a.b stays the exposed table's.
	f.create("x", "y", mapping.PropTopic, "a.b", mapping.PropValueFormat, "xml")
	f.create("z", "z", mapping.PropTopic, "only-broken", mapping.PropValueFormat, "xml")
	c, _ := startCatalog(t, f, testConfig())
	r := c.Resolve(ctxT(t), []string{"a.b", "only-broken"})
	if r[0].Code != 0 || r[0].Mapping.Database != "a" {
		t.Errorf("a.b: %+v", r[0])
	}
	if r[1].Code != kerr.InvalidTopicException.Code {
		t.Errorf("only-broken: %+v", r[1])
	}
}

func TestNotExposedLoggedOncePerChange(t *testing.T) {
	f := newFake()
	f.create("shop", "private", mapping.PropEnabled, "false")
	f.create("shop", "broken", mapping.PropKeyColumn, "nope")
	f.create("shop", "orders")
	c, logs := startCatalog(t, f, testConfig())
	for range 3 {
		if err := c.Refresh(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	for substr, want := range map[string]int{
		"kafka.enabled is false":  1,
		`names column \"nope\"`:   1,
		"msg=\"topic exposed\"":   1,
		"topic mapping changed":   0,
		"level=WARN msg=\"table ": 1,
	} {
		if n := logs.count(substr); n != want {
			t.Errorf("%q logged %d times, want %d:\n%s", substr, n, want, logs)
		}
	}
	// A change logs again, once.
	f.alter("shop", "broken", func(t *mapping.Table) { t.CustomProperties[mapping.PropKeyColumn] = "gone" })
	f.alter("shop", "orders", func(t *mapping.Table) { t.SchemaID = 2 })
	for range 2 {
		if err := c.Refresh(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	if n := logs.count(`names column \"gone\"`); n != 1 {
		t.Errorf("changed reason logged %d times, want 1", n)
	}
	if n := logs.count("topic mapping changed"); n != 1 {
		t.Errorf("mapping change logged %d times, want 1", n)
	}
}

func TestOnDemandRefreshIsRateLimited(t *testing.T) {
	f := newFake()
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg := testConfig()
	cfg.MinRefreshGap = time.Minute
	c, _ := startCatalog(t, f, cfg, WithClock(clock))

	before := f.lists.Load()
	for range 5 {
		c.Resolve(ctxT(t), []string{"shop.nope"})
	}
	if n := f.lists.Load() - before; n != 0 {
		t.Errorf("%d refreshes within the gap, want 0", n)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	for range 5 {
		c.Resolve(ctxT(t), []string{"shop.nope"})
	}
	if n := f.lists.Load() - before; n != 1 {
		t.Errorf("%d refreshes after the gap, want 1", n)
	}
	// An explicit Refresh is not rate-limited.
	if err := c.Refresh(ctxT(t)); err != nil || f.lists.Load()-before != 2 {
		t.Errorf("Refresh = %v, refreshes %d, want 2", err, f.lists.Load()-before)
	}
}

func TestConcurrentLookupsShareOneRefresh(t *testing.T) {
	f := newFake()
	f.create("shop", "orders")
	gate := make(chan struct{})
	c, _ := startCatalog(t, f, testConfig())

	f.mu.Lock()
	f.gate = gate
	f.mu.Unlock()
	before := f.lists.Load()
	f.create("shop", "new")

	const n = 16
	var wg sync.WaitGroup
	results := make([]Result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = c.Resolve(ctxT(t), []string{"shop.new"})[0]
		}()
	}
	waitFor(t, "a refresh to start", func() bool { return f.lists.Load() > before })
	close(gate)
	wg.Wait()
	if got := f.lists.Load() - before; got != 1 {
		t.Errorf("%d concurrent unknown lookups ran %d refreshes, want 1", n, got)
	}
	for i, r := range results {
		if r.Code != 0 {
			t.Errorf("lookup %d: %+v", i, r)
		}
	}
}

func TestCallerGivingUpDoesNotCancelRefresh(t *testing.T) {
	f := newFake()
	c, _ := startCatalog(t, f, testConfig())
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate = gate
	f.mu.Unlock()
	f.create("shop", "orders")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := c.Resolve(ctx, []string{"shop.orders"})[0]
	if r.Code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("cancelled lookup: %+v", r)
	}
	close(gate)
	// The refresh the cancelled caller started still completes.
	waitFor(t, "the refresh to publish", func() bool {
		_, ok := c.Snapshot().Lookup("shop.orders")
		return ok
	})
}

func TestConfiguredDatabases(t *testing.T) {
	f := newFake()
	f.create("shop", "orders")
	f.create("other", "t")
	cfg := testConfig()
	cfg.Databases = []string{"shop", "missing"}
	c, logs := startCatalog(t, f, cfg)
	topics, err := c.Topics(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(topics) != 1 || topics[0].Topic != "shop.orders" {
		t.Errorf("topics = %v, want only shop.orders", topics)
	}
	_ = c.Refresh(ctxT(t))
	if n := logs.count("configured database does not exist in Fluss"); n != 1 {
		t.Errorf("missing database logged %d times, want 1", n)
	}
}

func TestExposeAll(t *testing.T) {
	f := newFake()
	f.create("shop", "orders")
	f.alter("shop", "orders", func(t *mapping.Table) { delete(t.CustomProperties, mapping.PropEnabled) })
	f.create("shop", "off", mapping.PropEnabled, "false")
	cfg := testConfig()
	cfg.Mapping.Exposure = mapping.ExposeAll
	c, _ := startCatalog(t, f, cfg)
	r := c.Resolve(ctxT(t), []string{"shop.orders", "shop.off"})
	if r[0].Code != 0 || r[1].Code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("expose all: %+v", r)
	}
}

func TestLifecycle(t *testing.T) {
	f := newFake()
	c, err := New(f, testConfig(), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctxT(t)); err == nil {
		t.Error("Refresh before Start succeeded")
	}
	// Every refresh hangs on Fluss until the test ends.
	gate := make(chan struct{})
	defer close(gate)
	f.gate = gate
	if err := c.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctxT(t)); err == nil {
		t.Error("second Start succeeded")
	}
	waitFor(t, "the first refresh to hang", func() bool { return f.lists.Load() >= 1 })
	// Shutdown cancels the hanging refresh and returns.
	if err := c.Shutdown(ctxT(t)); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	if err := c.Refresh(ctxT(t)); err == nil {
		t.Error("Refresh after Shutdown succeeded")
	}
	if r := c.Resolve(ctxT(t), []string{"a.b"})[0]; r.Code != kerr.LeaderNotAvailable.Code {
		t.Errorf("lookup after a shutdown without state: %+v", r)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"ok", func(*Config) {}, ""},
		{"interval", func(c *Config) { c.RefreshInterval = 0 }, "RefreshInterval"},
		{"timeout", func(c *Config) { c.RefreshTimeout = -1 }, "RefreshTimeout"},
		{"gap", func(c *Config) { c.MinRefreshGap = -1 }, "MinRefreshGap"},
		{"concurrency", func(c *Config) { c.Concurrency = 0 }, "Concurrency"},
		{"cluster id", func(c *Config) { c.Mapping.ClusterID = "" }, "ClusterID"},
		{"database", func(c *Config) { c.Databases = []string{"a.b"} }, "Databases"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.mod(&cfg)
			err := cfg.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want error naming %q", err, tt.want)
			}
		})
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkResolveKnown is the produce path's lookup: known topics are
// answered from the published snapshot without touching Fluss.
func BenchmarkResolveKnown(b *testing.B) {
	f := newFake()
	for i := range 100 {
		f.create("shop", fmt.Sprintf("t%d", i))
	}
	c, err := New(f, testConfig(), discardLogger())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Shutdown(ctx) }()
	if err := c.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	topics := []string{"shop.t1", "shop.t42", "shop.t99"}
	b.ReportAllocs()
	for b.Loop() {
		if r := c.Resolve(ctx, topics); r[2].Mapping == nil {
			b.Fatal(r[2])
		}
	}
}

// TestStaleTableIDRereadsRecreatedTable: a table dropped and created again
// between two periodic refreshes still resolves to its old id, until a
// caller names that id as stale; then the catalog reads the tables again
// and answers the new id.
func TestStaleTableIDRereadsRecreatedTable(t *testing.T) {
	f := newFake()
	f.create("shop", "orders")
	cfg := testConfig()
	cfg.MinRefreshGap = 0
	c, _ := startCatalog(t, f, cfg)
	first := c.Resolve(ctxT(t), []string{"shop.orders"})[0].Mapping

	f.drop("shop", "orders")
	f.create("shop", "orders")
	if r := c.Resolve(ctxT(t), []string{"shop.orders"})[0].Mapping; r.GetTableId() != first.GetTableId() {
		t.Fatalf("without a stale id the known table was read again (id %d, was %d): the test proves nothing", r.GetTableId(), first.GetTableId())
	}
	again := c.Resolve(ctxT(t), []string{"shop.orders"}, first.GetTableId())[0].Mapping
	if again == nil || again.GetTableId() == first.GetTableId() {
		t.Fatalf("with table id %d stale: mapping %v, want the recreated table's new id", first.GetTableId(), again)
	}
}
