package idempotence

import (
	"context"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ferrygw/ferry/frontdoor/internal/fakebackends"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
)

// persistentStates is States with anchors in a fresh directory, reading
// the log back from a fake appendsvc.
func persistentStates(t *testing.T) (*States, *anchorStore, *fakebackends.Appender) {
	t.Helper()
	fake := fakebackends.NewAppender()
	ps, _ := newStates(t, DefaultConfig())
	store, err := openAnchorStore(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ps.persist(store, fakeLog{fake}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = ps.stopPersisting() })
	return ps, store, fake
}

// fakeLog reads the fake appendsvc's log as frontdoor's gRPC client does,
// without the network: the fake answers with the same gRPC status errors.
type fakeLog struct{ f *fakebackends.Appender }

func (l fakeLog) LatestOffset(ctx context.Context, b *appendv1.BucketRef) (int64, error) {
	r, err := l.f.GetLatestOffset(ctx, &appendv1.GetLatestOffsetRequest{Bucket: b})
	return r.GetOffset(), err
}

func (l fakeLog) ListWriterBatches(ctx context.Context, req *appendv1.ListWriterBatchesRequest) (*appendv1.ListWriterBatchesResponse, error) {
	return l.f.ListWriterBatches(ctx, req)
}

// TestProducerStatesRebuild: what a frontdoor without state in memory makes
// of an anchor and the log.
func TestProducerStatesRebuild(t *testing.T) {
	ctx := context.Background()
	tbl := Table{ID: 100, Database: "db", Table: "orders"}
	const w = 500 // the lost process's writer
	batch := func(epoch int16, first, count int32) Batch {
		return Batch{ProducerID: 7, Epoch: epoch, FirstSeq: first, LastSeq: first + count - 1}
	}

	t.Run("retries are answered from the log, the next batch continues it", func(t *testing.T) {
		ps, store, fake := persistentStates(t)
		fake.ListPage = 1
		fake.Seed(100, 0, -1, -1, "x") // before the anchor
		must(t, store.put(anchorKey{7, "t", 0}, anchor{Writer: w, TableID: 100, Offset: 1}))
		fake.Seed(100, 0, w, 0, "a", "b", "c") // offset 1, Kafka 0-2
		fake.Seed(100, 0, 900, 0, "other")     // another writer
		fake.Seed(100, 0, w, 1, "d", "e")      // offset 5, Kafka 3-4
		k := partitionKey{"t", 0}
		if v := ps.admit(ctx, k, tbl, batch(0, 3, 2), nil); !v.Answered || v.BaseOffset != 5 {
			t.Fatalf("retry of the last batch: %+v", v)
		}
		if v := ps.admit(ctx, k, tbl, batch(0, 0, 3), nil); !v.Answered || v.BaseOffset != 1 {
			t.Fatalf("retry of the first batch: %+v", v)
		}
		v := ps.admit(ctx, k, tbl, batch(0, 5, 1), nil)
		if v.Code != 0 || v.Answered || v.Writer != w || v.FlussSeq != 2 {
			t.Fatalf("next batch: %+v (%s)", v, v.Msg)
		}
		// The anchor moves to the oldest of the last five once that one is
		// acknowledged: after three more batches, still the first one.
		ps.finish(v.entry, outcomeStored, fake.Seed(100, 0, w, 2, "f"))
		must(t, ps.flushAnchors())
		if a, _ := store.get(anchorKey{7, "t", 0}); a.Offset != 1 || a.FlussSeq != 0 {
			t.Fatalf("anchor %+v, want still at the first batch", a)
		}
		for seq := int32(3); seq <= 5; seq++ {
			v := ps.admit(ctx, k, tbl, batch(0, seq+3, 1), nil)
			if v.FlussSeq != seq {
				t.Fatalf("batch %d: %+v", seq, v)
			}
			ps.finish(v.entry, outcomeStored, fake.Seed(100, 0, w, seq, "g"))
		}
		must(t, ps.flushAnchors())
		if a, _ := store.get(anchorKey{7, "t", 0}); a.Offset != 5 || a.FlussSeq != 1 || a.KafkaSeq != 3 {
			t.Fatalf("anchor %+v, want at the second batch (offset 5, sequences 1 and 3)", a)
		}
	})

	t.Run("a first batch whose fate is unknown is sent with sequence 0", func(t *testing.T) {
		ps, store, _ := persistentStates(t)
		must(t, store.put(anchorKey{7, "t", 1}, anchor{Writer: w, TableID: 100, Offset: 0}))
		v := ps.admit(ctx, partitionKey{"t", 1}, tbl, batch(0, 0, 4), nil)
		if v.Code != 0 || v.Answered || v.Writer != w || v.FlussSeq != 0 {
			t.Fatalf("%+v (%s)", v, v.Msg)
		}
	})

	t.Run("a new partition state is anchored before its first batch", func(t *testing.T) {
		ps, store, fake := persistentStates(t)
		fake.Seed(100, 2, -1, -1, "x", "y")
		v := ps.admit(ctx, partitionKey{"t", 2}, tbl, batch(0, 0, 1), nil)
		a, ok := store.get(anchorKey{7, "t", 2})
		if v.Code != 0 || !ok || a.Writer != v.Writer || a.Offset != 2 || a.TableID != 100 || a.FlussSeq != 0 {
			t.Fatalf("Verdict %+v, anchor %+v %v", v, a, ok)
		}
		// A new epoch replaces it, on a new writer.
		ps.finish(v.entry, outcomeStored, 2)
		v2 := ps.admit(ctx, partitionKey{"t", 2}, tbl, batch(1, 0, 1), nil)
		if a, _ := store.get(anchorKey{7, "t", 2}); v2.Code != 0 || a.Epoch != 1 || a.Writer != v2.Writer || v2.Writer == v.Writer {
			t.Fatalf("new epoch: Verdict %+v, anchor %+v", v2, a)
		}
	})

	t.Run("without the end offset no state starts, unless appendsvc cannot tell", func(t *testing.T) {
		ps, store, fake := persistentStates(t)
		fake.LatestFail = func(*appendv1.GetLatestOffsetRequest) error { return status.Error(codes.Unavailable, "down") }
		if v := ps.admit(ctx, partitionKey{"t", 4}, tbl, batch(0, 0, 1), nil); v.Code != kerr.RequestTimedOut.Code {
			t.Fatalf("%v (%s), want REQUEST_TIMED_OUT", kerr.ErrorForCode(v.Code), v.Msg)
		}
		// An appendsvc without the read-back: in memory only, as before.
		fake.LatestFail = func(*appendv1.GetLatestOffsetRequest) error { return status.Error(codes.Unimplemented, "old") }
		v := ps.admit(ctx, partitionKey{"t", 4}, tbl, batch(0, 0, 1), nil)
		if _, ok := store.get(anchorKey{7, "t", 4}); v.Code != 0 || v.FlussSeq != 0 || ok {
			t.Fatalf("Verdict %+v (%s), anchor written: %v", v, v.Msg, ok)
		}
	})

	for _, tc := range []struct {
		name       string
		anchor     anchor
		seed       bool // writer w's batch 0 at offset 0
		fail       error
		b          Batch
		code       int16
		keepAnchor bool
	}{
		{"an anchor of a newer epoch fences the batch", anchor{Epoch: 2, Writer: w, TableID: 100}, true, nil, batch(1, 3, 1), kerr.InvalidProducerEpoch.Code, true},
		{"an anchor of another table is not used", anchor{Writer: w, TableID: 99}, true, nil, batch(0, 3, 1), kerr.UnknownProducerID.Code, true},
		{"a log that does not continue the anchor drops it", anchor{Writer: w, TableID: 100, FlussSeq: 3, KafkaSeq: 9}, true, nil, batch(0, 12, 1), kerr.UnknownProducerID.Code, false},
		{"an acknowledged anchor batch missing from the log drops it", anchor{Writer: w, TableID: 100, FlussSeq: 3, KafkaSeq: 9}, false, nil, batch(0, 12, 1), kerr.UnknownProducerID.Code, false},
		{"a log deleted past the anchor drops it", anchor{Writer: w, TableID: 100}, true, status.Error(codes.OutOfRange, "gone"), batch(0, 3, 1), kerr.UnknownProducerID.Code, false},
		{"an unreadable log is retriable and keeps the anchor", anchor{Writer: w, TableID: 100}, true, status.Error(codes.Unavailable, "down"), batch(0, 3, 1), kerr.RequestTimedOut.Code, true},
		{"an appendsvc that cannot read logs makes the anchor useless", anchor{Writer: w, TableID: 100}, true, status.Error(codes.Unimplemented, "old"), batch(0, 3, 1), kerr.UnknownProducerID.Code, false},
		{"a missing table is UNKNOWN_TOPIC_OR_PARTITION", anchor{Writer: w, TableID: 100}, true, status.Error(codes.NotFound, "no table"), batch(0, 3, 1), kerr.UnknownTopicOrPartition.Code, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, store, fake := persistentStates(t)
			if tc.seed {
				fake.Seed(100, 3, w, 0, "a", "b", "c")
			}
			if tc.fail != nil {
				fake.ListFail = func(*appendv1.ListWriterBatchesRequest) error { return tc.fail }
			}
			ak := anchorKey{7, "t", 3}
			must(t, store.put(ak, tc.anchor))
			v := ps.admit(ctx, partitionKey{"t", 3}, tbl, tc.b, nil)
			if v.Code != tc.code {
				t.Fatalf("%v (%s), want %v", kerr.ErrorForCode(v.Code), v.Msg, kerr.ErrorForCode(tc.code))
			}
			if _, ok := store.get(ak); ok != tc.keepAnchor {
				t.Fatalf("anchor kept: %v, want %v", ok, tc.keepAnchor)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
