package appender

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/kvbatch"
)

// A routed job is one Kafka batch of a table that places rows itself (a
// primary key, partition columns or a bucket key), already split by
// transcodesvc into pieces, one per Fluss bucket. The pieces are written
// together: every partition they name is resolved (and created) first, so
// a partition that cannot exist fails the job before anything is written;
// then all pieces go out in one call per attempt (one request per leader),
// and only the pieces that failed retriably are sent again.

// routedPiece is one piece, encoded.
type routedPiece struct {
	name    string // Fluss partition name, "" when not partitioned
	batch   fluss.BucketBatch
	records int64
	// Outcome so far.
	done      bool
	offset    int64
	err       error
	mayStored bool // an attempt may have stored it
}

// bucketOf names a piece's bucket: partition name and bucket id.
type bucketOf struct {
	partition string
	bucket    int32
}

// routedKey is the queue of a Kafka partition's routed jobs: jobs of one
// Kafka partition are written in order, whatever buckets they touch.
func routedKey(req *appendv1.AppendRequest) bucketKey {
	return bucketKey{table: req.GetTableId(), partition: routedQueue, bucket: req.GetBucketId()}
}

// routedQueue marks queues of routed jobs, keyed by Kafka partition.
const routedQueue = -2

// buildRouted validates a request with pieces and encodes each piece.
func (s *Service) buildRouted(j *job) error {
	req := j.req
	opts, err := s.checkRequest(j)
	if err != nil {
		return err
	}
	if len(req.GetArrowIpc()) > 0 || len(req.GetLogRecords()) > 0 {
		return invalid(fluss.CodeInvalidConfig, "a request with pieces must not carry arrow_ipc or log_records")
	}
	idempotent := req.GetWriterId() >= 0
	kv := len(req.GetPieces()[0].GetKvRecords()) > 0
	total := int64(0)
	seen := map[bucketOf]bool{}
	for i, p := range req.GetPieces() {
		switch {
		case p.GetBucketId() < 0:
			return invalid(fluss.CodeUnknownTableOrBucket, "piece %d: bucket_id %d is negative", i, p.GetBucketId())
		case p.GetRecordCount() <= 0:
			return invalid(fluss.CodeCorruptRecord, "piece %d: record_count %d", i, p.GetRecordCount())
		case (len(p.GetKvRecords()) > 0) != kv || (len(p.GetArrowIpc())+len(p.GetLogRecords()) > 0) == kv:
			return invalid(fluss.CodeCorruptRecord, "piece %d: every piece carries either arrow_ipc or log_records (log tables) or kv_records (primary-key tables)", i)
		case idempotent && p.GetBatchSequence() < 0, !idempotent && p.GetBatchSequence() != -1:
			return invalid(fluss.CodeInvalidConfig, "piece %d: batch_sequence %d with writer_id %d", i, p.GetBatchSequence(), req.GetWriterId())
		}
		key := bucketOf{p.GetPartitionName(), p.GetBucketId()}
		if seen[key] {
			return invalid(fluss.CodeInvalidConfig, "piece %d: partition %q bucket %d appears twice", i, p.GetPartitionName(), p.GetBucketId())
		}
		seen[key] = true
		rp := routedPiece{name: p.GetPartitionName(), batch: fluss.BucketBatch{Bucket: p.GetBucketId()}, records: int64(p.GetRecordCount()), offset: -1}
		if kv {
			ko := kvbatch.Options{SchemaID: opts.SchemaID, WriterID: req.GetWriterId(), BatchSequence: p.GetBatchSequence()}
			if rp.batch.Records, err = kvbatch.Frame(nil, p.GetKvRecords(), p.GetRecordCount(), ko); err == nil {
				// The records come from another service: check their framing
				// here rather than have the tablet server refuse the request.
				var recs []kvbatch.Record
				if _, recs, err = kvbatch.Decode(rp.batch.Records); err == nil && len(recs) != int(p.GetRecordCount()) {
					err = fmt.Errorf("%d records, record_count %d", len(recs), p.GetRecordCount())
				}
			}
			if err != nil {
				return invalid(fluss.CodeCorruptRecord, "piece %d: kv_records: %v", i, err)
			}
		} else {
			po := opts
			po.BatchSequence = p.GetBatchSequence()
			if rp.batch.Parts, _, err = s.logBatch(j, p.GetArrowIpc(), p.GetLogRecords(), p.GetRecordCount(), po); err != nil {
				return err
			}
		}
		total += rp.records
		j.pieces = append(j.pieces, rp)
	}
	j.records = total
	j.span.SetAttributes(attribute.Int64("ferry.records", total), attribute.Int("ferry.pieces", len(j.pieces)), attribute.Bool("ferry.kv", kv))
	return nil
}

// produceRouted writes a routed job's pieces, retrying the ones that
// failed retriably until the job's deadline, and sets j.resp (except when
// the stream's context ends first).
func (s *Service) produceRouted(streamCtx context.Context, j *job) {
	ctx, cancel := context.WithDeadline(streamCtx, j.deadline)
	defer cancel()
	kv := len(j.req.GetPieces()[0].GetKvRecords()) > 0
	if err := s.resolvePartitions(ctx, j); err != nil {
		if streamCtx.Err() == nil {
			// Nothing was written: partitions are resolved before any piece.
			j.resp = j.fail(err, false)
			s.log.Warn("append: partitions not available", "table", j.table.Path.String(), "table_id", j.table.ID, "err", err)
		}
		return
	}
	backoff := s.cfg.RetryBackoffMin
	outOfTime := false
	for attempt := 1; ; attempt++ {
		remaining := time.Until(j.deadline)
		if remaining <= 0 || ctx.Err() != nil {
			outOfTime = true
			break
		}
		var todo []int
		for i := range j.pieces {
			if !j.pieces[i].done {
				todo = append(todo, i)
			}
		}
		s.writePieces(ctx, j, kv, todo, remaining, attempt)
		retry, fatal := false, false
		for _, i := range todo {
			p := &j.pieces[i]
			if p.done {
				continue
			}
			if !refusedByFluss(codeOf(p.err)) {
				p.mayStored = true
			}
			if fluss.IsRetriable(p.err) {
				retry = true
			} else {
				fatal = true
			}
		}
		if !retry && !fatal {
			j.resp = &appendv1.AppendResponse{JobId: j.req.GetJobId(), BaseOffset: j.pieces[0].offset}
			return
		}
		if fatal {
			break
		}
		s.log.Debug("append: retrying pieces", "table", j.table.Path.String(), "table_id", j.table.ID, "attempt", attempt, "backoff", backoff)
		select {
		case <-time.After(min(backoff, time.Until(j.deadline))):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, s.cfg.RetryBackoffMax)
	}
	if streamCtx.Err() != nil {
		return
	}
	// The first piece that did not make it decides the answer; the job may
	// be stored in part whenever any piece is or may be.
	var lastErr error
	possiblyStored := false
	for _, p := range j.pieces {
		possiblyStored = possiblyStored || p.done || p.mayStored
		if !p.done && lastErr == nil {
			lastErr = p.err
		}
	}
	lastErr = timeoutError(lastErr, outOfTime, "every piece of the batch")
	j.resp = j.fail(lastErr, possiblyStored)
	s.log.Warn("append failed", "table", j.table.Path.String(), "table_id", j.table.ID, "kafka_partition", j.req.GetBucketId(),
		"pieces", len(j.pieces), "code", fluss.ErrorCode(j.resp.GetErrorCode()).String(), "possibly_stored", possiblyStored, "err", lastErr)
}

// resolvePartitions sets the partition id of every piece, creating the
// partitions that do not exist yet.
func (s *Service) resolvePartitions(ctx context.Context, j *job) error {
	var names []string
	for _, p := range j.pieces {
		if p.name != "" {
			names = append(names, p.name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	ids, err := s.fluss.PartitionIDs(ctx, j.table, names)
	if err != nil {
		return err
	}
	for i := range j.pieces {
		p := &j.pieces[i]
		if p.name == "" {
			continue
		}
		id, ok := ids[p.name]
		if !ok {
			return &fluss.Error{Code: fluss.CodePartitionNotExists, Message: fmt.Sprintf("table %s has no partition %q", j.table, p.name)}
		}
		p.batch.PartitionID = &id
	}
	return nil
}

// writePieces sends the pieces at todo in one call under its own span and
// records each one's outcome.
func (s *Service) writePieces(ctx context.Context, j *job, kv bool, todo []int, remaining time.Duration, attempt int) {
	name := "fluss.ProduceLog"
	if kv {
		name = "fluss.PutKv"
	}
	spanCtx, span := s.tracer.Start(trace.ContextWithSpan(ctx, j.span), name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.Int("ferry.attempt", attempt), attribute.Int("ferry.pieces", len(todo))))
	defer span.End()
	bb := make([]fluss.BucketBatch, len(todo))
	for k, i := range todo {
		bb[k] = j.pieces[i].batch
	}
	timeout := max(remaining.Truncate(time.Millisecond), time.Millisecond)
	offsets := make([]int64, len(todo))
	errs := make([]error, len(todo))
	var err error
	if kv {
		var res []fluss.PutKvResult
		if res, err = s.fluss.PutKv(spanCtx, j.table, j.acks, timeout, bb); err == nil && len(res) == len(bb) {
			for k, r := range res {
				offsets[k], errs[k] = r.LogEndOffset, r.Err
			}
		}
	} else {
		var res []fluss.BucketResult
		if res, err = s.fluss.ProduceLog(spanCtx, j.table, j.acks, timeout, bb); err == nil && len(res) == len(bb) {
			for k, r := range res {
				offsets[k], errs[k] = r.BaseOffset, r.Err
			}
		}
	}
	if err == nil && len(errs) != len(todo) {
		err = fmt.Errorf("appender: %d results for %d pieces", len(errs), len(todo))
	}
	failed := 0
	for k, i := range todo {
		p := &j.pieces[i]
		switch e := errs[k]; {
		case err != nil:
			p.err = err
		case e != nil:
			p.err = e
		default:
			p.done, p.offset, p.err = true, offsets[k], nil
			continue
		}
		failed++
	}
	if failed > 0 {
		span.SetStatus(codes.Error, fmt.Sprintf("%d of %d pieces failed", failed, len(todo)))
	}
}
