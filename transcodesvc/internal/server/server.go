// Package server is the TranscodeService: it takes Kafka record batches on a
// bidirectional stream and answers each with Arrow IPC or the reasons the
// batch was refused. It keeps no state beyond caches, so any number of
// instances can serve any stream.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/recordbatch"
	ferryrt "github.com/ferrygw/ferry/services/runtime"
	"github.com/ferrygw/ferry/transcodesvc/internal/convert"
	"github.com/ferrygw/ferry/transcodesvc/internal/kafkabatch"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

// Config tunes the service.
type Config struct {
	// Workers bounds the jobs converted at once across all streams.
	Workers int
	// MaxDecompressedBytes bounds one batch's records after decompression.
	MaxDecompressedBytes int
	// PlanCacheSize bounds the compiled mappings kept across streams.
	PlanCacheSize int
	// MaxStreamMappings bounds the mappings one stream may have registered.
	MaxStreamMappings int
	// MaxOutputBytes bounds the Arrow IPC of one answer: it must fit the
	// gRPC message limit, or sending it would break the whole stream.
	MaxOutputBytes int
	// MaxStreamPending bounds one stream's unanswered jobs, converted or
	// waiting for a worker or for their answer to be sent.
	MaxStreamPending int
	// AnswersShared says the answers are handed to an in-process caller
	// (services/runtime/inproc) instead of being serialized on Send, so
	// their bytes must stay valid after it: a converter then leaves its
	// output buffer to the answer and writes the next into a new one.
	AnswersShared bool
	// Schemas is the registry the writer schemas of framed values (Avro)
	// are fetched from; nil refuses topics of those formats.
	Schemas schemav1.SchemaServiceClient
	// SchemaCacheSize bounds the writer schemas kept by id.
	SchemaCacheSize int
	// SchemaTimeout bounds one batch's wait for the registry.
	SchemaTimeout time.Duration
}

// DefaultConfig uses one worker per core.
func DefaultConfig() Config {
	return Config{
		Workers:              runtime.GOMAXPROCS(0),
		MaxDecompressedBytes: 32 << 20,
		PlanCacheSize:        1024,
		MaxStreamMappings:    1024,
		MaxOutputBytes:       ferryrt.MaxMessageSize - 1<<20, // headroom for the envelope
		MaxStreamPending:     4 * runtime.GOMAXPROCS(0),
		SchemaCacheSize:      1024,
		SchemaTimeout:        10 * time.Second,
	}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Workers < 1:
		return fmt.Errorf("Workers must be at least 1, got %d", c.Workers)
	case c.MaxDecompressedBytes < 1<<10:
		return fmt.Errorf("MaxDecompressedBytes must be at least 1024, got %d", c.MaxDecompressedBytes)
	case c.PlanCacheSize < 1:
		return fmt.Errorf("PlanCacheSize must be at least 1, got %d", c.PlanCacheSize)
	case c.MaxStreamMappings < 1:
		return fmt.Errorf("MaxStreamMappings must be at least 1, got %d", c.MaxStreamMappings)
	case c.MaxOutputBytes < 1<<10:
		return fmt.Errorf("MaxOutputBytes must be at least 1024, got %d", c.MaxOutputBytes)
	case c.MaxStreamPending < 1:
		return fmt.Errorf("MaxStreamPending must be at least 1, got %d", c.MaxStreamPending)
	case c.Schemas != nil && c.SchemaCacheSize < 1:
		return fmt.Errorf("SchemaCacheSize must be at least 1, got %d", c.SchemaCacheSize)
	case c.Schemas != nil && c.SchemaTimeout <= 0:
		return fmt.Errorf("SchemaTimeout must be positive, got %s", c.SchemaTimeout)
	}
	return nil
}

// Telemetry is what the service reports through.
type Telemetry struct {
	Tracer     trace.TracerProvider
	Meter      metric.MeterProvider
	Propagator propagation.TextMapPropagator
}

// Service implements transcodev1.TranscodeServiceServer.
type Service struct {
	transcodev1.UnimplementedTranscodeServiceServer

	cfg        Config
	log        *slog.Logger
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	slots      chan struct{} // one token per running job
	decoders   sync.Pool
	plans      *planCache
	schemas    *schemas.Cache // nil without a registry

	jobs    metric.Int64Counter
	records metric.Int64Counter
	bytesIn metric.Int64Counter
}

// New builds the service.
func New(cfg Config, log *slog.Logger, tel Telemetry) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{
		cfg:        cfg,
		log:        log,
		tracer:     tel.Tracer.Tracer("github.com/ferrygw/ferry/transcodesvc"),
		propagator: tel.Propagator,
		slots:      make(chan struct{}, cfg.Workers),
		plans:      newPlanCache(cfg.PlanCacheSize),
	}
	s.decoders.New = func() any { return kafkabatch.NewDecoder(cfg.MaxDecompressedBytes) }
	meter := tel.Meter.Meter("github.com/ferrygw/ferry/transcodesvc")
	var err error
	if cfg.Schemas != nil {
		s.schemas = schemas.NewCache(cfg.Schemas, cfg.SchemaCacheSize)
		fetches, err := meter.Int64Counter("ferry.transcode.schema_fetches", metric.WithDescription("Writer schemas asked of the schema registry, by result (ok, unknown, error); cached ids are not asked again"))
		if err != nil {
			return nil, err
		}
		s.schemas.OnFetch = func(ctx context.Context, result string) {
			fetches.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
		}
	}
	if s.jobs, err = meter.Int64Counter("ferry.transcode.jobs", metric.WithDescription("Transcode jobs by result (ok or the Kafka error code)")); err != nil {
		return nil, err
	}
	if s.records, err = meter.Int64Counter("ferry.transcode.records", metric.WithDescription("Records converted to Arrow")); err != nil {
		return nil, err
	}
	if s.bytesIn, err = meter.Int64Counter("ferry.transcode.batch_bytes", metric.WithUnit("By"), metric.WithDescription("Kafka record batch bytes received")); err != nil {
		return nil, err
	}
	return s, nil
}

// stream is the state of one Transcode call.
type stream struct {
	srv      transcodev1.TranscodeService_TranscodeServer
	mappings map[string]*planEntry // what this stream has sent, by mapping_id

	sendMu  sync.Mutex
	sendErr error
	cancel  context.CancelFunc
}

func (st *stream) send(resp *transcodev1.TranscodeResponse) {
	st.sendMu.Lock()
	defer st.sendMu.Unlock()
	if st.sendErr != nil {
		return
	}
	if err := st.srv.Send(resp); err != nil {
		st.sendErr = err
		st.cancel() // nobody can receive answers any more
	}
}

// Transcode serves one stream: jobs are read in order, run concurrently on
// the service's worker slots and answered in completion order. The call
// returns after every started job has answered.
func (s *Service) Transcode(srv transcodev1.TranscodeService_TranscodeServer) error {
	ctx, cancel := context.WithCancel(srv.Context())
	defer cancel()
	st := &stream{srv: srv, mappings: map[string]*planEntry{}, cancel: cancel}
	pending := make(chan struct{}, s.cfg.MaxStreamPending)
	var jobs sync.WaitGroup
	defer jobs.Wait() // the stream must not be used after this returns

	for {
		req, err := srv.Recv()
		if errors.Is(err, io.EOF) {
			jobs.Wait()
			return st.sendErr
		}
		if err != nil {
			return err
		}
		entry, failure := s.resolve(st, req)
		if failure != nil {
			s.countJob(ctx, failure.GetErrorCode())
			s.log.WarnContext(ctx, "transcode job refused", "job_id", req.GetJobId(), "mapping_id", req.GetMappingId(), "error", failure.GetErrorMessage())
			st.send(&transcodev1.TranscodeResponse{JobId: req.GetJobId(), Result: &transcodev1.TranscodeResponse_Failure{Failure: failure}})
			continue
		}
		// Backpressure: with this stream's pending jobs at the bound, stop
		// reading; gRPC flow control then slows the sender. Worker slots
		// are shared by all streams and held only while converting, so a
		// stream whose client does not read its answers cannot starve the
		// others.
		select {
		case pending <- struct{}{}:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		jobs.Add(1)
		go func() {
			defer jobs.Done()
			defer func() { <-pending }()
			select {
			case s.slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			resp, release := s.run(ctx, req, entry)
			<-s.slots
			st.send(resp)
			release()
		}()
	}
}

// resolve finds the plan for a request: the mapping it carries (registered
// on the stream for later requests), one the stream sent before, or one
// this instance compiled for another stream.
func (s *Service) resolve(st *stream, req *transcodev1.TranscodeRequest) (*planEntry, *transcodev1.TranscodeFailure) {
	e, f := s.resolvePlan(st, req)
	if f == nil && e.framed() && s.schemas == nil {
		return nil, &transcodev1.TranscodeFailure{ErrorCode: int32(kerr.UnknownServerError.Code), ErrorMessage: fmt.Sprintf(
			"topic %s takes Schema Registry framed values or keys, but this transcodesvc runs without a schema registry (-schema-addr / FERRY_SCHEMA_ADDR)", e.plan.Topic)}
	}
	return e, f
}

func (s *Service) resolvePlan(st *stream, req *transcodev1.TranscodeRequest) (*planEntry, *transcodev1.TranscodeFailure) {
	fail := func(format string, args ...any) *transcodev1.TranscodeFailure {
		return &transcodev1.TranscodeFailure{ErrorCode: int32(kerr.UnknownServerError.Code), ErrorMessage: fmt.Sprintf(format, args...)}
	}
	id := req.GetMappingId()
	m := req.GetMapping()
	if m == nil {
		if e, ok := st.mappings[id]; ok {
			return e, nil
		}
		// A mapping_id always names the same mapping, so one this instance
		// compiled for any stream is as good: this covers mappings the
		// stream's bound made it forget.
		if e, ok := s.plans.lookup(id); ok {
			if e.err != nil {
				return nil, fail("mapping %q cannot be served: %v", id, e.err)
			}
			s.remember(st, id, e)
			return e, nil
		}
		return nil, fail("mapping %q is unknown to this instance: send the mapping with the first job of a stream that uses it", id)
	}
	if id == "" {
		id = m.GetMappingId()
	}
	if id == "" || (m.GetMappingId() != "" && m.GetMappingId() != id) {
		return nil, fail("request mapping_id %q and mapping.mapping_id %q must be set and agree", req.GetMappingId(), m.GetMappingId())
	}
	e := s.plans.get(m)
	if e.err != nil {
		return nil, fail("mapping %q of topic %s cannot be served: %v", id, m.GetTopic(), e.err)
	}
	s.remember(st, id, e)
	return e, nil
}

// remember registers a mapping on the stream within its bound, forgetting
// an arbitrary other one when full; a forgotten one is still found in the
// instance's plan cache while that keeps it.
func (s *Service) remember(st *stream, id string, e *planEntry) {
	if _, known := st.mappings[id]; !known && len(st.mappings) >= s.cfg.MaxStreamMappings {
		for k := range st.mappings {
			delete(st.mappings, k)
			break
		}
	}
	st.mappings[id] = e
}

// run converts one batch. release must be called once the response has
// been sent: the Arrow bytes live in the converter's buffer until then.
func (s *Service) run(ctx context.Context, req *transcodev1.TranscodeRequest, e *planEntry) (*transcodev1.TranscodeResponse, func()) {
	ctx = ferryrt.ExtractTrace(ctx, s.propagator, req.GetTrace())
	ctx, span := s.tracer.Start(ctx, "transcode", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.Int64("ferry.job_id", int64(req.GetJobId())),
		attribute.String("messaging.destination.name", e.plan.Topic),
		attribute.Int("messaging.destination.partition.id", int(req.GetPartition())),
		attribute.Int("ferry.batch.bytes", len(req.GetRecordBatch())),
	))
	defer span.End()
	s.bytesIn.Add(ctx, int64(len(req.GetRecordBatch())))

	failed := func(code int16, msg string, recs []convert.RecordError) (*transcodev1.TranscodeResponse, func()) {
		span.SetStatus(codes.Error, msg)
		span.SetAttributes(attribute.Int("ferry.kafka.error_code", int(code)))
		s.countJob(ctx, int32(code))
		f := &transcodev1.TranscodeFailure{ErrorCode: int32(code), ErrorMessage: msg}
		for _, r := range recs {
			f.RecordErrors = append(f.RecordErrors, &transcodev1.RecordError{BatchIndex: int32(r.BatchIndex), Message: r.Message})
		}
		attrs := []any{"job_id", req.GetJobId(), "topic", e.plan.Topic, "partition", req.GetPartition(), "kafka_error_code", code, "error", msg}
		if len(recs) > 0 {
			attrs = append(attrs, "first_record_error", recs[0].Message, "first_record_index", recs[0].BatchIndex)
		}
		s.log.WarnContext(ctx, "record batch refused", attrs...)
		return &transcodev1.TranscodeResponse{JobId: req.GetJobId(), Result: &transcodev1.TranscodeResponse_Failure{Failure: f}}, func() {}
	}

	if err := ctx.Err(); err != nil {
		return failed(kerr.UnknownServerError.Code, "stream ended before the job ran: "+err.Error(), nil)
	}
	d := s.decoders.Get().(*kafkabatch.Decoder)
	defer s.decoders.Put(d)
	batch, err := d.Decode(req.GetRecordBatch())
	if err != nil {
		var ke *recordbatch.Error
		if errors.As(err, &ke) {
			return failed(ke.Code, ke.Msg, nil)
		}
		return failed(kerr.CorruptMessage.Code, err.Error(), nil)
	}
	span.SetAttributes(
		attribute.Int("ferry.batch.records", len(batch.Records)),
		attribute.String("ferry.batch.codec", batch.Header.Codec().String()),
		attribute.Int("ferry.batch.raw_bytes", batch.RawSize),
	)

	if floor := int64(len(batch.Records)) * minRowBytes(e.plan.Schema); floor > int64(s.cfg.MaxOutputBytes) {
		return failed(kerr.MessageTooLarge.Code, fmt.Sprintf("the batch's %d records convert to at least %d bytes of Arrow, more than the %d an answer may carry; send smaller batches (batch.size / max.request.size)", len(batch.Records), floor, s.cfg.MaxOutputBytes), nil)
	}
	known, err := s.writerSchemas(ctx, e, batch)
	if err != nil {
		// Retriable: the producer sends the batch again.
		return failed(kerr.RequestTimedOut.Code, err.Error(), nil)
	}
	if e.framedKeys != nil {
		// The keys become the bytes of the key column they fill; the
		// converter holds them until this job is done.
		ku := e.keyUnframer()
		defer e.keyUnframers.Put(ku)
		ku.UseSchemas(known)
		if batch, err = ku.UnframeKeys(batch); err != nil {
			var f *convert.Failure
			if errors.As(err, &f) {
				return failed(f.Code, f.Message, f.Records)
			}
			return failed(kerr.UnknownServerError.Code, err.Error(), nil)
		}
	}
	if e.router != nil {
		return s.runRouted(ctx, req, e, batch, known, failed)
	}
	conv := e.converter()
	conv.UseSchemas(known)
	out, err := conv.ConvertTo(batch, encodingOf(req))
	if err != nil {
		e.converters.Put(conv)
		var f *convert.Failure
		if errors.As(err, &f) {
			return failed(f.Code, f.Message, f.Records)
		}
		return failed(kerr.UnknownServerError.Code, err.Error(), nil)
	}
	if size := len(out.IPC) + len(out.LogRecords); size > s.cfg.MaxOutputBytes {
		e.converters.Put(conv)
		return failed(kerr.MessageTooLarge.Code, fmt.Sprintf("the batch converts to %d bytes of Arrow, more than the %d an answer may carry; send smaller batches (batch.size / max.request.size)", size, s.cfg.MaxOutputBytes), nil)
	}
	s.countJob(ctx, 0)
	s.records.Add(ctx, int64(out.Rows))
	h := &batch.Header
	release := func() {
		if s.cfg.AnswersShared {
			conv.DetachOutput()
		}
		e.converters.Put(conv)
	}
	return &transcodev1.TranscodeResponse{JobId: req.GetJobId(), Result: &transcodev1.TranscodeResponse_Batch{Batch: &transcodev1.ArrowBatch{
		ArrowIpc:      out.IPC,
		LogRecords:    out.LogRecords,
		RecordCount:   int32(out.Rows),
		ProducerId:    h.ProducerID,
		ProducerEpoch: int32(h.ProducerEpoch),
		BaseSequence:  h.BaseSequence,
		MaxTimestamp:  h.MaxTimestamp,
	}}}, release
}

// encodingOf is the form req wants log table rows in.
func encodingOf(req *transcodev1.TranscodeRequest) convert.Encoding {
	if req.GetWantLogRecords() {
		return convert.EncodingLogRecords
	}
	return convert.EncodingIPC
}

// runRouted splits a batch of a table that places rows itself into pieces
// per Fluss partition and bucket.
func (s *Service) runRouted(ctx context.Context, req *transcodev1.TranscodeRequest, e *planEntry, batch *kafkabatch.Batch, known map[int32]*schemas.Schema,
	failed func(int16, string, []convert.RecordError) (*transcodev1.TranscodeResponse, func())) (*transcodev1.TranscodeResponse, func()) {
	conv, keys := e.converter(), e.keyConverter()
	conv.UseSchemas(known)
	if keys != nil {
		keys.UseSchemas(known)
	}
	defer func() {
		e.converters.Put(conv)
		if keys != nil {
			e.keyConverters.Put(keys)
		}
	}()
	pieces, err := e.router.Split(batch, req.GetPartition(), conv, keys, encodingOf(req))
	if err != nil {
		var f *convert.Failure
		if errors.As(err, &f) {
			return failed(f.Code, f.Message, f.Records)
		}
		return failed(kerr.UnknownServerError.Code, err.Error(), nil)
	}
	out := &transcodev1.ArrowBatch{RecordCount: int32(len(batch.Records))}
	size := 0
	for _, p := range pieces {
		size += len(p.ArrowIPC) + len(p.LogRecords) + len(p.KVRecords) + len(p.PartitionName) + 16
		out.Pieces = append(out.Pieces, &transcodev1.RoutedPiece{PartitionName: p.PartitionName, Bucket: p.Bucket,
			ArrowIpc: p.ArrowIPC, LogRecords: p.LogRecords, KvRecords: p.KVRecords, RecordCount: int32(p.Records)})
	}
	if size > s.cfg.MaxOutputBytes {
		return failed(kerr.MessageTooLarge.Code, fmt.Sprintf("the batch converts to %d bytes, more than the %d an answer may carry; send smaller batches (batch.size / max.request.size)", size, s.cfg.MaxOutputBytes), nil)
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("ferry.pieces", len(pieces)))
	s.countJob(ctx, 0)
	s.records.Add(ctx, int64(len(batch.Records)))
	h := &batch.Header
	out.ProducerId, out.ProducerEpoch, out.BaseSequence, out.MaxTimestamp = h.ProducerID, int32(h.ProducerEpoch), h.BaseSequence, h.MaxTimestamp
	return &transcodev1.TranscodeResponse{JobId: req.GetJobId(), Result: &transcodev1.TranscodeResponse_Batch{Batch: out}}, func() {}
}

// writerSchemas fetches the writer schemas the framed values and keys of
// batch name (nil when neither is framed). An error means the registry
// could not answer.
func (s *Service) writerSchemas(ctx context.Context, e *planEntry, batch *kafkabatch.Batch) (map[int32]*schemas.Schema, error) {
	if !e.framed() {
		return nil, nil
	}
	var ids []int32
	if e.plan.Framed() {
		ids = e.plan.SchemaIDs(batch, ids)
	}
	for _, kp := range e.framedKeyPlans() {
		ids = kp.KeySchemaIDs(batch, ids)
	}
	known := make(map[int32]*schemas.Schema, len(ids))
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SchemaTimeout)
	defer cancel()
	if err := s.schemas.Resolve(ctx, ids, known); err != nil {
		return nil, err
	}
	return known, nil
}

func (s *Service) countJob(ctx context.Context, code int32) {
	result := "ok"
	if code != 0 {
		result = fmt.Sprint(code)
	}
	s.jobs.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
}
