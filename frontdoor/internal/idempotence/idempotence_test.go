package idempotence

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// seqAlloc hands out writer ids 100, 101, ... and counts calls.
type seqAlloc struct {
	next  atomic.Int64
	calls atomic.Int64
	fail  atomic.Bool
}

func (a *seqAlloc) alloc(context.Context) (int64, error) {
	a.calls.Add(1)
	if a.fail.Load() {
		return 0, errors.New("fluss down")
	}
	return 100 + a.next.Add(1) - 1, nil
}

func newStates(t *testing.T, cfg Config) (*States, *seqAlloc) {
	t.Helper()
	a := &seqAlloc{}
	ps, err := New(cfg, a.alloc)
	if err != nil {
		t.Fatal(err)
	}
	return ps, a
}

// step is one batch offered to admit and, when admitted, its outcome.
type step struct {
	epoch        int16
	first, count int32
	// want
	code      int16
	answered  int64 // base offset answered from memory; -1: not answered
	writer    int64 // Fluss writer to append with (when admitted)
	flussSeq  int32
	resend    bool
	outcome   outcome
	offset    int64 // stored at (outcomeStored)
	partition int32
}

func TestProducerStatesSequenceRules(t *testing.T) {
	ok := func(epoch int16, first, count int32, writer int64, fseq int32, off int64) step {
		return step{epoch: epoch, first: first, count: count, answered: -1, writer: writer, flussSeq: fseq, outcome: outcomeStored, offset: off}
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"consecutive batches map to consecutive fluss sequences", []step{
			ok(0, 0, 3, 100, 0, 0), ok(0, 3, 1, 100, 1, 3), ok(0, 4, 10, 100, 2, 4),
		}},
		{"retry of an acknowledged batch answers its offset without appending", []step{
			ok(0, 0, 3, 100, 0, 0), ok(0, 3, 2, 100, 1, 3),
			{first: 0, count: 3, answered: 0}, {first: 3, count: 2, answered: 3},
		}},
		{"retry of a batch with unknown outcome is resent with its fluss sequence", []step{
			ok(0, 0, 3, 100, 0, 0),
			{first: 3, count: 2, answered: -1, writer: 100, flussSeq: 1, outcome: outcomeUnknown},
			{first: 3, count: 2, answered: -1, writer: 100, flussSeq: 1, resend: true, outcome: outcomeStored, offset: 3},
			{first: 3, count: 2, answered: 3},
			ok(0, 5, 1, 100, 2, 5),
		}},
		{"gap is out of order", []step{
			ok(0, 0, 3, 100, 0, 0), {first: 4, count: 1, code: kerr.OutOfOrderSequenceNumber.Code},
			ok(0, 3, 1, 100, 1, 3),
		}},
		{"same first sequence with another length is not a duplicate", []step{
			ok(0, 0, 3, 100, 0, 0), {first: 0, count: 2, code: kerr.OutOfOrderSequenceNumber.Code},
		}},
		{"only the last five batches are duplicates", []step{
			ok(0, 0, 1, 100, 0, 0), ok(0, 1, 1, 100, 1, 1), ok(0, 2, 1, 100, 2, 2), ok(0, 3, 1, 100, 3, 3),
			ok(0, 4, 1, 100, 4, 4), ok(0, 5, 1, 100, 5, 5),
			{first: 1, count: 1, answered: 1},
			{first: 0, count: 1, code: kerr.OutOfOrderSequenceNumber.Code},
		}},
		{"no state and a sequence above 0 is an unknown producer", []step{
			{first: 7, count: 1, code: kerr.UnknownProducerID.Code},
		}},
		{"a new epoch starts at 0 on a fresh fluss writer", []step{
			ok(0, 0, 2, 100, 0, 0), ok(0, 2, 2, 100, 1, 2),
			ok(1, 0, 1, 101, 0, 4),
			{epoch: 0, first: 4, count: 1, code: kerr.InvalidProducerEpoch.Code},
			ok(1, 1, 1, 101, 1, 5),
		}},
		{"a new epoch must start at 0", []step{
			ok(0, 0, 2, 100, 0, 0), {epoch: 1, first: 2, count: 1, code: kerr.OutOfOrderSequenceNumber.Code},
		}},
		{"a rejected batch frees its sequence and the later ones", []step{
			ok(0, 0, 2, 100, 0, 0),
			{first: 2, count: 2, answered: -1, writer: 100, flussSeq: 1, outcome: outcomeRejected},
			ok(0, 2, 5, 100, 1, 2),
		}},
		{"an unknown outcome keeps the sequence taken", []step{
			ok(0, 0, 2, 100, 0, 0),
			{first: 2, count: 2, answered: -1, writer: 100, flussSeq: 1, outcome: outcomeUnknown},
			{first: 4, count: 1, answered: -1, writer: 100, flussSeq: 2, outcome: outcomeStored, offset: 4},
		}},
		{"partitions have their own sequences on the same writer", []step{
			ok(0, 0, 2, 100, 0, 0),
			{partition: 1, first: 0, count: 1, answered: -1, writer: 100, flussSeq: 0, outcome: outcomeStored, offset: 0},
			ok(0, 2, 1, 100, 1, 2),
			{partition: 1, first: 1, count: 1, answered: -1, writer: 100, flussSeq: 1, outcome: outcomeStored, offset: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, _ := newStates(t, DefaultConfig())
			ctx := context.Background()
			for i, s := range tc.steps {
				v := ps.admit(ctx, partitionKey{"t", s.partition}, Table{}, Batch{ProducerID: 7, Epoch: s.epoch, FirstSeq: s.first, LastSeq: s.first + s.count - 1}, nil)
				if v.Code != s.code {
					t.Fatalf("step %d: code %v (%s), want %v", i, kerr.ErrorForCode(v.Code), v.Msg, kerr.ErrorForCode(s.code))
				}
				if s.code != 0 {
					continue
				}
				if s.answered >= 0 {
					if !v.Answered || v.BaseOffset != s.answered {
						t.Fatalf("step %d: answered=%v offset %d, want answered at %d", i, v.Answered, v.BaseOffset, s.answered)
					}
					continue
				}
				if v.Answered || v.entry == nil {
					t.Fatalf("step %d: %+v, want an append", i, v)
				}
				if v.Writer != s.writer || v.FlussSeq != s.flussSeq || v.Resend != s.resend {
					t.Fatalf("step %d: writer %d seq %d resend %v, want writer %d seq %d resend %v", i, v.Writer, v.FlussSeq, v.Resend, s.writer, s.flussSeq, s.resend)
				}
				ps.finish(v.entry, s.outcome, s.offset)
			}
		})
	}
}

// TestProducerStatesNewProducerIsWriterOfEpochZero: InitProducerId's id is
// the Fluss writer of epoch 0, so no second allocation happens.
func TestProducerStatesNewProducerIsWriterOfEpochZero(t *testing.T) {
	ps, a := newStates(t, DefaultConfig())
	ctx := context.Background()
	id, err := ps.NewProducer(ctx)
	if err != nil || id != 100 {
		t.Fatalf("NewProducer = %d, %v", id, err)
	}
	v := ps.admit(ctx, partitionKey{"t", 0}, Table{}, Batch{ProducerID: id, FirstSeq: 0, LastSeq: 0}, nil)
	if v.Code != 0 || v.Writer != id || v.FlussSeq != 0 {
		t.Fatalf("Verdict %+v, want writer %d seq 0", v, id)
	}
	if n := a.calls.Load(); n != 1 {
		t.Fatalf("%d allocations, want 1", n)
	}
	// A producer id this process never handed out (another frontdoor's, or
	// one from before a restart) gets a fresh writer, never its own id.
	v = ps.admit(ctx, partitionKey{"t", 0}, Table{}, Batch{ProducerID: 55, FirstSeq: 0, LastSeq: 4}, nil)
	if v.Code != 0 || v.Writer == 55 || v.Writer != 101 {
		t.Fatalf("Verdict %+v, want fresh writer 101", v)
	}
}

func TestProducerStatesAllocationFailure(t *testing.T) {
	ps, a := newStates(t, DefaultConfig())
	a.fail.Store(true)
	v := ps.admit(context.Background(), partitionKey{"t", 0}, Table{}, Batch{ProducerID: 9, FirstSeq: 0, LastSeq: 0}, nil)
	if v.Code != kerr.RequestTimedOut.Code {
		t.Fatalf("code %v, want REQUEST_TIMED_OUT (retriable)", kerr.ErrorForCode(v.Code))
	}
	a.fail.Store(false)
	v = ps.admit(context.Background(), partitionKey{"t", 0}, Table{}, Batch{ProducerID: 9, FirstSeq: 0, LastSeq: 0}, nil)
	if v.Code != 0 || v.FlussSeq != 0 {
		t.Fatalf("after recovery: %+v", v)
	}
}

// TestProducerStatesOneAllocationPerEpoch: partitions starting together
// share one writer allocation.
func TestProducerStatesOneAllocationPerEpoch(t *testing.T) {
	ps, a := newStates(t, DefaultConfig())
	var wg sync.WaitGroup
	writers := make([]int64, 16)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := ps.admit(context.Background(), partitionKey{"t", int32(i)}, Table{}, Batch{ProducerID: 3, FirstSeq: 0, LastSeq: 0}, nil)
			writers[i] = v.Writer
		}()
	}
	wg.Wait()
	for i, w := range writers {
		if w != writers[0] {
			t.Fatalf("partition %d got writer %d, partition 0 got %d", i, w, writers[0])
		}
	}
	if n := a.calls.Load(); n != 1 {
		t.Fatalf("%d allocations, want 1", n)
	}
}

func TestProducerStatesExpiry(t *testing.T) {
	cfg := Config{ProducerIdleExpiry: time.Hour, MaxProducers: 10}
	ps, _ := newStates(t, cfg)
	now := time.Unix(1000, 0)
	ps.now = func() time.Time { return now }
	ctx := context.Background()
	k := partitionKey{"t", 0}
	v := ps.admit(ctx, k, Table{}, Batch{ProducerID: 1, FirstSeq: 0, LastSeq: 0}, nil)
	ps.finish(v.entry, outcomeStored, 0)
	// A producer with a batch in flight is never dropped.
	v2 := ps.admit(ctx, partitionKey{"t", 1}, Table{}, Batch{ProducerID: 2, FirstSeq: 0, LastSeq: 0}, nil)
	now = now.Add(2 * time.Hour)
	if v := ps.admit(ctx, k, Table{}, Batch{ProducerID: 3, FirstSeq: 0, LastSeq: 0}, nil); v.Code != 0 {
		t.Fatal(v.Msg)
	}
	if v := ps.admit(ctx, k, Table{}, Batch{ProducerID: 1, FirstSeq: 1, LastSeq: 1}, nil); v.Code != kerr.UnknownProducerID.Code {
		t.Fatalf("expired producer: %v, want UNKNOWN_PRODUCER_ID", kerr.ErrorForCode(v.Code))
	}
	ps.finish(v2.entry, outcomeStored, 0)
	if v := ps.admit(ctx, partitionKey{"t", 1}, Table{}, Batch{ProducerID: 2, FirstSeq: 1, LastSeq: 1}, nil); v.Code != 0 {
		t.Fatalf("producer with a batch in flight lost its state: %s", v.Msg)
	}
}

func TestProducerStatesMaxProducers(t *testing.T) {
	ps, _ := newStates(t, Config{ProducerIdleExpiry: time.Hour, MaxProducers: 2})
	ctx := context.Background()
	for id := int64(1); id <= 3; id++ {
		v := ps.admit(ctx, partitionKey{"t", 0}, Table{}, Batch{ProducerID: id, FirstSeq: 0, LastSeq: 0}, nil)
		ps.finish(v.entry, outcomeStored, id)
	}
	if n := ps.Len(); n != 2 {
		t.Fatalf("%d producers, want 2", n)
	}
}

func TestProducerStatesSequenceWraps(t *testing.T) {
	ps, _ := newStates(t, DefaultConfig())
	ctx := context.Background()
	k := partitionKey{"t", 0}
	v := ps.admit(ctx, k, Table{}, Batch{ProducerID: 1, FirstSeq: 0, LastSeq: 0}, nil)
	ps.finish(v.entry, outcomeStored, 0)
	// Jump the state to just below the wrap, as a long-lived producer.
	ps.mu.Lock()
	st := ps.producers[1].parts[k]
	st.nextKafka, st.nextFluss = math.MaxInt32-1, math.MaxInt32
	ps.mu.Unlock()
	// Three records from MaxInt32-1: MaxInt32-1, MaxInt32, 0.
	b := Batch{ProducerID: 1, FirstSeq: math.MaxInt32 - 1, LastSeq: 0}
	v = ps.admit(ctx, k, Table{}, b, nil)
	if v.Code != 0 || v.FlussSeq != math.MaxInt32 {
		t.Fatalf("%+v", v)
	}
	ps.finish(v.entry, outcomeStored, 1)
	v = ps.admit(ctx, k, Table{}, Batch{ProducerID: 1, FirstSeq: 1, LastSeq: 1}, nil)
	if v.Code != 0 || v.FlussSeq != 0 {
		t.Fatalf("after the wrap: %+v (%s)", v, v.Msg)
	}
}

func TestIdempotenceConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{ProducerIdleExpiry: 0, MaxProducers: 1}, "ProducerIdleExpiry"},
		{Config{ProducerIdleExpiry: 8 * 24 * time.Hour, MaxProducers: 1}, "ProducerIdleExpiry"},
		{Config{ProducerIdleExpiry: time.Hour}, "MaxProducers"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.field)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkProducerStatesAdmit is the per-batch cost of the sequence
// rules on the produce path: admit a new batch and record its offset.
func BenchmarkProducerStatesAdmit(b *testing.B) {
	ps, err := New(DefaultConfig(), func(context.Context) (int64, error) { return 1, nil })
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	keys := make([]partitionKey, 16)
	for i := range keys {
		keys[i] = partitionKey{"orders", int32(i)}
	}
	seqs := make([]int32, len(keys))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := i % len(keys)
		v := ps.admit(ctx, keys[p], Table{}, Batch{ProducerID: 1, FirstSeq: seqs[p], LastSeq: seqs[p] + 9}, nil)
		if v.Code != 0 {
			b.Fatal(v.Msg)
		}
		seqs[p] += 10
		ps.finish(v.entry, outcomeStored, int64(i))
	}
}

// TestFailedOutcome: only a certain refusal frees an idempotent batch's
// sequence; a transient refusal of a resend leaves the earlier attempt's
// outcome open.
func TestFailedOutcome(t *testing.T) {
	for _, tc := range []struct {
		possiblyStored, retriable, resend bool
		want                              outcome
	}{
		{false, false, false, outcomeRejected},
		{false, true, false, outcomeRejected},
		{false, false, true, outcomeRejected},
		{false, true, true, outcomeUnknown},
		{true, false, false, outcomeUnknown},
		{true, true, false, outcomeUnknown},
		{true, false, true, outcomeUnknown},
		{true, true, true, outcomeUnknown},
	} {
		if got := FailedOutcome(tc.possiblyStored, tc.retriable, tc.resend); got != tc.want {
			t.Errorf("possibly stored %v retriable %v resend %v: %d, want %d", tc.possiblyStored, tc.retriable, tc.resend, got, tc.want)
		}
	}
}

// TestProducersPerPartition: Producers lists, by id, the producers with
// state on one partition, with the last sequence of their newest
// acknowledged batch (-1 before one was).
func TestProducersPerPartition(t *testing.T) {
	ps, _ := newStates(t, DefaultConfig())
	ctx := context.Background()
	admit := func(id int64, partition, first, count int32) *seqEntry {
		v := ps.admit(ctx, partitionKey{"t", partition}, Table{}, Batch{ProducerID: id, FirstSeq: first, LastSeq: first + count - 1}, nil)
		if v.Code != 0 || v.entry == nil {
			t.Fatalf("producer %d: %+v", id, v)
		}
		return v.entry
	}
	ps.finish(admit(9, 0, 0, 3), outcomeStored, 0)
	ps.finish(admit(9, 0, 3, 2), outcomeStored, 3)
	ps.finish(admit(5, 0, 0, 1), outcomeStored, 5)
	pending := admit(5, 0, 1, 4) // not acknowledged yet
	admit(4, 1, 0, 1)            // another partition
	got := ps.Producers("t", 0)
	if len(got) != 2 || got[0].ID != 5 || got[0].LastSequence != 0 || got[1].ID != 9 || got[1].LastSequence != 4 || got[1].LastUsed.IsZero() {
		t.Fatalf("partition 0: %+v", got)
	}
	ps.finish(pending, outcomeStored, 6)
	if got := ps.Producers("t", 0); got[0].LastSequence != 4 {
		t.Fatalf("after the ack: %+v", got)
	}
	if got := ps.Producers("t", 2); len(got) != 0 {
		t.Fatalf("partition 2: %+v", got)
	}
}
