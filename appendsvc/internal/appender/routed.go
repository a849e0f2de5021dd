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

// routedKey is the queue of a routed job. Jobs of one Kafka partition are
// written in order, whatever buckets they touch, as a queue is FIFO. The
// non-idempotent jobs of a primary-key table share one queue for all its
// Kafka partitions: the producer's partitioner and Fluss's bucketing differ,
// so every Kafka batch has a piece for most buckets, and only jobs of one
// queue are merged into one KV batch per bucket (produceRoutedGroup).
// Other routed jobs are queued per Kafka partition and never merged.
func routedKey(req *appendv1.AppendRequest) bucketKey {
	if req.GetWriterId() < 0 && len(req.GetPieces()[0].GetKvRecords()) > 0 {
		return bucketKey{table: req.GetTableId(), partition: routedQueue, bucket: wholeTable}
	}
	return bucketKey{table: req.GetTableId(), partition: routedQueue, bucket: req.GetBucketId()}
}

const (
	// routedQueue marks queues of routed jobs.
	routedQueue = -2
	// wholeTable is the bucket of the queue a table's mergeable jobs share.
	wholeTable = -1
)

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

// produceRoutedGroup writes a group of routed jobs (one, or several
// non-idempotent KV jobs that coalesce) and sets each job's resp, except
// when the stream's context ends first. The pieces of several jobs for one
// bucket are merged into one KV batch, records in job order, so one PutKv
// request carries the group; each job is then answered from the outcome of
// the merged batches its pieces went into.
func (s *Service) produceRoutedGroup(streamCtx context.Context, group []*job) {
	var live []*job
	for _, j := range group {
		ctx, cancel := context.WithDeadline(streamCtx, j.deadline)
		err := s.resolvePartitions(ctx, j)
		cancel()
		if err == nil {
			live = append(live, j)
			continue
		}
		if streamCtx.Err() == nil {
			// Nothing of this job was written: partitions are resolved first.
			j.resp = j.fail(err, false)
			s.log.Warn("append: partitions not available", "table", j.table.Path.String(), "table_id", j.table.ID, "err", err)
		}
	}
	if len(live) == 0 {
		return
	}
	carrier, from, err := mergeRouted(live)
	if err != nil {
		for _, j := range live {
			j.resp = j.fail(err, false)
		}
		return
	}
	outOfTime := s.writeRouted(streamCtx, carrier, len(live))
	if streamCtx.Err() != nil {
		return
	}
	for k, j := range live {
		jobOutOfTime := outOfTime
		if carrier != j {
			var alone []int
			for i := range j.pieces {
				m := carrier.pieces[from[k][i]]
				p := &j.pieces[i]
				p.done, p.offset, p.err, p.mayStored = m.done, m.offset, m.err, m.mayStored
				if !m.done && !fluss.IsRetriable(m.err) && refusedByFluss(codeOf(m.err)) {
					alone = append(alone, i)
				}
			}
			// Fluss refused a merged batch and stored none of it: the
			// refusal may come from another job's records, so this job's
			// own batches for those buckets go alone, in job order, and
			// each job gets its own answer as it would unmerged.
			if len(alone) > 0 {
				jobOutOfTime = s.writeAlone(streamCtx, j, alone) || outOfTime
			}
		}
		s.answerRouted(j, jobOutOfTime)
	}
}

// writeAlone writes again, on their own, the pieces at idx of j.
func (s *Service) writeAlone(streamCtx context.Context, j *job, idx []int) bool {
	sub := &job{req: j.req, table: j.table, ctx: j.ctx, span: j.span, deadline: j.deadline, acks: j.acks}
	for _, i := range idx {
		p := j.pieces[i]
		p.done, p.err, p.mayStored, p.offset = false, nil, false, -1
		sub.pieces = append(sub.pieces, p)
	}
	outOfTime := s.writeRouted(streamCtx, sub, 1)
	for k, i := range idx {
		j.pieces[i] = sub.pieces[k]
	}
	return outOfTime
}

// mergeRouted is the job that carries a group's pieces to Fluss: the job
// itself when alone, else one whose pieces are the group's merged by
// bucket; from[k][i] is the carrier piece job k's piece i went into.
func mergeRouted(group []*job) (*job, [][]int, error) {
	if len(group) == 1 {
		return group[0], nil, nil
	}
	first := group[0]
	carrier := &job{req: first.req, table: first.table, ctx: first.ctx, span: first.span, deadline: first.deadline, acks: first.acks}
	index := map[bucketOf]int{}
	var raw [][]byte // the merged pieces' records, headers left out
	var counts []int32
	from := make([][]int, len(group))
	for k, j := range group {
		carrier.deadline = minTime(carrier.deadline, j.deadline)
		from[k] = make([]int, len(j.pieces))
		for i, p := range j.pieces {
			key := bucketOf{p.name, p.batch.Bucket}
			m, ok := index[key]
			if !ok {
				m = len(carrier.pieces)
				index[key] = m
				carrier.pieces = append(carrier.pieces, routedPiece{name: p.name, batch: fluss.BucketBatch{PartitionID: p.batch.PartitionID, Bucket: p.batch.Bucket}, offset: -1})
				raw, counts = append(raw, nil), append(counts, 0)
			}
			raw[m] = append(raw[m], j.req.GetPieces()[i].GetKvRecords()...)
			counts[m] += j.req.GetPieces()[i].GetRecordCount()
			carrier.pieces[m].records += p.records
			from[k][i] = m
		}
	}
	opts := kvbatch.DefaultOptions(int16(first.req.GetSchemaId()))
	for m := range carrier.pieces {
		b, err := kvbatch.Frame(nil, raw[m], counts[m], opts)
		if err != nil {
			return nil, nil, invalid(fluss.CodeCorruptRecord, "merging kv_records: %v", err)
		}
		carrier.pieces[m].batch.Records = b
	}
	return carrier, from, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// writeRouted writes j's pieces (for jobs Kafka batches), retrying the ones
// that failed retriably until j's deadline, and tells whether it ran out of
// time.
func (s *Service) writeRouted(streamCtx context.Context, j *job, jobs int) (outOfTime bool) {
	ctx, cancel := context.WithDeadline(streamCtx, j.deadline)
	defer cancel()
	kv := j.isKV()
	backoff := s.cfg.RetryBackoffMin
	for attempt := 1; ; attempt++ {
		remaining := time.Until(j.deadline)
		if remaining <= 0 || ctx.Err() != nil {
			return true
		}
		var todo []int
		for i := range j.pieces {
			if !j.pieces[i].done {
				todo = append(todo, i)
			}
		}
		s.writePieces(ctx, j, kv, todo, remaining, attempt, jobs)
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
		if !retry || fatal {
			return false
		}
		s.log.Debug("append: retrying pieces", "table", j.table.Path.String(), "table_id", j.table.ID, "attempt", attempt, "backoff", backoff)
		select {
		case <-time.After(min(backoff, time.Until(j.deadline))):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, s.cfg.RetryBackoffMax)
	}
}

// answerRouted sets j.resp from the outcome of its pieces.
func (s *Service) answerRouted(j *job, outOfTime bool) {
	// The first piece that did not make it decides the answer; the job may
	// be stored in part whenever any piece is or may be.
	var lastErr error
	possiblyStored, failed := false, false
	for _, p := range j.pieces {
		possiblyStored = possiblyStored || p.done || p.mayStored
		if !p.done && !failed {
			lastErr, failed = p.err, true
		}
	}
	if !failed {
		j.resp = &appendv1.AppendResponse{JobId: j.req.GetJobId(), BaseOffset: j.pieces[0].offset}
		return
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
func (s *Service) writePieces(ctx context.Context, j *job, kv bool, todo []int, remaining time.Duration, attempt, jobs int) {
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
	s.requestJobs.Record(ctx, int64(jobs))
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
