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
	a, b, c := pieceTarget{"p1", 0}, pieceTarget{"p1", 1}, pieceTarget{"p2", 0}
	batch := func(first, count int32) batchIdentity {
		return batchIdentity{producerID: 7, firstSeq: first, lastSeq: first + count - 1}
	}
	admit := func(partition int32, first, count int32, targets ...pieceTarget) verdict {
		t.Helper()
		v := ps.admit(ctx, partitionKey{"t", partition}, tableRef{}, batch(first, count), targets)
		if v.code != 0 {
			t.Fatalf("batch at %d: %s %s", first, kerr.ErrorForCode(v.code), v.msg)
		}
		return v
	}
	v1 := admit(0, 0, 3, a, b)
	v2 := admit(0, 3, 2, b, c)
	if !slices.Equal(v1.pieceSeqs, []int32{0, 0}) || !slices.Equal(v2.pieceSeqs, []int32{1, 0}) {
		t.Fatalf("sequences %v then %v, want [0 0] then [1 0] (per bucket)", v1.pieceSeqs, v2.pieceSeqs)
	}
	// Another Kafka partition has a writer of its own, with its own sequences.
	w := admit(1, 0, 1, b)
	if w.writer == v1.writer || !slices.Equal(w.pieceSeqs, []int32{0}) {
		t.Fatalf("partition 1: writer %d sequences %v; partition 0 has writer %d", w.writer, w.pieceSeqs, v1.writer)
	}
	// A retry of an unfinished batch resends the same sequences.
	ps.finish(v2.entry, outcomeUnknown, -1)
	r := admit(0, 3, 2, b, c)
	if !r.resend || !slices.Equal(r.pieceSeqs, v2.pieceSeqs) || r.writer != v2.writer {
		t.Fatalf("retry: %+v, want a resend of %v", r, v2.pieceSeqs)
	}
	// The same batch split differently (the table changed) is refused, not matched.
	ps.finish(r.entry, outcomeUnknown, -1)
	if v := ps.admit(ctx, partitionKey{"t", 0}, tableRef{}, batch(3, 2), []pieceTarget{c}); v.code == 0 {
		t.Fatal("a retry with other pieces was accepted")
	}
	// A rejected batch rewinds each of its buckets; the stored one before it keeps its own.
	ps.finish(v1.entry, outcomeStored, 10)
	r = admit(0, 3, 2, b, c)
	ps.finish(r.entry, outcomeRejected, -1)
	next := admit(0, 3, 1, c, a)
	if !slices.Equal(next.pieceSeqs, []int32{0, 1}) {
		t.Fatalf("after a rejected batch: sequences %v, want [0 1]", next.pieceSeqs)
	}
	// A retry of the stored batch is answered with its offset.
	if v := ps.admit(ctx, partitionKey{"t", 0}, tableRef{}, batch(0, 3), []pieceTarget{a, b}); !v.answered || v.baseOffset != 10 {
		t.Fatalf("retry of a stored batch: %+v", v)
	}
}
