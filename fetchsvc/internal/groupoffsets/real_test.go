package groupoffsets

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/systable"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestCommitAndList: the store creates its table on first use; a group's
// list is the last commit of each partition, not mixed with other groups'
// rows in the same bucket, and a second store (a restarted fetchsvc) reads
// the same.
func TestCommitAndList(t *testing.T) {
	cluster := testenv.Fluss(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fc, err := fluss.Dial(ctx, cluster.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	db := testenv.UniqueName("offsets")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = cluster.Helper.DropDatabase(ctx, db, true)
	})
	s, err := New(fc, db+".offsets", systable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	meta := "m"
	commit := func(group string, offs ...*fetchv1.CommittedOffset) {
		t.Helper()
		if err := s.Commit(ctx, group, offs); err != nil {
			t.Fatal(err)
		}
	}
	off := func(topic string, p int32, o int64) *fetchv1.CommittedOffset {
		return &fetchv1.CommittedOffset{Topic: topic, Partition: p, Offset: o, LeaderEpoch: -1, CommitTimeMs: 1_700_000_000_000 + o}
	}
	commit("g1", off("a", 0, 5), off("a", 1, 7))
	commit("g1", off("a", 0, 9))
	withMeta := off("b", 0, 3)
	withMeta.Metadata, withMeta.LeaderEpoch = &meta, 4
	commit("g1", withMeta)
	// Groups sharing g1's bucket, so that the list must filter.
	for i := 0; i < 50; i++ {
		if g := fmt.Sprintf("other-%d", i); bucketOf(g, Buckets) == bucketOf("g1", Buckets) {
			commit(g, off("a", 0, 1000))
		}
	}
	want := "a/0=9 e-1 m<nil> t1700000000009; a/1=7 e-1 m<nil> t1700000000007; b/0=3 e4 mm t1700000000003"
	for _, store := range []*Store{s, mustNew(t, fc, db+".offsets")} {
		got, err := store.List(ctx, "g1")
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, o := range got {
			m := "<nil>"
			if o.Metadata != nil {
				m = *o.Metadata
			}
			lines = append(lines, fmt.Sprintf("%s/%d=%d e%d m%s t%d", o.Topic, o.Partition, o.Offset, o.LeaderEpoch, m, o.CommitTimeMs))
		}
		sort.Strings(lines)
		if got := strings.Join(lines, "; "); got != want {
			t.Fatalf("list = %s\nwant   %s", got, want)
		}
	}
	if got, err := s.List(ctx, "nobody"); err != nil || len(got) != 0 {
		t.Fatalf("list of a group without commits = %v, %v", got, err)
	}
}

func mustNew(t *testing.T, f Fluss, path string) *Store {
	s, err := New(f, path, systable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewRefusesBadPath(t *testing.T) {
	for _, p := range []string{"", "nodot", ".t", "db.", "a.b.c"} {
		if _, err := New(nil, p, systable.Options{}); err == nil {
			t.Errorf("New(%q) accepted", p)
		}
	}
}

// TestDeleteAndGroups: a deleted partition's offset is gone from List,
// also for a second store (a restarted fetchsvc); Groups names the groups
// with a live offset, not one whose offsets were all deleted, and one
// committed again after its delete.
func TestDeleteAndGroups(t *testing.T) {
	cluster := testenv.Fluss(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fc, err := fluss.Dial(ctx, cluster.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	db := testenv.UniqueName("offsets")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = cluster.Helper.DropDatabase(ctx, db, true)
	})
	s := mustNew(t, fc, db+".offsets")
	off := func(topic string, p int32, o int64) *fetchv1.CommittedOffset {
		return &fetchv1.CommittedOffset{Topic: topic, Partition: p, Offset: o, LeaderEpoch: -1, CommitTimeMs: 1_700_000_000_000}
	}
	for _, g := range []string{"keep", "drop", "again"} {
		if err := s.Commit(ctx, g, []*fetchv1.CommittedOffset{off("a", 0, 5), off("a", 1, 6), off("b", 0, 7)}); err != nil {
			t.Fatal(err)
		}
	}
	part := func(topic string, p int32) *fetchv1.OffsetPartition {
		return &fetchv1.OffsetPartition{Topic: topic, Partition: p}
	}
	if err := s.Delete(ctx, "keep", []*fetchv1.OffsetPartition{part("a", 0), part("a", 1)}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"drop", "again"} {
		if err := s.Delete(ctx, g, []*fetchv1.OffsetPartition{part("a", 0), part("a", 1), part("b", 0)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx, "again", []*fetchv1.CommittedOffset{off("a", 1, 9)}); err != nil {
		t.Fatal(err)
	}
	for _, store := range []*Store{s, mustNew(t, fc, db+".offsets")} {
		got, err := store.List(ctx, "keep")
		if err != nil || len(got) != 1 || got[0].Topic != "b" || got[0].Offset != 7 {
			t.Fatalf("keep after deleting topic a: %v, %v", got, err)
		}
		if got, err := store.List(ctx, "drop"); err != nil || len(got) != 0 {
			t.Fatalf("drop after deleting all: %v, %v", got, err)
		}
		if got, err := store.List(ctx, "again"); err != nil || len(got) != 1 || got[0].Offset != 9 {
			t.Fatalf("again after a new commit: %v, %v", got, err)
		}
		groups, err := store.Groups(ctx)
		if err != nil || strings.Join(groups, ",") != "again,keep" {
			t.Fatalf("groups = %v, %v; want again,keep", groups, err)
		}
	}
}
