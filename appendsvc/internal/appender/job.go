package appender

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
)

// job is one AppendRequest on its way through the service.
type job struct {
	req      *appendv1.AppendRequest
	table    Table
	ctx      context.Context // carries the append span
	span     trace.Span
	start    time.Time
	deadline time.Time
	acks     fluss.Acks
	records  int64
	// batch is the Fluss log batch in parts (a header and the request's
	// records section, which stays where the request holds it).
	batch [][]byte
	// pieces, instead of batch, for a request with pieces (routed.go).
	pieces []routedPiece
	resp   *appendv1.AppendResponse
}

// jobError is a failure decided inside the service, with the Fluss code
// the answer carries.
type jobError struct {
	code      fluss.ErrorCode
	retriable bool
	msg       string
}

func (e *jobError) Error() string { return fmt.Sprintf("%s: %s", e.code, e.msg) }

// codeOf is the Fluss code err carries, a jobError's included.
func codeOf(err error) fluss.ErrorCode {
	if je := (*jobError)(nil); errors.As(err, &je) {
		return je.code
	}
	return fluss.CodeOf(err)
}

func invalid(code fluss.ErrorCode, format string, args ...any) error {
	return &jobError{code: code, msg: fmt.Sprintf(format, args...)}
}

func (s *Service) newJob(streamCtx context.Context, req *appendv1.AppendRequest) *job {
	ctx := s.traceContext(streamCtx, req.GetTrace())
	attrs := []attribute.KeyValue{
		attribute.Int64("ferry.job_id", int64(req.GetJobId())),
		attribute.Int64("fluss.table_id", req.GetTableId()),
		attribute.String("fluss.table", fluss.TablePath{Database: req.GetDatabase(), Table: req.GetTable()}.String()),
		attribute.Int("fluss.bucket", int(req.GetBucketId())),
		attribute.Int("ferry.rows_bytes", len(req.GetLogRecords())+len(req.GetArrowIpc())),
	}
	if req.PartitionId != nil {
		attrs = append(attrs, attribute.Int64("fluss.partition_id", req.GetPartitionId()))
	}
	ctx, span := s.tracer.Start(ctx, "append", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	timeout := s.cfg.DefaultTimeout
	if ms := req.GetTimeoutMs(); ms > 0 {
		timeout = min(time.Duration(ms)*time.Millisecond, s.cfg.MaxTimeout)
	}
	now := time.Now()
	return &job{req: req, table: Table{ID: req.GetTableId(), Path: fluss.TablePath{Database: req.GetDatabase(), Table: req.GetTable()}},
		ctx: ctx, span: span, start: now, deadline: now.Add(timeout), acks: fluss.Acks(req.GetAcks())}
}

// coalescesWith tells whether o may share a produce request with j (same
// bucket is given by the queue). Idempotent batches (with a writer id) go
// alone: Fluss answers a request in which it finds any duplicate batch as a
// duplicate of that one and appends none of the others, so a retried batch
// sharing a request with a new one would lose the new one.
//
// Routed jobs of a primary-key table coalesce with each other the same way
// (routed.go, produceRoutedGroup): their pieces for one bucket are merged
// into one KV batch. Only non-idempotent ones: a merged batch would need
// one writer sequence for several Kafka batches, and a retried one would
// be taken as a duplicate whole.
func (j *job) coalescesWith(o *job) bool {
	if j.acks != o.acks || o.resp != nil || j.req.GetWriterId() >= 0 || o.req.GetWriterId() >= 0 {
		return false
	}
	jr, or := len(j.req.GetPieces()) > 0, len(o.req.GetPieces()) > 0
	if !jr && !or {
		return true
	}
	return jr && or && j.isKV() && o.isKV() && j.req.GetSchemaId() == o.req.GetSchemaId()
}

// isKV tells whether j is a routed job of a primary-key table.
func (j *job) isKV() bool {
	return len(j.req.GetPieces()) > 0 && len(j.req.GetPieces()[0].GetKvRecords()) > 0
}

// fail is the answer for a job that ended with err; possiblyStored says
// whether Fluss may hold the batch all the same.
func (j *job) fail(err error, possiblyStored bool) *appendv1.AppendResponse {
	code, retriable, msg := codeOf(err), fluss.IsRetriable(err), err.Error()
	if je := (*jobError)(nil); errors.As(err, &je) {
		retriable, msg = je.retriable, je.msg
	}
	return &appendv1.AppendResponse{
		JobId:          j.req.GetJobId(),
		BaseOffset:     -1,
		ErrorCode:      int32(code),
		ErrorMessage:   msg,
		Retriable:      retriable,
		KafkaErrorCode: int32(kafkaCodeFor(code, retriable, possiblyStored, j.req.GetWriterId() >= 0)),
		PossiblyStored: possiblyStored,
		TableNotExist:  code == fluss.CodeTableNotExist,
	}
}

// finish ends the job's span with its outcome.
func (j *job) finish(resp *appendv1.AppendResponse) {
	if resp.GetErrorCode() != 0 {
		j.span.SetStatus(codes.Error, resp.GetErrorMessage())
		j.span.SetAttributes(attribute.Int("fluss.error_code", int(resp.GetErrorCode())), attribute.Bool("ferry.retriable", resp.GetRetriable()),
			attribute.Int("kafka.error_code", int(resp.GetKafkaErrorCode())), attribute.Bool("ferry.possibly_stored", resp.GetPossiblyStored()))
	} else {
		j.span.SetAttributes(attribute.Int64("fluss.base_offset", resp.GetBaseOffset()))
	}
	j.span.End()
}

func (j *job) abandon(err error) {
	j.span.SetStatus(codes.Error, fmt.Sprintf("stream ended before Fluss answered: %v", err))
	j.span.End()
}

// build validates the request and turns its Arrow IPC stream into j.batch.
func (s *Service) build(j *job) error {
	req := j.req
	opts, err := s.checkRequest(j)
	if err != nil {
		return err
	}
	if req.GetBucketId() < 0 {
		return invalid(fluss.CodeUnknownTableOrBucket, "bucket_id %d is negative", req.GetBucketId())
	}
	if j.batch, j.records, err = s.logBatch(j, req.GetArrowIpc(), req.GetLogRecords(), req.GetRecordCount(), opts); err != nil {
		return err
	}
	j.span.SetAttributes(attribute.Int64("ferry.records", j.records), attribute.Int("fluss.batch_bytes", partsSize(j.batch)))
	return nil
}

// checkRequest validates what every request carries and returns the log
// batch options it asks for.
func (s *Service) checkRequest(j *job) (logbatch.Options, error) {
	req := j.req
	if err := s.checkPath(req); err != nil {
		return logbatch.Options{}, err
	}
	switch j.acks {
	case fluss.AcksNone, fluss.AcksLeader, fluss.AcksAll:
	default:
		return logbatch.Options{}, invalid(fluss.CodeInvalidRequiredAcks, "acks %d is not 0, 1 or -1", req.GetAcks())
	}
	if req.GetTimeoutMs() < 0 {
		return logbatch.Options{}, invalid(fluss.CodeInvalidConfig, "timeout_ms %d is negative", req.GetTimeoutMs())
	}
	if id := req.GetSchemaId(); id < 0 || id > math.MaxInt16 {
		return logbatch.Options{}, invalid(fluss.CodeSchemaNotExist, "schema_id %d outside 0..%d", id, math.MaxInt16)
	}
	comp, ok := logbatch.CompressionOf(req.GetArrowCompression())
	if !ok {
		return logbatch.Options{}, invalid(fluss.CodeInvalidConfig, "arrow_compression %d unknown", req.GetArrowCompression())
	}
	level := int(req.GetArrowCompressionLevel())
	if comp == logbatch.CompressionZSTD && level != 0 && (level < 1 || level > 22) {
		return logbatch.Options{}, invalid(fluss.CodeInvalidConfig, "ZSTD level %d outside 1..22", level)
	}
	if req.GetWriterId() < logbatch.NoWriterID || req.GetBatchSequence() < logbatch.NoBatchSequence {
		return logbatch.Options{}, invalid(fluss.CodeInvalidConfig, "writer_id %d / batch_sequence %d below -1", req.GetWriterId(), req.GetBatchSequence())
	}
	return logbatch.Options{
		Magic:         s.cfg.Magic,
		SchemaID:      int16(req.GetSchemaId()),
		Compression:   comp,
		ZSTDLevel:     level,
		WriterID:      req.GetWriterId(),
		BatchSequence: req.GetBatchSequence(),
		AppendOnly:    true,
	}, nil
}

// logBatch turns the rows of a request, an Arrow IPC stream of count rows
// (0: any) or a records section of count rows, into a Fluss log batch with
// opts, in parts, after checking them against the table's schema.
func (s *Service) logBatch(j *job, arrowIPC, records []byte, count int32, opts logbatch.Options) ([][]byte, int64, error) {
	switch {
	case len(records) > 0 && len(arrowIPC) > 0:
		return nil, 0, invalid(fluss.CodeInvalidConfig, "a request carries arrow_ipc or log_records, not both")
	case len(records) > 0:
		return s.framedBatch(j, records, count, opts)
	}
	r, err := ipc.NewReader(bytes.NewReader(arrowIPC), ipc.WithAllocator(&s.arrowMem))
	if err != nil {
		return nil, 0, invalid(fluss.CodeCorruptRecord, "arrow_ipc: %v", err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, 0, invalid(fluss.CodeCorruptRecord, "arrow_ipc record batch: %v", err)
		}
		return nil, 0, invalid(fluss.CodeCorruptRecord, "arrow_ipc holds no record batch")
	}
	rec := r.RecordBatch()
	// The reader releases its current record on the next Next call below.
	rec.Retain()
	defer rec.Release()
	if rec.NumRows() == 0 {
		return nil, 0, invalid(fluss.CodeCorruptRecord, "arrow_ipc record batch has no rows")
	}
	if count != 0 && int64(count) != rec.NumRows() {
		return nil, 0, invalid(fluss.CodeCorruptRecord, "record_count %d but the Arrow batch has %d rows", count, rec.NumRows())
	}
	if r.Next() {
		return nil, 0, invalid(fluss.CodeCorruptRecord, "arrow_ipc holds more than one record batch")
	}
	if err := r.Err(); err != nil {
		return nil, 0, invalid(fluss.CodeCorruptRecord, "arrow_ipc: %v", err)
	}
	ts, err := s.schemaFor(j)
	if err != nil {
		return nil, 0, err
	}
	if err := checkRecord(rec, ts); err != nil {
		return nil, 0, invalid(fluss.CodeCorruptRecord, "batch does not match schema %d of table %s: %v", j.req.GetSchemaId(), j.table, err)
	}
	b, _ := s.builders.Get().(*logbatch.Builder)
	if b == nil {
		b = logbatch.NewBuilder()
	}
	defer s.builders.Put(b)
	batch, err := b.Append(nil, rec, opts)
	if err != nil {
		return nil, 0, invalid(fluss.CodeCorruptRecord, "%v", err)
	}
	return [][]byte{batch}, rec.NumRows(), nil
}

// framedBatch puts the header for opts in front of a records section
// transcodesvc built, after checking its layout against the table's schema
// (logbatch.CheckRecords: without decompressing it). The records are not
// copied: the batch is the header and them.
func (s *Service) framedBatch(j *job, records []byte, count int32, opts logbatch.Options) ([][]byte, int64, error) {
	if count <= 0 {
		return nil, 0, invalid(fluss.CodeCorruptRecord, "log_records needs a record_count, not %d", count)
	}
	ts, err := s.schemaFor(j)
	if err != nil {
		return nil, 0, err
	}
	if err := logbatch.CheckRecords(records, ts.arrow, count, opts.Compression); err != nil {
		return nil, 0, invalid(fluss.CodeCorruptRecord, "log_records do not match schema %d of table %s: %v", j.req.GetSchemaId(), j.table, err)
	}
	header, err := logbatch.AppendHeader(nil, records, count, opts)
	if err != nil {
		return nil, 0, invalid(fluss.CodeCorruptRecord, "%v", err)
	}
	return [][]byte{header, records}, int64(count), nil
}

// partsSize is the length of a batch kept in parts.
func partsSize(parts [][]byte) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// schemaFor is the schema version j's request names.
func (s *Service) schemaFor(j *job) (*tableSchema, error) {
	if v, ok := s.schemas.Load(schemaKey{j.table.ID, j.req.GetSchemaId()}); ok {
		return v.(*tableSchema), nil // known: no deadline context to build
	}
	sctx, cancel := context.WithDeadline(j.ctx, j.deadline)
	defer cancel()
	return s.schemaOf(sctx, j.table, j.req.GetSchemaId())
}

// checkPath refuses requests without the table path: the Fluss client
// routes by id only for tables it has looked up by path, and a request
// without one comes from a frontdoor older than this appendsvc, which must
// be upgraded (no retry can help). The first refusal is logged; the others
// are in the job spans and the jobs metric.
func (s *Service) checkPath(req *appendv1.AppendRequest) error {
	var missing string
	switch {
	case req.GetDatabase() == "" && req.GetTable() == "":
		missing = "database and table are"
	case req.GetDatabase() == "":
		missing = "database is"
	case req.GetTable() == "":
		missing = "table is"
	default:
		return nil
	}
	err := invalid(fluss.CodeInvalidConfig, "AppendRequest.%s empty: appendsvc needs the Fluss table path of table_id %d (is frontdoor older than appendsvc?)",
		missing, req.GetTableId())
	if s.warnedNoPath.CompareAndSwap(false, true) {
		s.log.Warn("append request without table path refused; further ones are not logged", "table_id", req.GetTableId(), "err", err)
	}
	return err
}

// produce sends a group of built jobs for one bucket as consecutive batches
// in one request, retrying retriable failures with backoff until the
// earliest deadline of the group. It sets every job's resp, except when the
// stream's context ends first. A group fails or succeeds as a whole, as the
// server appends the request's batches together.
func (s *Service) produce(streamCtx context.Context, group []*job) {
	first := group[0]
	deadline := first.deadline
	var parts [][]byte // the group's batches back to back, not copied
	for _, j := range group {
		if j.deadline.Before(deadline) {
			deadline = j.deadline
		}
		parts = append(parts, j.batch...)
	}
	bb := []fluss.BucketBatch{{PartitionID: first.req.PartitionId, Bucket: first.req.GetBucketId(), Parts: parts}}
	if first.req.PartitionId != nil {
		p := first.req.GetPartitionId()
		bb[0].PartitionID = &p
	}
	ctx, cancel := context.WithDeadline(streamCtx, deadline)
	defer cancel()

	backoff := s.cfg.RetryBackoffMin
	var lastErr error
	outOfTime := false
	// Whether an attempt before the last one may have stored the batches.
	earlierMayHaveStored := false
	for attempt := 1; ; attempt++ {
		remaining := time.Until(deadline)
		if remaining <= 0 || ctx.Err() != nil {
			outOfTime = true
			break
		}
		baseOffset, err := s.produceOnce(ctx, group, bb, remaining, attempt)
		if err == nil {
			off := baseOffset
			for _, j := range group {
				j.resp = &appendv1.AppendResponse{JobId: j.req.GetJobId(), BaseOffset: off}
				off += j.records
			}
			return
		}
		if lastErr != nil && !refusedByFluss(codeOf(lastErr)) {
			earlierMayHaveStored = true
		}
		lastErr = err
		if !fluss.IsRetriable(err) {
			break
		}
		s.log.Debug("append: retrying", "table", first.table.Path.String(), "table_id", first.table.ID, "bucket", first.req.GetBucketId(),
			"attempt", attempt, "backoff", backoff, "err", err)
		select {
		case <-time.After(min(backoff, time.Until(deadline))):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, s.cfg.RetryBackoffMax)
	}
	if streamCtx.Err() != nil {
		return // nobody to answer
	}
	lastErr = timeoutError(lastErr, outOfTime, "the batch")
	// An idempotent batch goes alone and is resent with its sequence, so
	// Fluss's last answer settles it (a stored copy makes the resend
	// succeed as a duplicate); other batches may also be stored by an
	// earlier attempt whose answer was lost.
	possiblyStored := !refusedByFluss(codeOf(lastErr)) || (first.req.GetWriterId() < 0 && earlierMayHaveStored)
	for _, j := range group {
		j.resp = j.fail(lastErr, possiblyStored)
	}
	s.log.Warn("append failed", "table", first.table.Path.String(), "table_id", first.table.ID, "bucket", first.req.GetBucketId(),
		"jobs", len(group), "code", fluss.ErrorCode(group[0].resp.GetErrorCode()).String(), "err", lastErr)
}

// timeoutError is the error a job that ran out of time (or got no answer at
// all) ends with: a retriable REQUEST_TIME_OUT, since the outcome of an
// attempt in flight is unknown and the caller may retry, as Kafka clients do
// on a timeout. Any other lastErr is returned as it is.
func timeoutError(lastErr error, outOfTime bool, what string) error {
	if lastErr != nil && !(outOfTime && fluss.IsRetriable(lastErr)) && !errors.Is(lastErr, context.DeadlineExceeded) {
		return lastErr
	}
	msg := "request timed out before Fluss acknowledged " + what
	if lastErr != nil {
		msg += ": " + lastErr.Error()
	}
	return &jobError{code: fluss.CodeRequestTimeOut, retriable: true, msg: msg}
}

// produceOnce is one ProduceLog call under its own span, child of the first
// job's append span and linked to the others'.
func (s *Service) produceOnce(ctx context.Context, group []*job, bb []fluss.BucketBatch, remaining time.Duration, attempt int) (int64, error) {
	links := make([]trace.Link, 0, len(group)-1)
	for _, j := range group[1:] {
		links = append(links, trace.Link{SpanContext: j.span.SpanContext()})
	}
	spanCtx := trace.ContextWithSpan(ctx, group[0].span)
	spanCtx, span := s.tracer.Start(spanCtx, "fluss.ProduceLog", trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("ferry.attempt", attempt), attribute.Int("ferry.jobs", len(group)), attribute.Int("fluss.bytes", len(bb[0].Records))))
	defer span.End()
	timeout := max(remaining.Truncate(time.Millisecond), time.Millisecond)
	s.requestJobs.Record(ctx, int64(len(group)))
	res, err := s.fluss.ProduceLog(spanCtx, group[0].table, group[0].acks, timeout, bb)
	if err == nil {
		if len(res) != 1 {
			err = fmt.Errorf("appender: ProduceLog answered %d results for 1 batch", len(res))
		} else {
			err = res[0].Err
		}
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return 0, err
	}
	span.SetAttributes(attribute.Int64("fluss.base_offset", res[0].BaseOffset))
	return res[0].BaseOffset, nil
}
