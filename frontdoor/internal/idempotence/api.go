// Package idempotence is frontdoor's idempotent-producer state: Kafka's
// per-partition producer sequences translated onto Fluss writer ids and
// batch sequences, optionally anchored in a state directory so that a
// restarted frontdoor can rebuild it from the Fluss log (docs/idempotence.md).
// The produce path asks Admit what to do with each idempotent batch and
// reports the append's outcome with Finish.
package idempotence

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
)

// partitionKey is one Kafka partition of a topic.
type partitionKey struct {
	topic     string
	partition int32
}

// Table is the Fluss table a topic maps to: its buckets are the topic's
// partitions, and the anchors and the log read-back name it.
type Table struct {
	ID              int64
	Database, Table string
}

func (t Table) bucket(partition int32) *appendv1.BucketRef {
	return &appendv1.BucketRef{TableId: t.ID, Database: t.Database, Table: t.Table, BucketId: partition}
}

// Batch is what a record batch header says about its producer.
type Batch struct {
	ProducerID int64
	Epoch      int16
	FirstSeq   int32
	LastSeq    int32 // FirstSeq + lastOffsetDelta, wrapping past MaxInt32
}

// Target is the Fluss bucket a piece of a routed batch goes to.
type Target struct {
	Partition string // Fluss partition name, "" when not partitioned
	Bucket    int32
}

// Verdict is what to do with a batch.
type Verdict struct {
	// Code != 0: answer the partition with this Kafka error and message.
	Code int16
	Msg  string
	// Answered: a duplicate of an acknowledged batch; answer BaseOffset.
	Answered   bool
	BaseOffset int64
	// Otherwise append with Writer and FlussSeq (PieceSeqs, one per target,
	// for a routed batch) and report the outcome with Finish.
	Writer    int64
	FlussSeq  int32
	PieceSeqs []int32
	// Resend: a retry of an earlier batch whose outcome is unknown.
	Resend bool
	entry  *seqEntry
}

// Outcome is how an admitted batch ended.
type Outcome = outcome

// The outcomes Finish takes.
const (
	Stored   = outcomeStored
	Unknown  = outcomeUnknown
	Rejected = outcomeRejected
)

// Admit decides what to do with an idempotent batch for partition of
// topic. Call it in the partition's order, and call Finish with the verdict
// once the append's outcome is known (unless it carries a Code or was
// Answered). targets are the buckets of a routed batch's pieces, nil for a
// batch that goes whole to the partition's bucket.
func (ps *States) Admit(ctx context.Context, topic string, partition int32, tbl Table, b Batch, targets []Target) Verdict {
	return ps.admit(ctx, partitionKey{topic, partition}, tbl, b, targets)
}

// Finish records the outcome of a batch Admit let through.
func (ps *States) Finish(v Verdict, o Outcome, baseOffset int64) {
	if v.entry != nil {
		ps.finish(v.entry, o, baseOffset)
	}
}

// FailedOutcome is what a failed append means for an idempotent batch. A
// resend follows an attempt whose outcome was unknown, so a transient
// refusal of the resend does not prove that attempt stored nothing; a
// definite refusal (a sequence gap, a corrupt batch) does, as Fluss would
// have answered a stored copy's resend as its duplicate.
func FailedOutcome(possiblyStored, retriable, resend bool) Outcome {
	if possiblyStored || (resend && retriable) {
		return outcomeUnknown
	}
	return outcomeRejected
}

// Persist keeps anchors of the state in dir, read back through wlog after
// a restart; without it the state lives in memory only. Call it before the
// first batch.
func (ps *States) Persist(dir string, wlog WriterLog, log *slog.Logger) error {
	store, err := openAnchorStore(dir, log)
	if err != nil {
		return err
	}
	ps.persist(store, wlog, log)
	return nil
}

// StopPersisting writes the anchors that moved and closes the store.
func (ps *States) StopPersisting() error { return ps.stopPersisting() }

// FlushAnchors writes the anchors that moved now, rather than at the next
// tick.
func (ps *States) FlushAnchors() error { return ps.flushAnchors() }

// Abandon closes the anchor store without writing what moved since the
// last tick, leaving it as a crash would (tests of the recovery use it).
func (ps *States) Abandon() error { return ps.stopPersistingWith(false) }

// ForgetAll drops every producer's state in memory, as a restart does;
// persisted anchors stay.
func (ps *States) ForgetAll() { ps.forgetAll() }

// Producer is one idempotent producer's state on one partition, as
// DescribeProducers shows it.
type Producer struct {
	ID    int64
	Epoch int16
	// LastSequence is the last sequence of its newest acknowledged batch,
	// -1 before one was acknowledged here.
	LastSequence int32
	// LastUsed is when the producer last wrote through this frontdoor.
	LastUsed time.Time
}

// Producers lists the producers with state on a topic's partition, by id.
func (ps *States) Producers(topic string, partition int32) []Producer {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []Producer
	key := partitionKey{topic, partition}
	for id, p := range ps.producers {
		st := p.parts[key]
		if st == nil {
			continue
		}
		last := int32(-1)
		for i := len(st.recent) - 1; i >= 0; i-- {
			if st.recent[i].baseOffset >= 0 {
				last = st.recent[i].lastSeq
				break
			}
		}
		if last < 0 && st.nextKafka > 0 {
			last = st.nextKafka - 1 // rebuilt from an anchor: no batch kept
		}
		out = append(out, Producer{ID: id, Epoch: st.epoch, LastSequence: last, LastUsed: p.lastUsed})
	}
	slices.SortFunc(out, func(a, b Producer) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
