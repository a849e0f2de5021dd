package txn

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// fakeBackend records appends and offset commits; failAppends makes the
// first n appends fail after "storing" them (an answer lost).
type fakeBackend struct {
	mu          sync.Mutex
	nextWriter  int64
	appends     []*appendv1.AppendRequest
	stored      map[[3]int64]bool // writer, table*1000+bucket, seq
	commits     []string          // group per CommitOffsets
	offsets     map[string][]*fetchv1.CommittedOffset
	failAppends int
	// failAfter lets that many appends succeed before failAppends starts.
	failAfter int
	resent    int // appends of a batch already stored
	events    []string
}

func newFake() *fakeBackend {
	return &fakeBackend{nextWriter: 100, stored: map[[3]int64]bool{}, offsets: map[string][]*fetchv1.CommittedOffset{}}
}

func (f *fakeBackend) NewWriterID(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextWriter++
	return f.nextWriter, nil
}

func (f *fakeBackend) Append(_ context.Context, req *appendv1.AppendRequest) (*appendv1.AppendResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := [3]int64{req.WriterId, req.TableId*1000 + int64(req.BucketId), int64(req.BatchSequence)}
	if !f.stored[k] {
		// What Fluss's writer state does: a resent sequence is not stored again.
		f.stored[k] = true
		f.appends = append(f.appends, req)
		f.events = append(f.events, "append")
	} else {
		f.resent++
	}
	if f.failAfter > 0 {
		f.failAfter--
		return &appendv1.AppendResponse{}, nil
	}
	if f.failAppends > 0 {
		f.failAppends--
		return nil, errors.New("stream broke")
	}
	return &appendv1.AppendResponse{}, nil
}

func (f *fakeBackend) CommitOffsets(_ context.Context, group string, offsets []*fetchv1.CommittedOffset) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits = append(f.commits, group)
	f.offsets[group] = offsets
	f.events = append(f.events, "offsets")
	return nil
}

func newCoord(t *testing.T, cfg Config) (*Coordinator, *fakeBackend) {
	t.Helper()
	f := newFake()
	cfg.RetryPause = time.Millisecond
	c, err := New(cfg, f, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, f
}

func staged(topic string, part int32, first, last int32, table int64) *Staged {
	return &Staged{TopicPartition: TopicPartition{topic, part}, FirstSeq: first, LastSeq: last, Bytes: 10,
		Append: &appendv1.AppendRequest{TableId: table, BucketId: part, WriterId: -1, BatchSequence: -1}}
}

func wantErr(t *testing.T, what string, got, want *kerr.Error) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func TestCommitAppliesStagedBatchesAndOffsetsAbortNothing(t *testing.T) {
	c, f := newCoord(t, Config{})
	ctx := context.Background()
	pid, epoch, e := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	wantErr(t, "init", e, nil)
	parts := []TopicPartition{{"a", 0}, {"a", 1}, {"b", 0}}
	wantErr(t, "add", c.AddPartitions("tx", pid, epoch, parts), nil)
	wantErr(t, "add group", c.AddGroup("tx", pid, epoch, "g"), nil)
	for _, s := range []*Staged{staged("a", 0, 0, 4, 1), staged("a", 1, 0, 0, 1), staged("a", 0, 5, 9, 1), staged("b", 0, 0, 2, 2)} {
		if r := c.Stage("tx", pid, epoch, s); r.Err != nil || r.Duplicate {
			t.Fatalf("stage: %+v", r)
		}
	}
	wantErr(t, "offsets", c.StageOffsets("tx", pid, epoch, "g", []*fetchv1.CommittedOffset{{Topic: "in", Partition: 0, Offset: 42}}), nil)
	if len(f.appends) != 0 || len(f.commits) != 0 {
		t.Fatal("something was written before the commit")
	}
	wantErr(t, "commit", c.End(ctx, "tx", pid, epoch, true), nil)
	if len(f.appends) != 4 {
		t.Fatalf("%d appends, want 4", len(f.appends))
	}
	// One writer for the transaction; per bucket sequences from 0.
	w := f.appends[0].WriterId
	wantSeq := []int32{0, 0, 1, 0}
	for i, a := range f.appends {
		if a.WriterId != w || a.BatchSequence != wantSeq[i] {
			t.Errorf("append %d: writer %d seq %d, want writer %d seq %d", i, a.WriterId, a.BatchSequence, w, wantSeq[i])
		}
	}
	if got := f.events[len(f.events)-1]; got != "offsets" || f.offsets["g"][0].GetOffset() != 42 {
		t.Fatalf("offsets not committed after the batches: events %v", f.events)
	}
	// A retried EndTxn(commit) is done; an abort now is not.
	wantErr(t, "commit again", c.End(ctx, "tx", pid, epoch, true), nil)
	wantErr(t, "abort after commit", c.End(ctx, "tx", pid, epoch, false), kerr.InvalidTxnState)

	// The next transaction of the epoch continues the sequences and aborts.
	wantErr(t, "add 2", c.AddPartitions("tx", pid, epoch, parts[:1]), nil)
	if r := c.Stage("tx", pid, epoch, staged("a", 0, 10, 12, 1)); r.Err != nil {
		t.Fatalf("stage 2: %+v", r)
	}
	wantErr(t, "offsets 2", c.StageOffsets("tx", pid, epoch, "g", nil), kerr.InvalidTxnState) // group not added
	wantErr(t, "abort", c.End(ctx, "tx", pid, epoch, false), nil)
	if len(f.appends) != 4 || len(f.commits) != 1 {
		t.Fatalf("an aborted transaction wrote: %d appends, %d commits", len(f.appends), len(f.commits))
	}
	if c.staged != 0 {
		t.Fatalf("%d bytes still staged", c.staged)
	}
}

func TestStageRules(t *testing.T) {
	c, _ := newCoord(t, Config{MaxStagedBytes: 25})
	ctx := context.Background()
	pid, epoch, _ := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	if r := c.Stage("tx", pid, epoch, staged("a", 0, 0, 0, 1)); r.Err != kerr.InvalidTxnState {
		t.Fatalf("stage before AddPartitions: %+v", r)
	}
	c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}})
	if r := c.Stage("tx", pid, epoch, staged("a", 1, 0, 0, 1)); r.Err != kerr.InvalidTxnState {
		t.Fatalf("stage to a partition not added: %+v", r)
	}
	if r := c.Stage("tx", pid+1, epoch, staged("a", 0, 0, 0, 1)); r.Err != kerr.InvalidProducerIDMapping {
		t.Fatalf("other producer id: %+v", r)
	}
	if r := c.Stage("tx", pid, epoch, staged("a", 0, 1, 1, 1)); r.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("gap: %+v", r)
	}
	if r := c.Stage("tx", pid, epoch, staged("a", 0, 0, 3, 1)); r.Err != nil {
		t.Fatalf("first: %+v", r)
	}
	if r := c.Stage("tx", pid, epoch, staged("a", 0, 0, 3, 1)); !r.Duplicate {
		t.Fatalf("retry not a duplicate: %+v", r)
	}
	if r := c.Stage("tx", pid, epoch, staged("a", 0, 4, 4, 1)); r.Err != nil {
		t.Fatalf("second: %+v", r)
	}
	if r := c.Stage("tx", pid, epoch, staged("a", 0, 5, 5, 1)); r.Err != kerr.MessageTooLarge {
		t.Fatalf("past the bound (25 bytes, 30 staged): %+v", r)
	}
	if _, _, e := c.InitProducer(ctx, "tx2", time.Hour, -1, -1); e != kerr.InvalidTransactionTimeout {
		t.Fatalf("timeout above the maximum: %v", e)
	}
}

func TestNewSessionFencesTheOldOne(t *testing.T) {
	c, f := newCoord(t, Config{})
	ctx := context.Background()
	pid, e0, _ := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	c.AddPartitions("tx", pid, e0, []TopicPartition{{"a", 0}})
	c.Stage("tx", pid, e0, staged("a", 0, 0, 0, 1))
	pid2, e1, e := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	if e != nil || pid2 != pid || e1 != e0+1 {
		t.Fatalf("second session: %d/%d %v, want %d/%d", pid2, e1, e, pid, e0+1)
	}
	wantErr(t, "old add", c.AddPartitions("tx", pid, e0, []TopicPartition{{"a", 0}}), kerr.ProducerFenced)
	wantErr(t, "old end", c.End(ctx, "tx", pid, e0, true), kerr.ProducerFenced)
	if r := c.Stage("tx", pid, e0, staged("a", 0, 1, 1, 1)); r.Err != kerr.InvalidProducerEpoch {
		t.Fatalf("old produce: %+v", r)
	}
	// The old session's open transaction was aborted, not applied.
	wantErr(t, "new end", c.End(ctx, "tx", pid, e1, true), kerr.InvalidTxnState)
	if len(f.appends) != 0 {
		t.Fatal("the fenced transaction was written")
	}
	// KIP-360: naming the current id and epoch bumps; naming an old one is fenced.
	if _, e2, e := c.InitProducer(ctx, "tx", time.Minute, pid, e1); e != nil || e2 != e1+1 {
		t.Fatalf("KIP-360 bump: %d %v", e2, e)
	}
	if _, _, e := c.InitProducer(ctx, "tx", time.Minute, pid, e1); e != kerr.ProducerFenced {
		t.Fatalf("KIP-360 with an old epoch: %v", e)
	}
}

func TestTimedOutTransactionIsAbortedAndFenced(t *testing.T) {
	c, f := newCoord(t, Config{CheckInterval: 10 * time.Millisecond})
	ctx := context.Background()
	pid, epoch, _ := c.InitProducer(ctx, "tx", 50*time.Millisecond, -1, -1)
	c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}})
	c.Stage("tx", pid, epoch, staged("a", 0, 0, 0, 1))
	deadline := time.Now().Add(5 * time.Second)
	for {
		in, _ := c.Describe("tx")
		if in.State == CompleteAbort {
			if in.Epoch != epoch+1 {
				t.Fatalf("epoch %d after the timeout, want %d", in.Epoch, epoch+1)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transaction still %s after its timeout", in.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	wantErr(t, "commit after timeout", c.End(ctx, "tx", pid, epoch, true), kerr.ProducerFenced)
	c.mu.Lock()
	left := c.staged
	c.mu.Unlock()
	if len(f.appends) != 0 || left != 0 {
		t.Fatalf("timed-out transaction: %d appends, %d bytes staged", len(f.appends), left)
	}
}

func TestApplyResendsWithTheSameSequence(t *testing.T) {
	c, f := newCoord(t, Config{})
	f.failAppends = 2 // stored, but the answers are lost
	ctx := context.Background()
	pid, epoch, _ := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}})
	c.Stage("tx", pid, epoch, staged("a", 0, 0, 0, 1))
	c.Stage("tx", pid, epoch, staged("a", 0, 1, 1, 1))
	wantErr(t, "commit", c.End(ctx, "tx", pid, epoch, true), nil)
	if len(f.appends) != 2 {
		t.Fatalf("%d batches stored, want 2 (resends stored again?)", len(f.appends))
	}
}

func TestEndTxnWhileApplyingIsConcurrentTransactions(t *testing.T) {
	c, f := newCoord(t, Config{})
	f.failAppends = 1 << 30
	ctx := context.Background()
	pid, epoch, _ := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}})
	c.Stage("tx", pid, epoch, staged("a", 0, 0, 0, 1))
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	wantErr(t, "commit while Fluss fails", c.End(short, "tx", pid, epoch, true), kerr.ConcurrentTransactions)
	wantErr(t, "add while applying", c.AddPartitions("tx", pid, epoch, nil), kerr.ConcurrentTransactions)
	if in, _ := c.Describe("tx"); in.State != PrepareCommit {
		t.Fatalf("state %s, want PrepareCommit", in.State)
	}
	f.mu.Lock()
	f.failAppends = 0
	f.mu.Unlock()
	wantErr(t, "commit retried", c.End(ctx, "tx", pid, epoch, true), nil)
	if in, _ := c.Describe("tx"); in.State != CompleteCommit {
		t.Fatalf("state %s, want CompleteCommit", in.State)
	}
}

func TestIdleTransactionalIDsExpire(t *testing.T) {
	c, _ := newCoord(t, Config{CheckInterval: time.Hour, IDExpiry: time.Minute})
	ctx := context.Background()
	pid, epoch, _ := c.InitProducer(ctx, "idle", time.Minute, -1, -1)
	c.InitProducer(ctx, "busy", time.Minute, -1, -1)
	bpid, bepoch, _ := c.InitProducer(ctx, "open", 10*time.Minute, -1, -1)
	c.AddPartitions("open", bpid, bepoch, []TopicPartition{{"a", 0}})
	c.expire(time.Now().Add(2 * time.Minute))
	if _, ok := c.Describe("idle"); ok {
		t.Fatal("an idle transactional id was kept past IDExpiry")
	}
	if _, ok := c.Describe("open"); !ok {
		t.Fatal("a transactional id with an open transaction was forgotten")
	}
	wantErr(t, "expired producer", c.AddPartitions("idle", pid, epoch, nil), kerr.InvalidProducerIDMapping)
}

func TestApplySpansAreChildrenOfEndTxn(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := newFake()
	c, err := New(Config{RetryPause: time.Millisecond}, f, nil, tp, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, end := tp.Tracer("test").Start(context.Background(), "kafka.end_txn")
	pid, epoch, _ := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}})
	c.Stage("tx", pid, epoch, staged("a", 0, 0, 0, 1))
	wantErr(t, "commit", c.End(ctx, "tx", pid, epoch, true), nil)
	end.End()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
	}
	apply, batch := byName["ferry.txn.apply"], byName["ferry.txn.apply_batch"]
	if apply == nil || batch == nil {
		t.Fatalf("spans %v: want ferry.txn.apply and ferry.txn.apply_batch", byName)
	}
	if apply.Parent().SpanID() != end.SpanContext().SpanID() || batch.Parent().SpanID() != apply.SpanContext().SpanID() {
		t.Fatal("apply spans are not under the EndTxn request's span")
	}
}

func TestMetricsCountOutcomes(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	c, err := New(Config{RetryPause: time.Millisecond}, newFake(), nil, nil, mp)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	pid, epoch, _ := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	for _, commit := range []bool{true, false} {
		c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}})
		wantErr(t, "end", c.End(ctx, "tx", pid, epoch, commit), nil)
	}
	c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}}) // left open
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					o, _ := p.Attributes.Value("outcome")
					got[m.Name+"/"+o.AsString()] += p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					got[m.Name] = p.Value
				}
			}
		}
	}
	want := map[string]int64{"ferry.frontdoor.txn.begun/": 3, "ferry.frontdoor.txn.ended/commit": 1, "ferry.frontdoor.txn.ended/abort": 1,
		"ferry.frontdoor.txn.open": 1, "ferry.frontdoor.txn.staged.bytes": 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

func TestPendingOffsetsUntilTheTransactionEnds(t *testing.T) {
	c, _ := newCoord(t, Config{})
	ctx := context.Background()
	pid, epoch, _ := c.InitProducer(ctx, "tx", time.Minute, -1, -1)
	for _, commit := range []bool{true, false} {
		c.AddGroup("tx", pid, epoch, "g")
		wantErr(t, "offsets", c.StageOffsets("tx", pid, epoch, "g", []*fetchv1.CommittedOffset{{Topic: "in", Partition: 1, Offset: 5}}), nil)
		if !c.PendingOffset("g", "in", 1) || c.PendingOffset("g", "in", 0) || c.PendingOffset("other", "in", 1) {
			t.Fatal("pending offsets not reported for exactly the staged partition")
		}
		wantErr(t, "end", c.End(ctx, "tx", pid, epoch, commit), nil)
		if c.PendingOffset("g", "in", 1) {
			t.Fatalf("offsets still pending after EndTxn(commit=%v)", commit)
		}
	}
}
