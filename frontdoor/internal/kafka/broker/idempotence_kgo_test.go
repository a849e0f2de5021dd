package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceIdempotent sends n records per partition with franz-go's defaults
// (idempotent, acks=all) and returns what each partition's log holds.
func produceIdempotent(t *testing.T, h *harness, partitions []int32, n int, opts ...kgo.Opt) map[int32][]string {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(h.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		// The fake transcoder reads values only from uncompressed batches.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond })}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < n; i++ {
		for _, p := range partitions {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: "orders", Partition: p, Value: fmt.Appendf(nil, "p%d-%04d", p, i)}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
	out := map[int32][]string{}
	for _, p := range partitions {
		out[p] = h.ap.Log(100, p)
	}
	return out
}

// wantExactlyOnce checks every partition holds its records once, in order.
func wantExactlyOnce(t *testing.T, logs map[int32][]string, n int) {
	t.Helper()
	for p, log := range logs {
		if len(log) != n {
			t.Fatalf("partition %d holds %d records, want %d", p, len(log), n)
		}
		for i, v := range log {
			if want := fmt.Sprintf("p%d-%04d", p, i); v != want {
				t.Fatalf("partition %d offset %d holds %s, want %s", p, i, v, want)
			}
		}
	}
}

// TestKgoIdempotentDefault: franz-go with its defaults gets a producer id
// from InitProducerId and its batches reach appendsvc with a Fluss writer
// id and batch sequences.
func TestKgoIdempotentDefault(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	wantExactlyOnce(t, produceIdempotent(t, h, []int32{0, 1}, 200), 200)
	if n := h.ap.WriterCalls.Load(); n == 0 {
		t.Fatal("no append carried a writer id: the batches were not idempotent")
	}
}

// TestKgoIdempotentLostAcks: appendsvc stores every third batch but loses
// its acknowledgement (answers a retriable timeout). franz-go retries those
// batches; Fluss's writer dedup (modelled by the fake) keeps each record
// exactly once and the retries are answered with the original offsets.
func TestKgoIdempotentLostAcks(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	var mu sync.Mutex
	seen := map[[3]int64]bool{}
	calls := 0
	h.ap.Mu.Lock()
	h.ap.StoreThenFail = func(r *appendv1.AppendRequest) bool {
		mu.Lock()
		defer mu.Unlock()
		k := [3]int64{int64(r.BucketId), r.WriterId, int64(r.BatchSequence)}
		if seen[k] {
			return false // the retry gets its answer
		}
		seen[k] = true
		calls++
		return calls%3 == 0
	}
	h.ap.Mu.Unlock()
	wantExactlyOnce(t, produceIdempotent(t, h, []int32{0, 1, 2}, 300), 300)
	if h.ap.Duplicates.Load() == 0 {
		t.Fatal("no batch was resent: the fault did not take")
	}
}

// TestKgoIdempotentStateLost: the frontdoor forgets every producer (what a
// restart or a partition moving to another frontdoor looks like). The
// producer's next batch gets UNKNOWN_PRODUCER_ID; franz-go starts the
// partition over on a new epoch (a fresh Fluss writer) and carries on;
// with nothing in flight at that moment, nothing is duplicated or lost.
func TestKgoIdempotentStateLost(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
		// franz-go refreshes metadata before retrying; make that prompt.
		kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send := func(from, to int) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: 0, Value: fmt.Appendf(nil, "p0-%04d", i)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %d..%d: %v", from, to, err)
		}
	}
	send(0, 50)
	if h.srv.ProducerCount() != 1 {
		t.Fatalf("%d producers with state, want 1", h.srv.ProducerCount())
	}
	h.srv.Producers.ForgetAll()
	send(50, 100)
	wantExactlyOnce(t, map[int32][]string{0: h.ap.Log(100, 0)}, 100)
}
