package idempotence

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAnchorStoreReload: anchors survive reopening, a torn last line is cut
// off, removals and producer drops stick, and compaction keeps the live
// anchors only.
func TestAnchorStoreReload(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	s, err := openAnchorStore(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openAnchorStore(dir, log); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open of a locked dir: %v", err)
	}
	k1, k2, k3 := anchorKey{1, "t", 0}, anchorKey{1, "t", 1}, anchorKey{2, "t", 0}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	must(s.put(k1, anchor{Writer: 10, TableID: 5, Offset: 3, Time: now.UnixMilli()}))
	must(s.put(k2, anchor{Writer: 10, TableID: 5, Offset: 7, Time: now.UnixMilli()}))
	must(s.put(k3, anchor{Writer: 11, TableID: 5, Offset: 1, Time: now.Add(-2 * time.Hour).UnixMilli()}))
	// Stale advances (another writer, or not forward) are skipped.
	must(s.advance(map[anchorKey]anchor{
		k1: {Writer: 10, TableID: 5, FlussSeq: 4, KafkaSeq: 40, Offset: 9, Time: now.UnixMilli()},
		k2: {Writer: 99, TableID: 5, FlussSeq: 4, Offset: 20},
	}))
	must(s.expire(now, time.Hour, map[int64]time.Time{}))
	must(s.close())
	// A crash in the middle of a write leaves a torn line.
	f, err := os.OpenFile(filepath.Join(dir, anchorJournal), os.O_APPEND|os.O_WRONLY, 0)
	must(err)
	_, err = f.WriteString(`{"p":1,"t":"t","n":0,"a":{"e":0,"w":77`)
	must(err)
	must(f.Close())

	s, err = openAnchorStore(dir, log)
	must(err)
	want := map[anchorKey]anchor{
		k1: {Writer: 10, TableID: 5, FlussSeq: 4, KafkaSeq: 40, Offset: 9, Time: now.UnixMilli()},
		k2: {Writer: 10, TableID: 5, Offset: 7, Time: now.UnixMilli()},
	}
	check := func() {
		t.Helper()
		for k, w := range want {
			if a, ok := s.get(k); !ok || a != w {
				t.Fatalf("%v: %+v %v, want %+v", k, a, ok, w)
			}
		}
		if _, ok := s.get(k3); ok {
			t.Fatal("the idle producer's anchor survived")
		}
	}
	check()
	s.compactMin = 16
	must(s.remove(k2))
	delete(want, k2)
	// Enough advances to make the journal compact itself.
	for i := int64(10); i < 100; i++ {
		a := want[k1]
		a.Offset = i
		must(s.advance(map[anchorKey]anchor{k1: a}))
		want[k1] = a
	}
	must(s.close())
	s, err = openAnchorStore(dir, log)
	must(err)
	defer s.close()
	check()
	if _, ok := s.get(k2); ok {
		t.Fatal("a removed anchor came back")
	}
	if s.lines > 16 {
		t.Fatalf("journal has %d lines for 1 anchor: not compacted", s.lines)
	}
}

// TestAnchorStoreConcurrentPuts: puts from many partitions at once all
// become durable (they share writes) and are read back.
func TestAnchorStoreConcurrentPuts(t *testing.T) {
	dir := t.TempDir()
	s, err := openAnchorStore(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 64)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.put(anchorKey{int64(i), "t", int32(i % 3)}, anchor{Writer: int64(1000 + i), TableID: 5, Offset: int64(i)})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	s, err = openAnchorStore(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for i := range errs {
		if a, ok := s.get(anchorKey{int64(i), "t", int32(i % 3)}); !ok || a.Writer != int64(1000+i) || a.Offset != int64(i) {
			t.Fatalf("anchor %d: %+v %v", i, a, ok)
		}
	}
	if s.lines != 64 {
		t.Fatalf("journal has %d lines, want 64", s.lines)
	}
}
