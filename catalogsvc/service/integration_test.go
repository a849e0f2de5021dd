package service_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygw/ferry/catalogsvc/internal/catalog"
	"github.com/ferrygw/ferry/catalogsvc/internal/flussadapter"
	"github.com/ferrygw/ferry/catalogsvc/internal/mapping"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/testenv"
	"github.com/twmb/franz-go/pkg/kerr"
)

// realCatalog starts a catalog over the real Fluss client.
func realCatalog(t *testing.T, bootstrap string, cfg catalog.Config) *catalog.Catalog {
	t.Helper()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	admin := flussadapter.NewLazy(func(ctx context.Context) (*fluss.Client, error) {
		return fluss.Dial(ctx, bootstrap, fluss.WithLogger(log), fluss.WithDialTimeout(2*time.Second))
	})
	c, err := catalog.New(flussadapter.New(admin), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Shutdown(ctx); err != nil {
			t.Errorf("catalog shutdown: %v", err)
		}
		_ = admin.Close()
	})
	return c
}

func catalogConfig(dbs ...string) catalog.Config {
	return catalog.Config{
		RefreshInterval: time.Hour,
		RefreshTimeout:  30 * time.Second,
		Concurrency:     4,
		Databases:       dbs,
		Mapping:         mapping.Options{ClusterID: "it", Exposure: mapping.ExposeOptIn},
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func enabled(kv ...string) map[string]string {
	m := map[string]string{mapping.PropEnabled: "true"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestIntegrationTablesListedExactly(t *testing.T) {
	f := testenv.Fluss(t)
	db := f.NewDatabase(t, "catalogit")
	linesTopic := testenv.UniqueName("lines")
	orders := f.NewTable(t, testenv.TableSpec{Database: db, Table: "orders", BucketCount: 3,
		Columns: []testenv.Column{
			{Name: "id", Type: "BIGINT"}, {Name: "item", Type: "STRING"}, {Name: "price", Type: "DECIMAL(10, 2)"},
			{Name: "k", Type: "STRING"}, {Name: "ts", Type: "TIMESTAMP_LTZ(3)"}, {Name: "h", Type: "MAP<STRING, BYTES>"},
		},
		Properties: map[string]string{mapping.PropArrowCompression: "NONE"},
		CustomProperties: enabled(mapping.PropKeyColumn, "k", mapping.PropTimestampColumn, "ts",
			mapping.PropHeadersColumn, "h", mapping.PropJSONUnknownFields, "reject")})
	lines := f.NewTable(t, testenv.TableSpec{Database: db, Table: "lines", BucketCount: 2,
		Columns:          []testenv.Column{{Name: "line", Type: "STRING"}},
		CustomProperties: enabled(mapping.PropValueFormat, "string", mapping.PropTopic, linesTopic)})
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "hidden", BucketCount: 1,
		Columns: []testenv.Column{{Name: "v", Type: "STRING"}}})
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "pk", BucketCount: 1, PrimaryKey: []string{"id"},
		Columns:          []testenv.Column{{Name: "id", Type: "INT", Nullable: testenv.NotNull()}, {Name: "v", Type: "STRING"}},
		CustomProperties: enabled()})
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "parted", BucketCount: 1, PartitionKeys: []string{"dt"},
		Columns:          []testenv.Column{{Name: "v", Type: "STRING"}, {Name: "dt", Type: "STRING"}},
		CustomProperties: enabled()})
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "keyed", BucketCount: 2, BucketKeys: []string{"id"},
		Columns:          []testenv.Column{{Name: "id", Type: "INT"}, {Name: "v", Type: "STRING"}},
		CustomProperties: enabled()})
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "pkparted", BucketCount: 2, PrimaryKey: []string{"id", "dt"}, PartitionKeys: []string{"dt"},
		Columns: []testenv.Column{{Name: "id", Type: "INT", Nullable: testenv.NotNull()}, {Name: "dt", Type: "STRING", Nullable: testenv.NotNull()},
			{Name: "v", Type: "STRING"}},
		Properties:       map[string]string{"table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "DAY"},
		CustomProperties: enabled()})
	// Still refused: a primary-key table whose rows Ferry cannot encode.
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "nested", BucketCount: 1, PrimaryKey: []string{"id"},
		Columns:          []testenv.Column{{Name: "id", Type: "INT", Nullable: testenv.NotNull()}, {Name: "tags", Type: "ARRAY<STRING>"}},
		CustomProperties: enabled()})

	c := realCatalog(t, f.Bootstrap, catalogConfig(db))
	ctx := ctxFor(t, time.Minute)
	topics, err := c.Topics(ctx)
	for errors.Is(err, catalog.ErrNotLoaded) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		topics, err = c.Topics(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range topics {
		// Auto-partitioning made partitions of pkparted: topics of their own (TestIntegrationPartitionTopics).
		if p := m.GetFlussPartition(); p != nil {
			if p.GetTableTopic() != db+".pkparted" {
				t.Errorf("topic %s is a partition of %s", m.Topic, p.GetTableTopic())
			}
			continue
		}
		names = append(names, m.Topic)
	}
	want := []string{db + ".keyed", db + ".orders", db + ".parted", db + ".pk", db + ".pkparted", linesTopic}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("topics = %v, want exactly %v", names, want)
	}

	byName := map[string]*catalogv1.TopicMapping{}
	for _, m := range topics {
		byName[m.Topic] = m
	}
	o := byName[db+".orders"]
	if o.TableId != orders.TableID || o.SchemaId != orders.SchemaID || o.PartitionCount != 3 || o.Table != "orders" || o.Database != db {
		t.Errorf("orders: table %d schema %d partitions %d; helper says table %d schema %d", o.TableId, o.SchemaId, o.PartitionCount, orders.TableID, orders.SchemaID)
	}
	if o.ArrowCompression != catalogv1.ArrowCompression_ARROW_COMPRESSION_NONE {
		t.Errorf("orders compression = %s", o.ArrowCompression)
	}
	m := o.Mapping
	if m.ValueFormat != catalogv1.ValueFormat_VALUE_FORMAT_JSON || m.KeyColumn != "k" || m.TimestampColumn != "ts" ||
		m.HeadersColumn != "h" || m.UnknownFields != catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT {
		t.Errorf("orders mapping = %v", m)
	}
	wantCols := []struct {
		name string
		root catalogv1.TypeRoot
	}{
		{"id", catalogv1.TypeRoot_TYPE_ROOT_BIGINT}, {"item", catalogv1.TypeRoot_TYPE_ROOT_STRING},
		{"price", catalogv1.TypeRoot_TYPE_ROOT_DECIMAL}, {"k", catalogv1.TypeRoot_TYPE_ROOT_STRING},
		{"ts", catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ}, {"h", catalogv1.TypeRoot_TYPE_ROOT_MAP},
	}
	if len(o.Columns) != len(wantCols) {
		t.Fatalf("orders columns = %v", o.Columns)
	}
	for i, w := range wantCols {
		if c := o.Columns[i]; c.Name != w.name || c.Type.Root != w.root || !c.Type.Nullable {
			t.Errorf("orders column %d = %v, want nullable %s %s", i, c, w.name, w.root)
		}
	}
	if p := o.Columns[2].Type; p.Precision != 10 || p.Scale != 2 {
		t.Errorf("price type = %v", p)
	}
	if h := o.Columns[5].Type; h.Key.GetRoot() != catalogv1.TypeRoot_TYPE_ROOT_STRING || h.Value.GetRoot() != catalogv1.TypeRoot_TYPE_ROOT_BYTES {
		t.Errorf("headers type = %v", h)
	}
	l := byName[linesTopic]
	if l.TableId != lines.TableID || l.PartitionCount != 2 || l.Mapping.ValueColumn != "line" ||
		l.Mapping.ValueFormat != catalogv1.ValueFormat_VALUE_FORMAT_STRING ||
		l.ArrowCompression != catalogv1.ArrowCompression_ARROW_COMPRESSION_ZSTD || l.ArrowCompressionLevel != 3 {
		t.Errorf("lines = %v", l)
	}

	// The shapes as Fluss reports them: a primary-key table's bucket key is its primary key.
	for topic, w := range map[string]struct {
		kind                  catalogv1.TableKind
		pk, parts, bucketKeys string
	}{
		db + ".pk":     {catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, "id", "", "id"},
		db + ".parted": {catalogv1.TableKind_TABLE_KIND_LOG, "", "dt", ""},
		db + ".keyed":  {catalogv1.TableKind_TABLE_KIND_LOG, "", "", "id"},
		// Partitioned: the bucket key is the primary key without the partition key.
		db + ".pkparted": {catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, "id,dt", "dt", "id"},
	} {
		m := byName[topic]
		if m.GetKind() != w.kind || strings.Join(m.GetPrimaryKeys(), ",") != w.pk || strings.Join(m.GetPartitionKeys(), ",") != w.parts ||
			strings.Join(m.GetBucketKeys(), ",") != w.bucketKeys {
			t.Errorf("%s: kind %s, primary key %v, partition keys %v, bucket keys %v; want %+v", topic, m.GetKind(), m.GetPrimaryKeys(),
				m.GetPartitionKeys(), m.GetBucketKeys(), w)
		}
	}

	if auto := byName[db+".pkparted"].GetAutoPartitionOptions(); auto["table.auto-partition.enabled"] != "true" ||
		!strings.EqualFold(auto["table.auto-partition.time-unit"], "DAY") {
		t.Errorf("pkparted: auto-partition options %v", auto)
	}
	for _, topic := range []string{db + ".pk", db + ".keyed"} { // not partitioned
		if auto := byName[topic].GetAutoPartitionOptions(); len(auto) != 0 {
			t.Errorf("%s: auto-partition options %v, want none", topic, auto)
		}
	}

	results := c.Resolve(ctx, []string{db + ".hidden", db + ".nested", db + ".lines", db + ".absent"})
	wantRes := []struct {
		code int16
		msg  string
	}{
		{kerr.UnknownTopicOrPartition.Code, "kafka.enabled=true"},
		{kerr.InvalidTopicException.Code, "primary-key table rows: "},
		{kerr.UnknownTopicOrPartition.Code, "does not exist"}, // renamed by kafka.topic
		{kerr.UnknownTopicOrPartition.Code, "does not exist"},
	}
	for i, w := range wantRes {
		if r := results[i]; r.Code != w.code || !strings.Contains(r.Message, w.msg) {
			t.Errorf("%s: code %d %q, want %d containing %q", r.Topic, r.Code, r.Message, w.code, w.msg)
		}
	}
}

func TestIntegrationLateAndDroppedTables(t *testing.T) {
	f := testenv.Fluss(t)
	db := f.NewDatabase(t, "catalogit")
	const interval = 2 * time.Second
	cfg := catalogConfig(db)
	cfg.RefreshInterval = interval
	c := realCatalog(t, f.Bootstrap, cfg)
	spec := func(table string) testenv.TableSpec {
		return testenv.TableSpec{Database: db, Table: table, BucketCount: 1,
			Columns: []testenv.Column{{Name: "v", Type: "STRING"}}, CustomProperties: enabled()}
	}
	ctx := ctxFor(t, 2*time.Minute)

	// Created after start: found by the first lookup, which refreshes.
	first := f.NewTable(t, spec("first"))
	r := c.Resolve(ctx, []string{db + ".first"})[0]
	if r.Code != 0 || r.Mapping.TableId != first.TableID {
		t.Fatalf("first lookup of a new table: %+v", r)
	}

	// Created later, never looked up: the periodic refresh finds it.
	f.NewTable(t, spec("second"))
	created := time.Now()
	waitUntil(t, ctx, "second to appear", func() bool {
		s := c.Snapshot()
		_, ok := s.Lookup(db + ".second")
		return ok
	})
	// One interval, plus the time a refresh takes on a shared dev cluster.
	if took := time.Since(created); took > interval+5*time.Second {
		t.Errorf("second appeared after %s, refresh interval is %s", took, interval)
	}

	// Dropped: gone after the next refresh.
	if err := f.Helper.DropTable(ctx, db, "first"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "first to disappear", func() bool {
		_, ok := c.Snapshot().Lookup(db + ".first")
		return !ok
	})
	if r := c.Resolve(ctx, []string{db + ".first"})[0]; r.Code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("dropped table: %+v", r)
	}

	// Recreated under the same name: a new table id, so a new topic id.
	again := f.NewTable(t, spec("first"))
	r2 := c.Resolve(ctx, []string{db + ".first"})[0]
	if r2.Code != 0 || r2.Mapping.TableId != again.TableID || string(r2.Mapping.TopicId) == string(r.Mapping.TopicId) {
		t.Errorf("recreated table: %+v (before: table %d)", r2, r.Mapping.TableId)
	}
}

func TestIntegrationAllDatabases(t *testing.T) {
	f := testenv.Fluss(t)
	db := f.NewDatabase(t, "catalogit")
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "t", BucketCount: 1,
		Columns: []testenv.Column{{Name: "v", Type: "STRING"}}, CustomProperties: enabled()})
	// Every database of the shared cluster, whatever other tests put there:
	// only this one table must be found and nothing may fail the refresh.
	c := realCatalog(t, f.Bootstrap, catalogConfig())
	ctx := ctxFor(t, time.Minute)
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if r := c.Resolve(ctx, []string{db + ".t"})[0]; r.Code != 0 {
		t.Errorf("%+v", r)
	}
}

func TestIntegrationFlussUnreachable(t *testing.T) {
	// A port nothing listens on: dials are refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	cfg := catalogConfig()
	cfg.RefreshInterval = 50 * time.Millisecond
	c := realCatalog(t, addr, cfg)
	ctx := ctxFor(t, 30*time.Second)
	for range 3 {
		r := c.Resolve(ctx, []string{"shop.orders"})[0]
		if r.Code != kerr.LeaderNotAvailable.Code || !strings.Contains(r.Message, addr) {
			t.Fatalf("unreachable Fluss: %+v, want LEADER_NOT_AVAILABLE naming %s", r, addr)
		}
		time.Sleep(60 * time.Millisecond) // let the loop fail a few times too
	}
	if _, err := c.Topics(ctx); !errors.Is(err, catalog.ErrNotLoaded) {
		t.Errorf("Topics = %v, want ErrNotLoaded", err)
	}
}

func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// proxy forwards TCP connections to target until closed, so a test can
// take Fluss away from a client without touching the shared cluster.
type proxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); _, _ = io.Copy(out, in); out.Close() }()
		go func() { defer p.wg.Done(); _, _ = io.Copy(in, out); in.Close() }()
	}
}

// close stops accepting and cuts every forwarded connection.
func (p *proxy) close() {
	p.l.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

func TestIntegrationFlussGoesAwayKeepsLastState(t *testing.T) {
	f := testenv.Fluss(t)
	db := f.NewDatabase(t, "catalogit")
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "t", BucketCount: 1,
		Columns: []testenv.Column{{Name: "v", Type: "STRING"}}, CustomProperties: enabled()})
	p := newProxy(t, f.Bootstrap)
	c := realCatalog(t, p.addr(), catalogConfig(db))
	ctx := ctxFor(t, time.Minute)
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if r := c.Resolve(ctx, []string{db + ".t"})[0]; r.Code != 0 {
		t.Fatalf("before the outage: %+v", r)
	}

	p.close()
	if err := c.Refresh(ctx); err == nil {
		t.Fatal("refresh succeeded without Fluss")
	}
	// The last good state is served; unknown names are unknown, not
	// "not loaded".
	r := c.Resolve(ctx, []string{db + ".t", db + ".other"})
	if r[0].Code != 0 || r[1].Code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("during the outage: %+v", r)
	}
	if topics, err := c.Topics(ctx); err != nil || len(topics) != 1 {
		t.Errorf("Topics during the outage = %v, %v", topics, err)
	}
}

// TestIntegrationPartitionTopics: each partition of a partitioned table is a topic, from the
// catalog's first refresh on, and one created later is found by the first lookup of its name.
func TestIntegrationPartitionTopics(t *testing.T) {
	f := testenv.Fluss(t)
	db := f.NewDatabase(t, "catalogit")
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "daily", BucketCount: 2, PartitionKeys: []string{"dt"},
		Columns:          []testenv.Column{{Name: "v", Type: "STRING"}, {Name: "dt", Type: "STRING", Nullable: testenv.NotNull()}},
		CustomProperties: enabled()})
	ctx := ctxFor(t, 2*time.Minute)
	fc, err := fluss.Dial(ctx, f.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	path := fluss.TablePath{Database: db, Table: "daily"}
	if err := fc.CreatePartition(ctx, path, fluss.PartitionSpec{"dt": "a"}, false); err != nil {
		t.Fatal(err)
	}
	c := realCatalog(t, f.Bootstrap, catalogConfig(db))
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if e, ok := c.Snapshot().Lookup(db + ".daily.a"); !ok || e.Mapping.GetFlussPartition().GetName() != "a" {
		t.Fatalf("partition a after the first refresh: %+v, %v", e, ok)
	}
	if err := fc.CreatePartition(ctx, path, fluss.PartitionSpec{"dt": "b"}, false); err != nil {
		t.Fatal(err)
	}
	if r := c.Resolve(ctx, []string{db + ".daily.b"})[0]; r.Code != 0 || r.Mapping.GetFlussPartition().GetName() != "b" {
		t.Errorf("first lookup of partition b: %+v", r)
	}
}
