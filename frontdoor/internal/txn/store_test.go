package txn

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memStore is a Store in memory, shared by coordinators that stand for
// frontdoors taking over each other's transactional ids.
type memStore struct {
	mu       sync.Mutex
	logs     map[string][]byte
	failNext bool
}

func newMemStore() *memStore { return &memStore{logs: map[string][]byte{}} }

func (m *memStore) fail() error {
	if m.failNext {
		m.failNext = false
		return errors.New("store unavailable")
	}
	return nil
}

func (m *memStore) Reset(id string, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail(); err != nil {
		return err
	}
	m.logs[id] = append([]byte(nil), b...)
	return nil
}

func (m *memStore) Append(id string, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail(); err != nil {
		return err
	}
	m.logs[id] = append(m.logs[id], b...)
	return nil
}

func (m *memStore) Forget(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.logs, id)
	return nil
}

func (m *memStore) Load() ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out [][]byte
	for _, b := range m.logs {
		out = append(out, append([]byte(nil), b...))
	}
	return out, nil
}

func stored(t *testing.T, s Store, f *fakeBackend) *Coordinator {
	t.Helper()
	c, err := New(Config{Store: s, RetryPause: time.Millisecond}, f, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestStoreHandsAnInterruptedCommitToTheNextCoordinator: coordinator A
// decides a commit and dies after storing part of it; B, started on the
// same Store and no local state, finishes it with A's writer, each batch
// stored once.
func TestStoreHandsAnInterruptedCommitToTheNextCoordinator(t *testing.T) {
	s := newMemStore()
	f := newFake()
	a := stored(t, s, f)
	ctx := context.Background()
	pid, epoch, _ := a.InitProducer(ctx, "tx", time.Minute, -1, -1)
	a.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}, {"b", 0}})
	for _, st := range []*Staged{staged("a", 0, 0, 0, 1), staged("b", 0, 0, 0, 2), staged("a", 0, 1, 1, 1)} {
		if r := a.Stage("tx", pid, epoch, st); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	f.mu.Lock()
	f.failAfter, f.failAppends = 1, 1<<30
	f.mu.Unlock()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	wantErr(t, "commit on A", a.End(short, "tx", pid, epoch, true), kerr.ConcurrentTransactions)
	a.Close()
	f.mu.Lock()
	f.failAfter, f.failAppends = 0, 0
	writer := f.appends[0].WriterId
	f.mu.Unlock()

	b := stored(t, s, f)
	wantErr(t, "commit retried on B", b.End(ctx, "tx", pid, epoch, true), nil)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.appends) != 3 {
		t.Fatalf("%d batches stored, want each of the 3 once", len(f.appends))
	}
	for i, ap := range f.appends {
		if ap.WriterId != writer {
			t.Fatalf("batch %d written by writer %d, want A's %d", i, ap.WriterId, writer)
		}
	}
	if in, _ := b.Describe("tx"); in.State != CompleteCommit || in.Epoch != epoch {
		t.Fatalf("on B after the commit: %+v", in)
	}
}

// TestStoreFailureIsAStorageError: a journal write that fails is
// answered KAFKA_STORAGE_ERROR and changes nothing; the next goes through.
func TestStoreFailureIsAStorageError(t *testing.T) {
	s := newMemStore()
	c := stored(t, s, newFake())
	ctx := context.Background()
	pid, epoch, _ := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	s.mu.Lock()
	s.failNext = true
	s.mu.Unlock()
	wantErr(t, "add partitions, store down", c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}}), kerr.KafkaStorageError)
	if in, _ := c.Describe("tx"); len(in.Partitions) != 0 {
		t.Fatalf("partitions added though the journal failed: %+v", in)
	}
	wantErr(t, "add partitions", c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}}), nil)
}

// Read makes memStore a Reader, a journal shared by frontdoors.
func (m *memStore) Read(id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.logs[id]
	if !ok {
		return nil, nil
	}
	return append([]byte(nil), b...), nil
}

// TestRunningCoordinatorTakesOverAnID: B runs before A opens a
// transaction; when A dies, B reads the id's journal at its first request
// and the transaction goes on there and commits everything A staged.
func TestRunningCoordinatorTakesOverAnID(t *testing.T) {
	s := newMemStore()
	f := newFake()
	b := stored(t, s, f)
	a := stored(t, s, f)
	ctx := context.Background()
	pid, epoch, _ := a.InitProducer(ctx, "tx", time.Minute, -1, -1)
	a.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}})
	if r := a.Stage("tx", pid, epoch, staged("a", 0, 0, 1, 1)); r.Err != nil {
		t.Fatal(r.Err)
	}
	a.Close()

	wantErr(t, "add partitions on B", b.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 1}}), nil)
	if r := b.Stage("tx", pid, epoch, staged("a", 0, 2, 2, 1)); r.Err != nil {
		t.Fatalf("stage on B: %+v", r)
	}
	wantErr(t, "commit on B", b.End(ctx, "tx", pid, epoch, true), nil)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.appends) != 2 {
		t.Fatalf("%d batches stored, want A's and B's", len(f.appends))
	}
}

// TestADirStoreIsNotShared: without a Reader an unknown id stays unknown.
func TestADirStoreIsNotShared(t *testing.T) {
	c := journaled(t, t.TempDir(), newFake())
	wantErr(t, "unknown id", c.AddPartitions("tx", 1, 0, nil), kerr.InvalidProducerIDMapping)
}
