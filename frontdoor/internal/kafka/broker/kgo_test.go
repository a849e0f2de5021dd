package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// These tests drive frontdoor with franz-go's real producer.

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ClientID("kgo-test"),
		kgo.RetryTimeout(10 * time.Second),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestKgoProduceAcks(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, tc := range []struct {
		name string
		acks kgo.Acks
	}{
		{"acks=all", kgo.AllISRAcks()},
		{"acks=1", kgo.LeaderAck()},
		{"acks=0", kgo.NoAck()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newClient(t, h.addr, kgo.RequiredAcks(tc.acks))
			before := len(h.ap.Log(100, 1))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var recs []*kgo.Record
			for i := 0; i < 5; i++ {
				recs = append(recs, &kgo.Record{Topic: "orders", Partition: 1, Value: fmt.Appendf(nil, "%s-%d", tc.name, i)})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			// acks=0 gets no answer: wait until the appends land.
			deadline := time.Now().Add(10 * time.Second)
			for len(h.ap.Log(100, 1)) < before+5 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			log := h.ap.Log(100, 1)[before:]
			if len(log) != 5 {
				t.Fatalf("appended %d records, want 5", len(log))
			}
			for i, v := range log {
				if want := fmt.Sprintf("%s-%d", tc.name, i); v != want {
					t.Errorf("record %d = %q, want %q", i, v, want)
				}
			}
			if tc.acks != kgo.NoAck() {
				for i, r := range recs {
					if r.Offset != int64(before+i) {
						t.Errorf("record %d offset %d, want %d", i, r.Offset, before+i)
					}
				}
			}
		})
	}
}

func TestKgoProduceEveryCodec(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
		num   int16
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newClient(t, h.addr, kgo.ProducerBatchCompression(tc.codec))
			var recs []*kgo.Record
			for i := 0; i < 20; i++ {
				// Compressible values so the client keeps the codec.
				recs = append(recs, &kgo.Record{Topic: "events", Partition: 0, Value: fmt.Appendf(nil, "value %d aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", i)})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			n, ok := h.tcs[0].Codecs.Load(tc.num)
			if !ok || n.(interface{ Load() int64 }).Load() == 0 {
				t.Fatalf("transcoder saw no batch with codec %d", tc.num)
			}
		})
	}
}

// TestKgoOrderUnderPipelining produces many small batches with several
// requests in flight per connection and checks each partition's log is
// in produce order with matching offsets.
func TestKgoOrderUnderPipelining(t *testing.T) {
	h := newHarness(t, harnessOpts{transcoders: 3})
	cl := newClient(t, h.addr,
		kgo.MaxProduceRequestsInflightPerBroker(8),
		kgo.ProducerBatchMaxBytes(512),
		kgo.ProducerLinger(0),
	)
	const perPartition = 300
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	offsets := map[int32][]int64{}
	for i := 0; i < perPartition; i++ {
		for p := int32(0); p < 4; p++ {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: "orders", Partition: p, Value: fmt.Appendf(nil, "p%d-%05d", p, i)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				offsets[r.Partition] = append(offsets[r.Partition], r.Offset)
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
	for p := int32(0); p < 4; p++ {
		log := h.ap.Log(100, p)
		if len(log) != perPartition {
			t.Fatalf("partition %d: %d records, want %d", p, len(log), perPartition)
		}
		for i, v := range log {
			if want := fmt.Sprintf("p%d-%05d", p, i); v != want {
				t.Fatalf("partition %d record %d = %q, want %q (order broken)", p, i, v, want)
			}
		}
		for i, off := range offsets[p] {
			if off != int64(i) {
				t.Fatalf("partition %d: callback %d got offset %d, want %d", p, i, off, i)
			}
		}
	}
	total := int64(0)
	for _, tc := range h.tcs {
		total += tc.Jobs.Load()
	}
	if total < 4 {
		t.Fatalf("only %d transcode jobs; batches were not split", total)
	}
}

func TestKgoProduceErrors(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	cl := newClient(t, h.addr, kgo.RecordRetries(0), kgo.RetryTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	t.Run("invalid record", func(t *testing.T) {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 2, Value: []byte("bad")}).FirstErr()
		if !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("err = %v, want INVALID_RECORD", err)
		}
	})
	t.Run("unknown partition", func(t *testing.T) {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 9, Value: []byte("x")}).FirstErr()
		if err == nil {
			t.Fatal("produce to partition 9 of a 4-partition topic succeeded")
		}
	})
	t.Run("unknown topic", func(t *testing.T) {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "nope", Partition: 0, Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("err = %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
		}
	})
	t.Run("fluss not leader is retried", func(t *testing.T) {
		var once sync.Once
		h.ap.Mu.Lock()
		h.ap.Fail = func(r *appendv1.AppendRequest) *appendv1.AppendResponse {
			var resp *appendv1.AppendResponse
			once.Do(func() {
				resp = &appendv1.AppendResponse{KafkaErrorCode: int32(kerr.NotLeaderForPartition.Code), ErrorMessage: "not leader", Retriable: true, PossiblyStored: true}
			})
			return resp
		}
		h.ap.Mu.Unlock()
		defer func() { h.ap.Mu.Lock(); h.ap.Fail = nil; h.ap.Mu.Unlock() }()
		rcl := newClient(t, h.addr, kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
		if err := rcl.ProduceSync(ctx, &kgo.Record{Topic: "events", Partition: 1, Value: []byte("after-retry")}).FirstErr(); err != nil {
			t.Fatalf("NOT_LEADER_OR_FOLLOWER was not retried to success: %v", err)
		}
		if log := h.ap.Log(200, 1); len(log) != 1 || log[0] != "after-retry" {
			t.Fatalf("log = %q", log)
		}
	})
}

// TestKgoIdempotenceDisabledFallsBack pins what franz-go does with its
// default idempotence when InitProducerId is not advertised: it produces
// without a producer id, which frontdoor accepts.
func TestKgoIdempotenceDisabledFallsBack(t *testing.T) {
	h := newHarness(t, harnessOpts{noIdempotence: true})
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("idem")}).FirstErr(); err != nil {
		t.Fatalf("default franz-go producer failed: %v", err)
	}
	if got := len(h.ap.Log(100, 0)); got != 1 {
		t.Fatalf("appended %d records, want 1", got)
	}
	if n := h.ap.WriterCalls.Load(); n != 0 {
		t.Fatalf("%d appends carried a writer id with idempotence disabled", n)
	}
}
