package catalog

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/catalogsvc/internal/mapping"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// partitioned makes a table of f partitioned by dt, with partitions.
func partitioned(f *fakeFluss, db, table string, parts ...mapping.Partition) {
	f.alter(db, table, func(t *mapping.Table) {
		t.Columns = append(t.Columns, types.Field{Name: "dt", Type: types.DataType{Root: types.String}})
		t.PartitionKeys = []string{"dt"}
		t.Partitions = parts
	})
}

func TestPartitionsAreTopics(t *testing.T) {
	f := newFake()
	f.create("shop", "daily")
	partitioned(f, "shop", "daily", mapping.Partition{ID: 11, Values: []string{"20261203"}}, mapping.Partition{ID: 12, Values: []string{"20261204"}})
	c, logs := startCatalog(t, f, testConfig())

	var names []string
	for _, m := range c.Snapshot().Topics() {
		names = append(names, m.Topic)
	}
	if got := strings.Join(names, " "); got != "shop.daily shop.daily.20261203 shop.daily.20261204" {
		t.Fatalf("topics: %s", got)
	}
	r := c.Resolve(ctxT(t), []string{"shop.daily.20261204", "shop.daily"})
	pm, tm := r[0].Mapping, r[1].Mapping
	if pm == nil || pm.FlussPartition.GetId() != 12 || pm.FlussPartition.GetName() != "20261204" ||
		pm.FlussPartition.GetTableTopic() != "shop.daily" || pm.PartitionCount != tm.PartitionCount || pm.TableId != tm.TableId {
		t.Fatalf("partition topic: %+v", r[0])
	}
	if tm.FlussPartition != nil {
		t.Errorf("the table's topic is marked as a partition: %+v", tm.FlussPartition)
	}
	if logs.count("topic exposed") != 3 {
		t.Errorf("want one exposure line per topic:\n%s", logs)
	}

	// A partition created later is found at the first lookup of its topic.
	partitioned(f, "shop", "daily", mapping.Partition{ID: 12, Values: []string{"20261204"}}, mapping.Partition{ID: 13, Values: []string{"20261205"}})
	if r := c.Resolve(ctxT(t), []string{"shop.daily.20261205"})[0]; r.Mapping.GetFlussPartition().GetId() != 13 {
		t.Fatalf("new partition: %+v", r)
	}
	// The dropped one is gone with that refresh, and named as a missing partition.
	r = c.Resolve(ctxT(t), []string{"shop.daily.20261203"})
	if r[0].Code != kerr.UnknownTopicOrPartition.Code || !strings.Contains(r[0].Message, "has no Fluss partition 20261203") {
		t.Errorf("dropped partition: %+v", r[0])
	}
	if logs.count("topic removed: its Fluss partition is gone") != 1 {
		t.Errorf("the dropped partition's removal is not logged once:\n%s", logs)
	}
}

func TestPartitionTopicNameClashes(t *testing.T) {
	f := newFake()
	f.create("shop", "daily")
	partitioned(f, "shop", "daily", mapping.Partition{ID: 1, Values: []string{"x"}}, mapping.Partition{ID: 2, Values: []string{"y"}})
	// A table whose kafka.topic is a partition's topic name keeps it.
	f.create("shop", "other", mapping.PropTopic, "shop.daily.x")
	c, logs := startCatalog(t, f, testConfig())
	r := c.Resolve(ctxT(t), []string{"shop.daily.x", "shop.daily.y"})
	if m := r[0].Mapping; m == nil || m.FlussPartition != nil || m.Table != "other" {
		t.Errorf("shop.daily.x: %+v, want table other's topic", r[0])
	}
	if r[1].Mapping.GetFlussPartition().GetId() != 2 {
		t.Errorf("shop.daily.y: %+v", r[1])
	}
	if !strings.Contains(logs.String(), "is taken by a table's topic") {
		t.Errorf("clash not logged:\n%s", logs)
	}
}

func TestPartitionTopicNameClaimedTwice(t *testing.T) {
	f := newFake()
	// Table a.b with two partition keys and table a.b.c, renamed to topic "a.b" plus a key,
	// would both name topic a.b.c.d.
	f.create("a", "b")
	f.alter("a", "b", func(t *mapping.Table) {
		t.Columns = append(t.Columns, types.Field{Name: "k1", Type: types.DataType{Root: types.String}},
			types.Field{Name: "k2", Type: types.DataType{Root: types.String}})
		t.PartitionKeys = []string{"k1", "k2"}
		t.Partitions = []mapping.Partition{{ID: 1, Values: []string{"c", "d"}}, {ID: 2, Values: []string{"c", "e"}}}
	})
	f.create("x", "y", mapping.PropTopic, "a.b.c")
	partitioned(f, "x", "y", mapping.Partition{ID: 3, Values: []string{"d"}})
	c, logs := startCatalog(t, f, testConfig())
	r := c.Resolve(ctxT(t), []string{"a.b.c.d", "a.b.c.e"})
	if r[0].Mapping != nil || r[1].Mapping.GetFlussPartition().GetId() != 2 {
		t.Errorf("a.b.c.d: %+v (want neither partition), a.b.c.e: %+v", r[0], r[1])
	}
	if n := logs.count("is claimed by several partitions"); n != 2 {
		t.Errorf("%d clash lines, want one per partition:\n%s", n, logs)
	}
}

func TestPartitionsOfTablesNotExposedAreNotListed(t *testing.T) {
	f := newFake()
	f.create("shop", "hidden", mapping.PropEnabled, "false")
	partitioned(f, "shop", "hidden", mapping.Partition{ID: 1, Values: []string{"x"}})
	c, _ := startCatalog(t, f, testConfig())
	if topics := c.Snapshot().Topics(); len(topics) != 0 {
		t.Errorf("topics of a hidden table: %v", topics)
	}
	if n := f.parts.Load(); n != 0 {
		t.Errorf("%d ListPartitions calls for a table that is not a topic", n)
	}
}

func TestStalePartitionIDListsPartitionsAgain(t *testing.T) {
	f := newFake()
	f.create("shop", "daily")
	partitioned(f, "shop", "daily", mapping.Partition{ID: 1, Values: []string{"x"}}, mapping.Partition{ID: 2, Values: []string{"y"}})
	c, _ := startCatalog(t, f, testConfig())
	partitioned(f, "shop", "daily", mapping.Partition{ID: 2, Values: []string{"y"}}) // x dropped
	// Known topics are answered from memory ...
	if r := c.Resolve(ctxT(t), []string{"shop.daily.x"})[0]; r.Mapping == nil {
		t.Fatalf("without a stale id the snapshot was read again: %+v (the test proves nothing)", r)
	}
	// ... unless the caller found the partition gone.
	r := c.ResolveStale(ctxT(t), []string{"shop.daily.x"}, Stale{PartitionIDs: []int64{1}})[0]
	if r.Code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("with partition 1 stale: %+v, want UNKNOWN_TOPIC_OR_PARTITION", r)
	}
	if _, ok := c.Snapshot().Lookup("shop.daily.x"); ok {
		t.Error("the dropped partition's topic is still listed")
	}
}
