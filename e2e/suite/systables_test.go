package suite

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ferrygw/ferry/e2e/stack"
)

// TestSystemTablesCreatedAtStart: a fetchsvc and a schemasvc started with tables of their own
// create them in Fluss at start, before any group commits or any schema is registered, so that
// the first request does not wait for the creation.
func TestSystemTablesCreatedAtStart(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "systables")
	fetch, ok := e.stack.Spec(stack.Fetch)
	schema, ok2 := e.stack.Spec(stack.Schema)
	if !ok || !ok2 {
		t.Fatal("stack has no fetchsvc or schemasvc spec")
	}
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	addr := func(p int) string { return net.JoinHostPort(e.stack.Config().Host, strconv.Itoa(p)) }
	fs := cloneSpec(fetch, "fetchsvc-systables", map[string]int{"grpc": ports[0]})
	fs.Env["FERRY_LISTEN"] = addr(ports[0])
	fs.Env["FERRY_GROUP_OFFSETS_TABLE"] = db + ".offsets"
	ss := cloneSpec(schema, "schemasvc-systables", map[string]int{"grpc": ports[1], "registry": ports[2]})
	ss.Env["FERRY_LISTEN"] = addr(ports[1])
	ss.Env["FERRY_REGISTRY_LISTEN"] = addr(ports[2])
	ss.Env["FERRY_SCHEMAS_TABLE"] = db + ".schemas"
	startServices(t, e, fs, ss)

	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		tables, err := f.Helper.ListTables(ctx, db)
		cancel()
		if err == nil && slices.Contains(tables, "offsets") && slices.Contains(tables, "schemas") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tables of %s a minute after fetchsvc and schemasvc started: %v, %v; want offsets and schemas", db, tables, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for name, buckets := range map[string]int32{"offsets": 8, "schemas": 1} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		info, err := f.Helper.TableInfo(ctx, db, name)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if info.BucketCount != buckets || info.CustomProperties["kafka.enabled"] != "false" {
			t.Errorf("%s.%s: %d buckets, custom properties %v; want %d buckets, kafka.enabled=false", db, name, info.BucketCount, info.CustomProperties, buckets)
		}
	}
}
