package produce

import (
	"context"
	"sync"
)

// Sequencer keeps Kafka's per-partition order between the point a batch is
// read and the point its append is handed to the append stream: batches
// transcode in parallel, but each waits for its predecessors on the same
// partition to be submitted first. One Sequencer serves every connection,
// so order holds across pipelined requests and across connections.
type Sequencer struct {
	mu    sync.Mutex
	tails map[partitionKey]*Ticket
}

type partitionKey struct {
	topic     string
	partition int32
}

// Ticket is one batch's place in its partition's order.
type Ticket struct {
	seq  *Sequencer
	key  partitionKey
	prev chan struct{} // closed when the predecessor was submitted; nil if none
	done chan struct{}
	once sync.Once
}

// NewSequencer returns an empty sequencer.
func NewSequencer() *Sequencer { return &Sequencer{tails: map[partitionKey]*Ticket{}} }

// Take appends a ticket to the partition's order. Call it in arrival order
// (the connection read loop does).
func (s *Sequencer) Take(topic string, partition int32) *Ticket {
	k := partitionKey{topic, partition}
	t := &Ticket{seq: s, key: k, done: make(chan struct{})}
	s.mu.Lock()
	if tail := s.tails[k]; tail != nil {
		t.prev = tail.done
	}
	s.tails[k] = t
	s.mu.Unlock()
	return t
}

// Wait blocks until every earlier ticket of the partition was released.
func (t *Ticket) Wait(ctx context.Context) error {
	if t.prev == nil {
		return nil
	}
	select {
	case <-t.prev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release lets the next ticket go. It may be called more than once. A
// ticket released before its predecessors (its request failed or timed
// out early) passes the turn on only once they are released too, so a
// later batch can never overtake an earlier one that is still on its way.
func (t *Ticket) Release() {
	t.once.Do(func() {
		finish := func() {
			close(t.done)
			t.seq.mu.Lock()
			if t.seq.tails[t.key] == t {
				delete(t.seq.tails, t.key)
			}
			t.seq.mu.Unlock()
		}
		if t.prev == nil {
			finish()
			return
		}
		select {
		case <-t.prev:
			finish()
		default:
			go func() { <-t.prev; finish() }()
		}
	})
}

// Len reports partitions with tickets outstanding.
func (s *Sequencer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tails)
}
