package idempotence

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Routed batches (tables that place rows themselves) get a writer per
// Kafka partition and a Fluss sequence per bucket.
func TestProducerStatesRouted(t *testing.T) {
	ps, _ := newStates(t, DefaultConfig())
	ctx := context.Background()
	a, b, c := Target{"p1", 0}, Target{"p1", 1}, Target{"p2", 0}
	batch := func(first, count int32) Batch {
		return Batch{ProducerID: 7, FirstSeq: first, LastSeq: first + count - 1}
	}
	admit := func(partition int32, first, count int32, targets ...Target) Verdict {
		t.Helper()
		v := ps.admit(ctx, partitionKey{"t", partition}, Table{}, batch(first, count), targets)
		if v.Code != 0 {
			t.Fatalf("batch at %d: %s %s", first, kerr.ErrorForCode(v.Code), v.Msg)
		}
		return v
	}
	v1 := admit(0, 0, 3, a, b)
	v2 := admit(0, 3, 2, b, c)
	if !slices.Equal(v1.PieceSeqs, []int32{0, 0}) || !slices.Equal(v2.PieceSeqs, []int32{1, 0}) {
		t.Fatalf("sequences %v then %v, want [0 0] then [1 0] (per bucket)", v1.PieceSeqs, v2.PieceSeqs)
	}
	// Another Kafka partition has a writer of its own, with its own sequences.
	w := admit(1, 0, 1, b)
	if w.Writer == v1.Writer || !slices.Equal(w.PieceSeqs, []int32{0}) {
		t.Fatalf("partition 1: writer %d sequences %v; partition 0 has writer %d", w.Writer, w.PieceSeqs, v1.Writer)
	}
	// A retry of an unfinished batch resends the same sequences.
	ps.finish(v2.entry, outcomeUnknown, -1)
	r := admit(0, 3, 2, b, c)
	if !r.Resend || !slices.Equal(r.PieceSeqs, v2.PieceSeqs) || r.Writer != v2.Writer {
		t.Fatalf("retry: %+v, want a resend of %v", r, v2.PieceSeqs)
	}
	// The same batch split differently (the table changed) is refused, not matched.
	ps.finish(r.entry, outcomeUnknown, -1)
	if v := ps.admit(ctx, partitionKey{"t", 0}, Table{}, batch(3, 2), []Target{c}); v.Code == 0 {
		t.Fatal("a retry with other pieces was accepted")
	}
	// A rejected batch rewinds each of its buckets; the stored one before it keeps its own.
	ps.finish(v1.entry, outcomeStored, 10)
	r = admit(0, 3, 2, b, c)
	ps.finish(r.entry, outcomeRejected, -1)
	next := admit(0, 3, 1, c, a)
	if !slices.Equal(next.PieceSeqs, []int32{0, 1}) {
		t.Fatalf("after a rejected batch: sequences %v, want [0 1]", next.PieceSeqs)
	}
	// A retry of the stored batch is answered with its offset.
	if v := ps.admit(ctx, partitionKey{"t", 0}, Table{}, batch(0, 3), []Target{a, b}); !v.Answered || v.BaseOffset != 10 {
		t.Fatalf("retry of a stored batch: %+v", v)
	}
}
