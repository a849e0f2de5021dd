package systable

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestRealCreateAppendScan: on a real cluster a table is created with its
// database and used; a second process finds it; and when the table is
// dropped and created again by another process, a process holding the old
// table's id appends to the new one and reads only what is in it.
func TestRealCreateAppendScan(t *testing.T) {
	cluster := testenv.Fluss(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dial := func() *fluss.Client {
		c, err := fluss.Dial(ctx, cluster.Bootstrap)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c1, c2 := dial(), dial()
	db := testenv.UniqueName("systable")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = cluster.Helper.DropDatabase(ctx, db, true)
	})
	spec := Spec{Path: db + ".log", Columns: columns, Buckets: 2, Comment: "systable test",
		Properties: map[string]string{"table.log.ttl": "0ms"}}
	open := func(c *fluss.Client) *Table {
		tbl, err := New(c, spec, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	p1 := open(c1)
	for _, k := range []string{"a", "b"} {
		if err := p1.Append(ctx, 1, rows(t, p1, k)); err != nil {
			t.Fatal(err)
		}
	}
	info1, err := p1.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info1.CustomProperties["kafka.enabled"] != "false" || info1.Properties["table.log.ttl"] != "0ms" {
		t.Fatalf("created with custom properties %v, properties %v", info1.CustomProperties, info1.Properties)
	}
	p2 := open(c2)
	if info2, err := p2.Info(ctx); err != nil || info2.TableID != info1.TableID {
		t.Fatalf("second process: %v, %v; want table id %d", info2, err, info1.TableID)
	}
	for _, p := range []*Table{p1, p2} {
		got, next := scan(t, p, 1, 0)
		if got != "a,b" || next != 2 {
			t.Fatalf("bucket 1 from the start: %q up to %d, want a,b up to 2", got, next)
		}
		if got, next := scan(t, p, 1, next); got != "" || next != 2 {
			t.Fatalf("bucket 1 from 2: %q up to %d, want nothing", got, next)
		}
		if got, _ := scan(t, p, 0, 0); got != "" {
			t.Fatalf("bucket 0: %q, want nothing", got)
		}
	}

	if err := c2.DropTable(ctx, p2.Path(), false); err != nil {
		t.Fatal(err)
	}
	p3 := open(c2)
	info3, err := p3.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info3.TableID == info1.TableID {
		t.Fatalf("created again with the same id %d", info3.TableID)
	}
	if err := p1.Append(ctx, 1, rows(t, p1, "c")); err != nil {
		t.Fatalf("append by a process holding the dropped table's id: %v", err)
	}
	if got, _ := scan(t, p1, 1, 0); got != "c" {
		t.Fatalf("after the table was created again: %q, want c", got)
	}
	if info, err := p1.Info(ctx); err != nil || info.TableID != info3.TableID {
		t.Fatalf("first process now uses %v, %v; want table id %d", info, err, info3.TableID)
	}
}

func rows(t *testing.T, tbl *Table, keys ...string) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.Schema())
	defer b.Release()
	for i, k := range keys {
		b.Field(0).(*array.StringBuilder).Append(k)
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	return rec
}

// scan returns the keys read from bucket from offset from, comma
// separated, and the offset after them.
func scan(t *testing.T, tbl *Table, bucket int32, from int64) (string, int64) {
	t.Helper()
	var keys []string
	next, err := tbl.Scan(context.Background(), bucket, from, func(rec arrow.RecordBatch) error {
		col, ok := rec.Column(0).(*array.String)
		if !ok {
			return fmt.Errorf("column 0 is %T", rec.Column(0))
		}
		for i := range col.Len() {
			keys = append(keys, col.Value(i))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(keys, ","), next
}
