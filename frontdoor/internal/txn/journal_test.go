package txn

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

func journaled(t *testing.T, dir string, f *fakeBackend) *Coordinator {
	t.Helper()
	c, err := New(Config{StateDir: dir, RetryPause: time.Millisecond}, f, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestJournalKeepsOpenTransactionsAcrossRestarts: a transaction open when
// the coordinator stops goes on after it starts again, and commits all it
// had staged.
func TestJournalKeepsOpenTransactionsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	f := newFake()
	c := journaled(t, dir, f)
	ctx := context.Background()
	pid, epoch, _ := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}, {"a", 1}})
	c.AddGroup("tx", pid, epoch, "g")
	for _, s := range []*Staged{staged("a", 0, 0, 4, 1), staged("a", 1, 0, 0, 1)} {
		if r := c.Stage("tx", pid, epoch, s); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	c.StageOffsets("tx", pid, epoch, "g", []*fetchv1.CommittedOffset{{Topic: "in", Partition: 0, Offset: 9}})
	c.Close()

	c2 := journaled(t, dir, f)
	in, ok := c2.Describe("tx")
	if !ok || in.State != Ongoing || in.ProducerID != pid || in.Epoch != epoch || len(in.Partitions) != 2 {
		t.Fatalf("recovered %+v (found %v)", in, ok)
	}
	if !c2.PendingOffset("g", "in", 0) {
		t.Fatal("recovered offsets are not pending")
	}
	// The next batch continues the partition's sequence.
	if r := c2.Stage("tx", pid, epoch, staged("a", 0, 5, 5, 1)); r.Err != nil {
		t.Fatalf("stage after the restart: %+v", r)
	}
	wantErr(t, "commit", c2.End(ctx, "tx", pid, epoch, true), nil)
	if len(f.appends) != 3 || f.offsets["g"][0].GetOffset() != 9 {
		t.Fatalf("%d batches stored, offsets %v; want 3 and offset 9", len(f.appends), f.offsets["g"])
	}
	// Committed, the file holds the id alone: a third start finds it done.
	c2.Close()
	c3 := journaled(t, dir, f)
	if in, _ := c3.Describe("tx"); in.State != CompleteCommit || in.Epoch != epoch {
		t.Fatalf("after the commit: %+v", in)
	}
	wantErr(t, "old epoch", c3.AddPartitions("tx", pid, epoch-1, nil), kerr.ProducerFenced)
}

// TestJournalFinishesAnInterruptedCommit: a commit cut off after some of
// its batches were stored is finished at the next start with the same
// Fluss writer and numbering: nothing is stored twice.
func TestJournalFinishesAnInterruptedCommit(t *testing.T) {
	dir := t.TempDir()
	f := newFake()
	c := journaled(t, dir, f)
	ctx := context.Background()
	pid, epoch, _ := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}, {"b", 0}})
	for _, s := range []*Staged{staged("a", 0, 0, 0, 1), staged("b", 0, 0, 0, 2), staged("a", 0, 1, 1, 1), staged("a", 0, 2, 2, 1)} {
		c.Stage("tx", pid, epoch, s)
	}
	// The second batch is stored but never answered, and the process dies.
	f.mu.Lock()
	f.failAfter, f.failAppends = 1, 1<<30
	f.mu.Unlock()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	wantErr(t, "commit", c.End(short, "tx", pid, epoch, true), kerr.ConcurrentTransactions)
	c.Close()
	f.mu.Lock()
	f.failAfter, f.failAppends = 0, 0
	writer := f.appends[0].WriterId
	f.mu.Unlock()

	c2 := journaled(t, dir, f)
	wantErr(t, "commit retried after the restart", c2.End(ctx, "tx", pid, epoch, true), nil)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.appends) != 4 {
		t.Fatalf("%d batches stored, want each of the 4 once", len(f.appends))
	}
	for i, a := range f.appends {
		if a.WriterId != writer {
			t.Fatalf("batch %d written by writer %d, want the journaled %d", i, a.WriterId, writer)
		}
	}
	if f.resent == 0 {
		t.Fatal("the batch stored before the restart was not resent: the replay skipped it unrecorded")
	}
}

// TestJournalIgnoresATornLastLine: a write cut short by a crash was never
// acknowledged; the entries before it stand.
func TestJournalIgnoresATornLastLine(t *testing.T) {
	dir := t.TempDir()
	f := newFake()
	c := journaled(t, dir, f)
	ctx := context.Background()
	pid, epoch, _ := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}})
	c.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "txn-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("journal files %v", files)
	}
	fh, err := os.OpenFile(files[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(`{"k":"stage","staged":{"topic":"a","parti`)
	fh.Close()
	c2 := journaled(t, dir, f)
	if in, _ := c2.Describe("tx"); in.State != Ongoing || len(in.Partitions) != 1 {
		t.Fatalf("recovered %+v", in)
	}
}
