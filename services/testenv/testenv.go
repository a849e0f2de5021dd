package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment variables the test runner sets (tools/test.sh, from ferrystack's env file).
const (
	EnvBootstrap    = "FERRY_TEST_FLUSS_BOOTSTRAP"
	EnvHelper       = "FERRY_TEST_FLUSS_HELPER"
	EnvRequireFluss = "FERRY_TEST_REQUIRE_FLUSS"
	// EnvFaults is the one switch of the fault tests (processes killed or restarted, clusters
	// broken on purpose): they run by default, and FERRY_TEST_FAULTS=0 skips every one of them.
	EnvFaults = "FERRY_TEST_FAULTS"
)

// SkipFaults skips a fault test when FERRY_TEST_FAULTS=0.
func SkipFaults(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvFaults) == "0" {
		t.Skipf("%s=0 turns the fault tests off", EnvFaults)
	}
}

// Cluster is a reachable Fluss cluster plus the Java helper bound to it.
type Cluster struct {
	// Bootstrap is the coordinator address (host:port) clients bootstrap from.
	Bootstrap string
	// Helper runs flusshelper against Bootstrap.
	Helper *Helper

	serversOnce sync.Once
	servers     []Server
	serversErr  error
}

// FlussFromEnv resolves the cluster from the environment. ok is false when
// FERRY_TEST_FLUSS_BOOTSTRAP is unset; the error reports a set but unusable environment.
// Without FERRY_TEST_FLUSS_HELPER the helper is found at e2e/flusshelper/flusshelper above the
// working directory, so a developer only needs to export the bootstrap address.
func FlussFromEnv() (f *Cluster, ok bool, err error) {
	bootstrap := strings.TrimSpace(os.Getenv(EnvBootstrap))
	if bootstrap == "" {
		return nil, false, nil
	}
	command := strings.TrimSpace(os.Getenv(EnvHelper))
	if command == "" {
		command, err = findHelper()
		if err != nil {
			return nil, true, err
		}
	}
	h, err := NewHelper(command, bootstrap)
	if err != nil {
		return nil, true, err
	}
	return &Cluster{Bootstrap: bootstrap, Helper: h}, true, nil
}

// Fluss returns the test cluster, or skips the test when none is configured. With
// FERRY_TEST_REQUIRE_FLUSS=1 (CI) a missing cluster fails the test instead, so a broken
// runner cannot turn integration tests into silent skips.
func Fluss(t testing.TB) *Cluster {
	t.Helper()
	f, ok, err := FlussFromEnv()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if !ok {
		if os.Getenv(EnvRequireFluss) == "1" {
			t.Fatalf("testenv: %s=1 but %s is unset: run the tests with tools/test.sh", EnvRequireFluss, EnvBootstrap)
		}
		t.Skipf("testenv: %s unset; export it (e.g. 127.0.0.1:29122) or run tools/test.sh", EnvBootstrap)
	}
	return f
}

// Servers returns the cluster's servers (waiting up to a minute for it to be ready). The result
// is cached for the life of f.
func (f *Cluster) Servers(t testing.TB) []Server {
	t.Helper()
	f.serversOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		f.servers, f.serversErr = f.Helper.WaitReady(ctx, time.Minute)
	})
	if f.serversErr != nil {
		t.Fatalf("testenv: Fluss at %s not ready: %v", f.Bootstrap, f.serversErr)
	}
	return f.servers
}

// TabletServer returns the first tablet server's address.
func (f *Cluster) TabletServer(t testing.TB) string {
	t.Helper()
	for _, s := range f.Servers(t) {
		if s.Type == "TABLET_SERVER" {
			return s.Addr()
		}
	}
	t.Fatalf("testenv: no tablet server in %v", f.servers)
	return ""
}

// NewDatabase creates a database with a unique name starting with prefix and drops it (with
// its tables) when the test ends.
func (f *Cluster) NewDatabase(t testing.TB, prefix string) string {
	t.Helper()
	name := UniqueName(prefix)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Helper.CreateDatabase(ctx, name, false); err != nil {
		t.Fatalf("testenv: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := f.Helper.DropDatabase(ctx, name, true); err != nil {
			t.Errorf("testenv: drop database %s: %v", name, err)
		}
	})
	return name
}

// NewTable creates the table spec describes and drops it when the test ends.
func (f *Cluster) NewTable(t testing.TB, spec TableSpec) TableInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := f.Helper.CreateTable(ctx, spec)
	if err != nil {
		t.Fatalf("testenv: create table %s.%s: %v", spec.Database, spec.Table, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := f.Helper.DropTable(ctx, spec.Database, spec.Table); err != nil {
			t.Errorf("testenv: drop table %s.%s: %v", spec.Database, spec.Table, err)
		}
	})
	return info
}

// Lookup looks up primary keys with the Java Lookuper (see Helper.Lookup) and fails the test on
// error.
func (f *Cluster) Lookup(t testing.TB, database, table string, keys []map[string]any) []LookupRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := f.Helper.Lookup(ctx, database, table, keys)
	if err != nil {
		t.Fatalf("testenv: lookup %d keys in %s.%s: %v", len(keys), database, table, err)
	}
	return rows
}

// Scan reads a log table or a primary-key table's changelog (see Helper.Scan) and fails the
// test on error.
func (f *Cluster) Scan(t testing.TB, database, table string, opts ScanOptions) []ScanRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scanBudget(opts))
	defer cancel()
	rows, err := f.Helper.Scan(ctx, database, table, opts)
	if err != nil {
		t.Fatalf("testenv: scan %s.%s (%d rows read): %v", database, table, len(rows), err)
	}
	return rows
}

// Write writes rows with the Java writers (see Helper.Write) and fails the test on error.
func (f *Cluster) Write(t testing.TB, database, table string, rows []map[string]any) WriteResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := f.Helper.Write(ctx, database, table, rows, WriteOptions{})
	if err != nil {
		t.Fatalf("testenv: write %d rows to %s.%s: %v", len(rows), database, table, err)
	}
	return res
}

// scanBudget leaves the JVM time to start and report on top of the scan's own timeout, so the
// helper's precise error wins over a context deadline.
func scanBudget(opts ScanOptions) time.Duration {
	d := opts.Timeout
	if d <= 0 {
		d = 30 * time.Second
	}
	return d + 30*time.Second
}

// UniqueName returns prefix + "_" + 10 random hex digits: a valid Fluss database or table name
// that parallel tests and reruns against a shared cluster do not collide on.
func UniqueName(prefix string) string {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("testenv: crypto/rand: %v", err))
	}
	if prefix == "" {
		prefix = "t"
	}
	return prefix + "_" + hex.EncodeToString(b[:])
}

// findHelper locates e2e/flusshelper/flusshelper in the repository above the working directory.
func findHelper() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "e2e", "flusshelper", "flusshelper")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s unset and no e2e/flusshelper/flusshelper above %s", EnvHelper, dir)
		}
	}
}
