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
func (c *Coordinator) apply(parent context.Context, t *txn) {
	c.mu.Lock()
	id, pid, epoch, staged, offsets := t.id, t.producerID, t.epoch, t.staged, t.offsets
	c.mu.Unlock()
	start := time.Now()
	ctx, span := c.tracer.Start(parent, "ferry.txn.apply", trace.WithAttributes(
		attribute.String("ferry.transactional_id", id), attribute.Int64("ferry.producer_id", pid),
		attribute.Int("ferry.producer_epoch", int(epoch)), attribute.Int("ferry.batches", len(staged))))
	defer span.End()

	err := c.applyBatches(ctx, id, staged)
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
func (c *Coordinator) applyBatches(ctx context.Context, id string, staged []*Staged) error {
	if len(staged) == 0 {
		return nil
	}
	var writer int64
	if err := c.retry(ctx, id, "allocate writer id", func() (bool, error) {
		w, err := c.backend.NewWriterID(ctx)
		writer = w
		return err != nil, err
	}); err != nil {
		return err
	}
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
