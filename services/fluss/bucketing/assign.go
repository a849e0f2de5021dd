package bucketing

import (
	"math/rand/v2"
	"sync/atomic"
)

// The no-key assigners mirror the Java client's StickyBucketAssigner (the
// default, client.writer.bucket.no-key-assigner=STICKY) and
// RoundRobinBucketAssigner. "available" lists the buckets that currently
// have a leader, as Cluster.getAvailableBucketsForPhysicalTablePath does;
// when it is empty any bucket of the table may be picked.

// StickyAssigner keeps sending to one bucket until the batch for it is
// full (OnNewBatch), then moves to another available bucket at random.
// It is safe for concurrent use.
type StickyAssigner struct {
	numBuckets int
	current    atomic.Int32
}

// NewStickyAssigner returns an assigner for a table with numBuckets buckets.
func NewStickyAssigner(numBuckets int) *StickyAssigner {
	s := &StickyAssigner{numBuckets: max(numBuckets, 1)}
	s.current.Store(-1)
	return s
}

// Assign returns the sticky bucket, choosing one on first use.
func (s *StickyAssigner) Assign(available []int32) int32 {
	if b := s.current.Load(); b >= 0 {
		return b
	}
	return s.next(available, -1)
}

// OnNewBatch moves away from prev once its batch closed; a concurrent call
// that already moved wins (compare-and-set, as in Java).
func (s *StickyAssigner) OnNewBatch(available []int32, prev int32) {
	s.next(available, prev)
}

// AbortIfBatchFull is true for the sticky assigner: a record that does not
// fit its bucket's batch is re-assigned after OnNewBatch instead.
func (s *StickyAssigner) AbortIfBatchFull() bool { return true }

func (s *StickyAssigner) next(available []int32, prev int32) int32 {
	old := s.current.Load()
	if old >= 0 && old != prev {
		return old
	}
	next := old
	switch {
	case len(available) == 0:
		next = int32(rand.IntN(s.numBuckets))
	case len(available) == 1:
		next = available[0]
	default:
		for next < 0 || next == old {
			next = available[rand.IntN(len(available))]
		}
	}
	if old < 0 {
		s.current.CompareAndSwap(-1, next)
	} else {
		s.current.CompareAndSwap(prev, next)
	}
	return s.current.Load()
}

// RoundRobinAssigner sends each record to the next available bucket,
// starting at a random position. It is safe for concurrent use.
type RoundRobinAssigner struct {
	numBuckets int
	counter    atomic.Uint32
}

// NewRoundRobinAssigner returns an assigner for a table with numBuckets buckets.
func NewRoundRobinAssigner(numBuckets int) *RoundRobinAssigner {
	r := &RoundRobinAssigner{numBuckets: max(numBuckets, 1)}
	r.counter.Store(rand.Uint32())
	return r
}

// Assign returns the next bucket.
func (r *RoundRobinAssigner) Assign(available []int32) int32 {
	// Java's MathUtils.toPositive(n) is n & 0x7fffffff.
	n := int(r.counter.Add(1)-1) & 0x7fffffff
	if len(available) > 0 {
		return available[n%len(available)]
	}
	return int32(n % r.numBuckets)
}

// AbortIfBatchFull is false: round robin never re-assigns.
func (r *RoundRobinAssigner) AbortIfBatchFull() bool { return false }
