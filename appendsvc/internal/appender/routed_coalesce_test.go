package appender

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/kvbatch"
)

// heldHarness holds Fluss's first answer until the other jobs are queued,
// so that they are coalesced; answer decides each call's results.
func heldHarness(t *testing.T, answer func(fakeCall) []fluss.BucketResult) (*harness, chan struct{}, chan struct{}) {
	release, first := make(chan struct{}), make(chan struct{})
	h := newHarness(t, Config{}, func(f *fakeFluss) func(int, fakeCall) ([]fluss.BucketResult, error) {
		return func(n int, c fakeCall) ([]fluss.BucketResult, error) {
			if n == 1 {
				close(first)
				<-release
			}
			return answer(c), nil
		}
	})
	return h, first, release
}

// runHeld sends reqs[0], waits until it is in flight, queues the others
// behind it and collects every answer.
func runHeld(t *testing.T, h *harness, first, release chan struct{}, reqs ...*appendv1.AppendRequest) map[uint64]*appendv1.AppendResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := h.client.Append(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if err := stream.Send(r); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-first
		}
	}
	time.Sleep(200 * time.Millisecond) // the others reach the queue
	close(release)
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	answers := map[uint64]*appendv1.AppendResponse{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return answers
		}
		if err != nil {
			t.Fatal(err)
		}
		answers[resp.GetJobId()] = resp
	}
}

// keysOf is the keys of a KV batch sent, in order, with its header.
func keysOf(t *testing.T, b fluss.BucketBatch) (kvbatch.Header, []string) {
	t.Helper()
	hdr, recs, err := kvbatch.Decode(recordsOf(b))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range recs {
		keys = append(keys, string(r.Key))
	}
	return hdr, keys
}

func allOK(c fakeCall) []fluss.BucketResult {
	var out []fluss.BucketResult
	for _, b := range c.batches {
		out = append(out, fluss.BucketResult{Bucket: b.Bucket, BaseOffset: 100 + int64(b.Bucket)})
	}
	return out
}

func TestRoutedKVJobsCoalesceByBucket(t *testing.T) {
	h, first, release := heldHarness(t, allOK)
	got := runHeld(t, h, first, release,
		routedReq(1, -1, kvPiece(t, 0, -1, "a")),
		routedReq(2, -1, kvPiece(t, 0, -1, "b", "c"), kvPiece(t, 1, -1, "d")),
		routedReq(3, -1, kvPiece(t, 1, -1, "e")),
		routedReq(4, -1, kvPiece(t, 2, -1, "f"), kvPiece(t, 0, -1, "g")))
	for job := uint64(1); job <= 4; job++ {
		if r := got[job]; r == nil || r.GetErrorCode() != 0 {
			t.Fatalf("job %d: %v, want success", job, r)
		}
	}
	if got[3].GetBaseOffset() != 101 || got[4].GetBaseOffset() != 102 {
		t.Errorf("jobs 3, 4 at %d, %d, want their first piece's offsets 101, 102", got[3].GetBaseOffset(), got[4].GetBaseOffset())
	}
	calls := h.fake.snapshot()
	if len(calls) != 2 || !calls[1].kv || len(calls[1].batches) != 3 {
		t.Fatalf("calls %+v, want job 1 alone, then one PutKv of jobs 2-4 with buckets 0, 1, 2", calls)
	}
	want := map[int32][]string{0: {"b", "c", "g"}, 1: {"d", "e"}, 2: {"f"}}
	for _, b := range calls[1].batches {
		hdr, keys := keysOf(t, b)
		if hdr.WriterID != kvbatch.NoWriterID || hdr.BatchSequence != kvbatch.NoBatchSequence || hdr.RecordCount != int32(len(keys)) {
			t.Errorf("bucket %d header %+v", b.Bucket, hdr)
		}
		if w := want[b.Bucket]; len(keys) != len(w) || !equalStrings(keys, w) {
			t.Errorf("bucket %d keys %v, want %v in job order", b.Bucket, keys, w)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := h.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var hist *metricdata.HistogramDataPoint[int64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "ferry.append.request_jobs" {
				hist = &m.Data.(metricdata.Histogram[int64]).DataPoints[0]
			}
		}
	}
	if hist == nil || hist.Count != 2 || hist.Sum != 4 {
		t.Fatalf("ferry.append.request_jobs %+v, want 2 PutKv requests with 4 jobs", hist)
	}
}

// Mergeable primary-key jobs of different Kafka partitions share the
// table's queue: those waiting behind a write go out merged, each bucket's
// records in arrival order.
func TestRoutedKVJobsOfAllKafkaPartitionsCoalesce(t *testing.T) {
	h, first, release := heldHarness(t, allOK)
	onPartition := func(r *appendv1.AppendRequest, p int32) *appendv1.AppendRequest {
		r.BucketId = p
		return r
	}
	got := runHeld(t, h, first, release,
		onPartition(routedReq(1, -1, kvPiece(t, 0, -1, "a")), 0),
		onPartition(routedReq(2, -1, kvPiece(t, 0, -1, "b"), kvPiece(t, 1, -1, "c")), 1),
		onPartition(routedReq(3, -1, kvPiece(t, 1, -1, "d")), 2),
		onPartition(routedReq(4, -1, kvPiece(t, 0, -1, "e")), 0))
	for job := uint64(1); job <= 4; job++ {
		if r := got[job]; r == nil || r.GetErrorCode() != 0 {
			t.Fatalf("job %d: %v, want success", job, r)
		}
	}
	calls := h.fake.snapshot()
	if len(calls) != 2 || len(calls[1].batches) != 2 {
		t.Fatalf("calls %+v, want job 1 alone, then one PutKv of jobs 2-4 (Kafka partitions 1, 2, 0) with buckets 0, 1", calls)
	}
	want := map[int32][]string{0: {"b", "e"}, 1: {"c", "d"}}
	for _, b := range calls[1].batches {
		if _, keys := keysOf(t, b); !equalStrings(keys, want[b.Bucket]) {
			t.Errorf("bucket %d keys %v, want %v in arrival order", b.Bucket, keys, want[b.Bucket])
		}
	}
}

func equalStrings(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// A merged batch Fluss refuses is not the fault of every job in it: each
// job's own batch for that bucket goes alone and the job gets its own answer.
func TestRoutedKVRefusedMergeGoesAlone(t *testing.T) {
	h, first, release := heldHarness(t, func(c fakeCall) []fluss.BucketResult {
		out := allOK(c)
		for i, b := range c.batches {
			_, recs, _ := kvbatch.Decode(recordsOf(b))
			for _, r := range recs {
				if string(r.Key) == "bad" {
					out[i].Err = &fluss.Error{Code: fluss.CodeRecordTooLarge, Message: "too large"}
				}
			}
		}
		return out
	})
	got := runHeld(t, h, first, release,
		routedReq(1, -1, kvPiece(t, 0, -1, "a")),
		routedReq(2, -1, kvPiece(t, 0, -1, "x")),
		routedReq(3, -1, kvPiece(t, 0, -1, "bad")),
		routedReq(4, -1, kvPiece(t, 0, -1, "y"), kvPiece(t, 1, -1, "z")))
	for _, job := range []uint64{1, 2, 4} {
		if r := got[job]; r == nil || r.GetErrorCode() != 0 {
			t.Errorf("job %d: %v, want success", job, r)
		}
	}
	if r := got[3]; r.GetErrorCode() != int32(fluss.CodeRecordTooLarge) || r.GetPossiblyStored() {
		t.Errorf("job 3: %v, want its own RECORD_TOO_LARGE, not stored", r)
	}
	calls := h.fake.snapshot()
	// Job 1; jobs 2-4 merged (bucket 0 refused, bucket 1 stored); then
	// bucket 0 of jobs 2, 3 and 4 alone, in job order.
	if len(calls) != 5 || len(calls[1].batches) != 2 {
		t.Fatalf("%d calls %+v, want 5", len(calls), calls)
	}
	for i, want := range []string{"x", "bad", "y"} {
		c := calls[2+i]
		if len(c.batches) != 1 || c.batches[0].Bucket != 0 {
			t.Fatalf("call %d: %+v, want bucket 0 alone", 2+i, c.batches)
		}
		if _, keys := keysOf(t, c.batches[0]); !equalStrings(keys, []string{want}) {
			t.Errorf("call %d keys %v, want [%s]", 2+i, keys, want)
		}
	}
}

// Idempotent KV jobs are never merged: one writer sequence per Kafka batch.
func TestRoutedIdempotentKVJobsGoAlone(t *testing.T) {
	h, first, release := heldHarness(t, allOK)
	got := runHeld(t, h, first, release,
		routedReq(1, 5, kvPiece(t, 0, 0, "a")),
		routedReq(2, 5, kvPiece(t, 0, 1, "b")),
		routedReq(3, 5, kvPiece(t, 0, 2, "c")))
	for job := uint64(1); job <= 3; job++ {
		if r := got[job]; r == nil || r.GetErrorCode() != 0 {
			t.Fatalf("job %d: %v", job, r)
		}
	}
	calls := h.fake.snapshot()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want one per idempotent job", len(calls))
	}
	for i, c := range calls {
		if hdr, _ := keysOf(t, c.batches[0]); hdr.WriterID != 5 || hdr.BatchSequence != int32(i) {
			t.Errorf("call %d header %+v, want writer 5 sequence %d", i, hdr, i)
		}
	}
}
