package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestFoundation is the acceptance test of the test foundation itself: the Java helper creates
// a database and table in the real Fluss and round-trips rows through it, and Go then speaks
// Fluss's own RPC protocol to both servers and sees that table.
func TestFoundation(t *testing.T) {
	f := testenv.Fluss(t)
	db := f.NewDatabase(t, "e2e_foundation")
	spec := testenv.TableSpec{
		Database: db,
		Table:    "events",
		Columns: []testenv.Column{
			{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
			{Name: "amount", Type: "DECIMAL(12, 3)"},
			{Name: "at", Type: "TIMESTAMP_LTZ(3)"},
			{Name: "payload", Type: "BYTES"},
		},
		BucketCount: 2,
		BucketKeys:  []string{"id"},
	}
	info := f.NewTable(t, spec)
	if info.TableID < 0 || info.BucketCount != 2 {
		t.Fatalf("table info = %+v", info)
	}

	const n = 20
	var rows []map[string]any
	for i := 0; i < n; i++ {
		rows = append(rows, map[string]any{
			"id":      i,
			"amount":  fmt.Sprintf("%d.%03d", i*7, i),
			"at":      1_700_000_000_000 + int64(i),
			"payload": "AAEC",
		})
	}
	f.Write(t, db, spec.Table, rows)
	got := f.Scan(t, db, spec.Table, testenv.ScanOptions{Expect: n, Timeout: 30 * time.Second})
	if len(got) != n {
		t.Fatalf("scanned %d rows, want %d", len(got), n)
	}
	var ids []int
	perBucket := map[int32]int{}
	for _, r := range got {
		id, err := r.Row["id"].(json.Number).Int64()
		if err != nil {
			t.Fatalf("id %v: %v", r.Row["id"], err)
		}
		ids = append(ids, int(id))
		perBucket[r.Bucket]++
		if want := fmt.Sprintf("%d.%03d", id*7, id); r.Row["amount"] != want {
			t.Errorf("row %d amount = %v, want %s", id, r.Row["amount"], want)
		}
		if want := time.UnixMilli(1_700_000_000_000 + id).UTC().Format("2006-01-02T15:04:05.000000000Z"); r.Row["at"] != want {
			t.Errorf("row %d at = %v, want %s", id, r.Row["at"], want)
		}
	}
	sort.Ints(ids)
	for i, id := range ids {
		if id != i {
			t.Fatalf("ids read back = %v, want 0..%d once each", ids, n-1)
		}
	}
	if len(perBucket) != 2 {
		t.Errorf("rows landed in buckets %v; 20 hashed keys should use both", perBucket)
	}

	// Go speaks Fluss RPC to both servers.
	var coordinator, tablet string
	for _, s := range f.Servers(t) {
		switch s.Type {
		case "COORDINATOR":
			coordinator = s.Addr()
		case "TABLET_SERVER":
			tablet = s.Addr()
		}
	}
	if coordinator == "" || tablet == "" {
		t.Fatalf("servers = %+v, want a coordinator and a tablet server", f.Servers(t))
	}
	tests := []struct {
		name       string
		addr       string
		serverType int32 // ServerType ids: 1 coordinator, 2 tablet server
		want       []int32
	}{
		{"coordinator", coordinator, 1, []int32{apiVersions, createTable, listTables, getMetadata}},
		{"tablet", tablet, 2, []int32{apiVersions, getMetadata, produceLog, fetchLog, listOffsets, initWriter}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			w, err := dialWire(ctx, tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			apis, serverType, err := w.apiVersionsCall()
			if err != nil {
				t.Fatalf("ApiVersions: %v", err)
			}
			for _, key := range tc.want {
				r, ok := apis[key]
				if !ok {
					t.Errorf("api %d missing from %d advertised APIs", key, len(apis))
					continue
				}
				if r.Min != 0 || r.Max < r.Min {
					t.Errorf("api %d range %+v, want from 0", key, r)
				}
			}
			if serverType != tc.serverType {
				t.Errorf("server_type = %d, want %d", serverType, tc.serverType)
			}

			// The table the Java helper created is visible over the wire.
			tables, err := w.listTablesCall(db)
			if err != nil {
				t.Fatalf("ListTables: %v", err)
			}
			if len(tables) != 1 || tables[0] != spec.Table {
				t.Errorf("ListTables(%s) = %v, want [%s]", db, tables, spec.Table)
			}
			// A missing database is a typed error frame, not a broken connection.
			_, err = w.listTablesCall(db + "_missing")
			var we *wireError
			if !errors.As(err, &we) || we.Code == 0 {
				t.Errorf("ListTables(missing) err = %v, want a Fluss error frame", err)
			}
			if _, _, err := w.apiVersionsCall(); err != nil {
				t.Errorf("connection unusable after an error frame: %v", err)
			}
		})
	}
}
