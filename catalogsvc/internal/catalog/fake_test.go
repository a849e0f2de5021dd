package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrygw/ferry/catalogsvc/internal/mapping"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// fakeFluss is an in-memory Fluss coordinator.
type fakeFluss struct {
	mu     sync.Mutex
	dbs    map[string]map[string]mapping.Table
	err    error            // every call fails with it when set
	getErr map[string]error // per "db.table"
	gate   chan struct{}    // when set, ListDatabases waits for it to close
	lists  atomic.Int32     // ListDatabases calls
	gets   atomic.Int32     // GetTable calls
	parts  atomic.Int32     // ListPartitions calls
	nextID int64
}

func newFake() *fakeFluss {
	return &fakeFluss{dbs: map[string]map[string]mapping.Table{}, getErr: map[string]error{}, nextID: 100}
}

func (f *fakeFluss) ListDatabases(ctx context.Context) ([]string, error) {
	f.lists.Add(1)
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	var out []string
	for db := range f.dbs {
		out = append(out, db)
	}
	return out, nil
}

func (f *fakeFluss) ListTables(_ context.Context, db string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	tables, ok := f.dbs[db]
	if !ok {
		return nil, fmt.Errorf("database %s: %w", db, ErrNotFound)
	}
	var out []string
	for t := range tables {
		out = append(out, t)
	}
	return out, nil
}

func (f *fakeFluss) GetTable(_ context.Context, db, table string) (mapping.Table, error) {
	f.gets.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return mapping.Table{}, f.err
	}
	if err := f.getErr[db+"."+table]; err != nil {
		return mapping.Table{}, err
	}
	t, ok := f.dbs[db][table]
	if !ok {
		return mapping.Table{}, fmt.Errorf("table %s.%s: %w", db, table, ErrNotFound)
	}
	return t, nil
}

func (f *fakeFluss) ListPartitions(_ context.Context, db, table string) ([]mapping.Partition, error) {
	f.parts.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	t, ok := f.dbs[db][table]
	if !ok {
		return nil, fmt.Errorf("table %s.%s: %w", db, table, ErrNotFound)
	}
	return slices.Clone(t.Partitions), nil
}

// create adds a log table with a JSON mapping; props are custom properties
// on top of kafka.enabled=true.
func (f *fakeFluss) create(db, table string, props ...string) mapping.Table {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	t := mapping.Table{
		Database: db, Name: table, TableID: f.nextID, SchemaID: 1, BucketCount: 2,
		Columns: []types.Field{
			{Name: "id", Type: types.DataType{Root: types.BigInt, Nullable: true}},
			{Name: "name", Type: types.DataType{Root: types.String, Nullable: true}},
		},
		Properties:       map[string]string{},
		CustomProperties: map[string]string{mapping.PropEnabled: "true"},
	}
	for i := 0; i+1 < len(props); i += 2 {
		t.CustomProperties[props[i]] = props[i+1]
	}
	if f.dbs[db] == nil {
		f.dbs[db] = map[string]mapping.Table{}
	}
	f.dbs[db][table] = t
	return t
}

func (f *fakeFluss) alter(db, table string, mod func(*mapping.Table)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.dbs[db][table]
	// Copy on write, as a real client returns fresh values per call: the
	// catalog may hold the previous version.
	t.Properties = maps.Clone(t.Properties)
	t.CustomProperties = maps.Clone(t.CustomProperties)
	t.Columns = slices.Clone(t.Columns)
	mod(&t)
	f.dbs[db][table] = t
}

func (f *fakeFluss) drop(db, table string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.dbs[db], table)
}

func (f *fakeFluss) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// logBuffer collects log lines for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), substr)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func testConfig() Config {
	return Config{
		// Long enough that no periodic refresh happens during a test: the
		// tests trigger refreshes themselves.
		RefreshInterval: time.Hour,
		RefreshTimeout:  10 * time.Second,
		MinRefreshGap:   0,
		Concurrency:     4,
		Mapping:         mapping.Options{ClusterID: "test", Exposure: mapping.ExposeOptIn},
	}
}

// startCatalog starts a catalog and waits for its first refresh to finish
// (successfully or not).
func startCatalog(t *testing.T, f Fluss, cfg Config, opts ...Option) (*Catalog, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := New(f, cfg, log, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	// Wait for the loop's first refresh, so that no refresh of the loop
	// runs behind the test's back afterwards.
	waitFor(t, "the first refresh", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.lastStart.IsZero() && c.flight == nil
	})
	return c, logs
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var errUnreachable = errors.New("dial tcp 127.0.0.1:1: connection refused")

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
