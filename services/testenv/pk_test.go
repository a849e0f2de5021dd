package testenv

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestJavaPrimaryKeyReadBack upserts, updates and deletes keys of a primary-key table with the Java UpsertWriter and reads them back both ways the #12 tests need: point
// lookups (the latest row per key, deleted keys absent, a never-written key absent) and the
// changelog scan (+I, -U/+U, -D in order per key).
func TestJavaPrimaryKeyReadBack(t *testing.T) {
	f := Fluss(t)
	db := f.NewDatabase(t, "testenv_pk")
	spec := TableSpec{
		Database: db,
		Table:    "users",
		Columns: []Column{
			{Name: "region", Type: "STRING", Nullable: NotNull()},
			{Name: "id", Type: "BIGINT", Nullable: NotNull()},
			{Name: "name", Type: "STRING"},
			{Name: "score", Type: "INT"},
		},
		PrimaryKey:  []string{"region", "id"},
		BucketCount: 2,
	}
	info := f.NewTable(t, spec)
	if len(info.PrimaryKey) != 2 {
		t.Fatalf("table info = %+v, want a two-column primary key", info)
	}
	ctx := t.Context()

	key := func(region string, id int) map[string]any { return map[string]any{"region": region, "id": id} }
	row := func(region string, id int, name string, score int) map[string]any {
		return map[string]any{"region": region, "id": id, "name": name, "score": score}
	}
	changes := []map[string]any{
		row("eu", 1, "ann", 10),
		row("us", 2, "bob", 20),
		row("eu", 3, "cid", 30),
		row("eu", 1, "ann", 11), // update
		Delete(key("us", 2)),
		Delete(key("eu", 9)),    // never written: not an error, no changelog entry
		row("us", 2, "bob", 21), // back after its delete
		Delete(key("eu", 3)),
	}
	res := f.Write(t, db, spec.Table, changes)
	if res.Rows != int64(len(changes)) || res.Deletes != 3 {
		t.Fatalf("write summary = %+v, want %d rows and 3 deletes", res, len(changes))
	}

	got := f.Lookup(t, db, spec.Table, []map[string]any{key("eu", 1), key("us", 2), key("eu", 3), key("eu", 9)})
	want := []struct {
		found bool
		name  string
		score string
	}{{true, "ann", "11"}, {true, "bob", "21"}, {false, "", ""}, {false, "", ""}}
	for i, w := range want {
		g := got[i]
		if g.Found != w.found || (g.Row == nil) == w.found {
			t.Errorf("lookup %v: found=%v row=%v, want found=%v", g.Key, g.Found, g.Row, w.found)
			continue
		}
		if w.found && (g.Row["name"] != w.name || fmt.Sprint(g.Row["score"]) != w.score) {
			t.Errorf("lookup %v: row %v, want name %s score %s", g.Key, g.Row, w.name, w.score)
		}
	}

	// The changelog per key, in offset order (a key stays in one bucket).
	scan := f.Scan(t, db, spec.Table, ScanOptions{Timeout: 30 * time.Second})
	sort.SliceStable(scan, func(i, j int) bool { return scan[i].Offset < scan[j].Offset })
	perKey := map[string][]string{}
	for _, r := range scan {
		k := fmt.Sprintf("%v/%v", r.Row["region"], r.Row["id"])
		perKey[k] = append(perKey[k], r.ChangeType+":"+fmt.Sprint(r.Row["score"]))
	}
	wantLog := map[string]string{
		"eu/1": "+I:10 -U:10 +U:11",
		"us/2": "+I:20 -D:20 +I:21",
		"eu/3": "+I:30 -D:30",
	}
	if len(perKey) != len(wantLog) {
		t.Errorf("changelog keys %v, want %v", perKey, wantLog)
	}
	for k, w := range wantLog {
		if g := strings.Join(perKey[k], " "); g != w {
			t.Errorf("changelog of %s = %q, want %q", k, g, w)
		}
	}

	// A delete line must name exactly the primary key: a bad one fails before anything is written.
	_, err := f.Helper.Write(ctx, db, spec.Table, []map[string]any{row("eu", 5, "eve", 50), Delete(map[string]any{"id": 1})}, WriteOptions{})
	if err == nil || !strings.Contains(err.Error(), "primary key") {
		t.Errorf("delete without the whole key: err = %v, want one naming the primary key", err)
	}
	if g := f.Lookup(t, db, spec.Table, []map[string]any{key("eu", 5)}); g[0].Found {
		t.Errorf("row of a refused write is stored: %v", g[0].Row)
	}
}
