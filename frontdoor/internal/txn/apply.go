package txn

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// bucketKey is one Fluss bucket: the unit of a writer's sequence.
type bucketKey struct {
	table     int64
	partition string // Fluss partition name; "" for unpartitioned tables
	bucket    int32
}

// apply writes a committing transaction's staged batches, then its
// offsets, and marks it CompleteCommit. It retries until done or the
// coordinator closes: the decision to commit was taken and answered as
// pending, so giving up half-way would leave part of it visible.
//
// writer is the Fluss writer id of a commit read back from the journal,
// with from its batches already stored; -1 for a new commit, which
// allocates one and journals the decision with it first.
func (c *Coordinator) apply(parent context.Context, t *txn, writer int64, from int) {
	defer c.applies.Done()
	c.mu.Lock()
	id, pid, epoch, staged, offsets := t.id, t.producerID, t.epoch, t.staged, t.offsets
	c.mu.Unlock()
	start := time.Now()
	ctx, span := c.tracer.Start(parent, "ferry.txn.apply", trace.WithAttributes(
		attribute.String("ferry.transactional_id", id), attribute.Int64("ferry.producer_id", pid),
		attribute.Int("ferry.producer_epoch", int(epoch)), attribute.Int("ferry.batches", len(staged))))
	defer span.End()

	err := c.applyBatches(ctx, t, staged, writer, from)
	if err == nil {
		err = c.applyOffsets(ctx, id, offsets)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		// Only a closing coordinator stops an apply; what was not applied
		// is lost with the process (docs/transactions.md).
		span.SetStatus(codes.Error, err.Error())
		c.log.Error("transaction commit not fully applied: coordinator closing", "transactional_id", id, "err", err)
		return
	}
	c.staged -= t.bytes
	t.bytes, t.staged = 0, nil
	c.unmarkPendingLocked(t)
	t.offsets = map[string]map[TopicPartition]*fetchv1.CommittedOffset{}
	t.state, t.updated = CompleteCommit, time.Now()
	c.persist(id, func(j *journal) error { return j.reset(t) })
	close(t.applied)
	c.metrics.ended(true)
	c.metrics.applyTook(ctx, time.Since(start))
	c.log.Info("transaction committed", "transactional_id", id, "producer_id", pid, "epoch", epoch,
		"batches", len(staged), "groups", len(offsets), "apply_ms", time.Since(start).Milliseconds())
}

// applyBatches appends the staged batches in staging order with one fresh
// Fluss writer id, numbering batches per bucket from 0. A batch is resent
// with the same numbers until Fluss stores it or answers it as a
// duplicate, so a resend stores nothing twice.
func (c *Coordinator) applyBatches(ctx context.Context, t *txn, staged []*Staged, writer int64, from int) error {
	id := t.id
	if writer < 0 {
		if err := c.retry(ctx, id, "allocate writer id", func() (bool, error) {
			w, err := c.backend.NewWriterID(ctx)
			writer = w
			return err != nil, err
		}); err != nil {
			return err
		}
		// The decision, with the writer a replay must use, is durable
		// before anything is written.
		if err := c.retry(ctx, id, "journal the commit", func() (bool, error) {
			if c.journal == nil {
				return false, nil
			}
			err := c.journal.add(id, entry{Kind: kindPrepare, Writer: writer})
			return err != nil, err
		}); err != nil {
			return err
		}
	}
	// Every batch is numbered, the ones stored before a restart too, so
	// that a resent batch gets the sequence it was first sent with.
	seqs := map[bucketKey]int32{}
	for i, s := range staged {
		req := s.Append
		req.WriterId = writer
		if len(req.Pieces) == 0 {
			k := bucketKey{req.TableId, "", req.BucketId}
			req.BatchSequence = seqs[k]
			seqs[k]++
		} else {
			req.BatchSequence = -1
			for _, p := range req.Pieces {
				k := bucketKey{req.TableId, p.PartitionName, p.BucketId}
				p.BatchSequence = seqs[k]
				seqs[k]++
			}
		}
		if i < from {
			continue
		}
		what := fmt.Sprintf("batch %d of %d (%s-%d)", i+1, len(staged), s.Topic, s.Partition)
		err := c.retry(ctx, id, what, func() (bool, error) {
			actx, cancel := context.WithTimeout(ctx, appendTimeout)
			actx, bspan := c.tracer.Start(actx, "ferry.txn.apply_batch", trace.WithAttributes(
				attribute.String("messaging.destination.name", s.Topic), attribute.Int("messaging.destination.partition.id", int(s.Partition)),
				attribute.Int64("fluss.writer_id", writer)))
			defer bspan.End()
			defer cancel()
			req.TimeoutMs = int32(appendTimeout.Milliseconds())
			ar, err := c.backend.Append(actx, req)
			switch {
			case err != nil:
				return true, err
			case ar.GetKafkaErrorCode() != 0 || ar.GetErrorCode() != 0:
				// Retried whatever the code: the batch was transcoded and
				// accepted at produce time, so a refusal now is a Fluss
				// condition (leader move, table busy) that passes, or a
				// dropped table, which the log line makes visible.
				return true, fmt.Errorf("fluss error %d (kafka %d): %s", ar.GetErrorCode(), ar.GetKafkaErrorCode(), ar.GetErrorMessage())
			}
			return false, nil
		})
		if err != nil {
			return err
		}
		// Progress: after a restart, the replay starts after this batch
		// (the one after it may be stored and unrecorded; it is then the
		// bucket's latest batch of the writer, which Fluss recognises as
		// a duplicate).
		if err := c.retry(ctx, id, "journal progress", func() (bool, error) {
			if c.journal == nil {
				return false, nil
			}
			err := c.journal.add(id, entry{Kind: kindApplied, Applied: i + 1})
			return err != nil, err
		}); err != nil {
			return err
		}
	}
	return nil
}

// appendTimeout bounds one append of an apply.
const appendTimeout = 30 * time.Second

// applyOffsets commits the staged offsets of each group.
func (c *Coordinator) applyOffsets(ctx context.Context, id string, offsets map[string]map[TopicPartition]*fetchv1.CommittedOffset) error {
	for group, m := range offsets {
		list := make([]*fetchv1.CommittedOffset, 0, len(m))
		now := time.Now().UnixMilli()
		for _, o := range m {
			o.CommitTimeMs = now
			list = append(list, o)
		}
		if err := c.retry(ctx, id, "offsets of group "+group, func() (bool, error) {
			err := c.backend.CommitOffsets(ctx, group, list)
			return err != nil, err
		}); err != nil {
			return err
		}
	}
	return nil
}

// retry runs step until it succeeds or the coordinator closes, logging
// each failure; pauses double up to 5 s.
func (c *Coordinator) retry(ctx context.Context, id, what string, step func() (again bool, err error)) error {
	pause := c.cfg.RetryPause
	for {
		again, err := step()
		if err == nil {
			return nil
		}
		c.log.Warn("transaction commit: step failed, retrying", "transactional_id", id, "step", what, "err", err)
		c.metrics.applyRetried()
		if !again {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}
