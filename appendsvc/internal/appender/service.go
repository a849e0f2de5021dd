package appender

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	tracev1 "github.com/ferrygw/ferry/services/api/gen/ferry/trace/v1"
	"github.com/ferrygw/ferry/services/fluss/arrowmem"
	"github.com/ferrygw/ferry/services/runtime"
)

// Service implements ferry.append.v1.AppendService.
type Service struct {
	appendv1.UnimplementedAppendServiceServer

	cfg        Config
	fluss      Fluss
	log        *slog.Logger
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	builders   sync.Pool // *logbatch.Builder
	arrowMem   arrowmem.Pool
	schemas    sync.Map // schemaKey -> *tableSchema
	// warnedNoPath is set once a request without a table path was logged.
	warnedNoPath atomic.Bool

	jobs     metric.Int64Counter
	records  metric.Int64Counter
	duration metric.Float64Histogram
	// requestJobs is the jobs each ProduceLog or PutKv request carries: how much coalescing finds to
	// put together (the tablet server's cost is mostly per request).
	requestJobs metric.Int64Histogram
}

// New returns the service. tp and prop carry the per-message trace context
// into spans; mp records job counts and latency; log gets one line per
// failed job.
func New(cfg Config, f Fluss, log *slog.Logger, tp trace.TracerProvider, mp metric.MeterProvider, prop propagation.TextMapPropagator) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if f == nil {
		return nil, errors.New("appender: nil Fluss")
	}
	meter := mp.Meter(instrumentation)
	s := &Service{
		cfg: cfg, fluss: f, log: log,
		tracer:     tp.Tracer(instrumentation),
		propagator: prop,
	}
	var err error
	if s.jobs, err = meter.Int64Counter("ferry.append.jobs", metric.WithUnit("{job}"),
		metric.WithDescription("Append jobs answered, by Fluss error code (0 = appended)")); err != nil {
		return nil, err
	}
	if s.records, err = meter.Int64Counter("ferry.append.records", metric.WithUnit("{record}"),
		metric.WithDescription("Records Fluss acknowledged")); err != nil {
		return nil, err
	}
	if s.duration, err = meter.Float64Histogram("ferry.append.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from receiving a job to answering it")); err != nil {
		return nil, err
	}
	if s.requestJobs, err = meter.Int64Histogram("ferry.append.request_jobs", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs (Kafka batches) per Fluss ProduceLog or PutKv request sent, each attempt counted"),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64)); err != nil {
		return nil, err
	}
	return s, nil
}

const instrumentation = "github.com/ferrygw/ferry/appendsvc/internal/appender"

// bucketKey identifies one bucket's queue within a stream.
type bucketKey struct {
	table     int64
	partition int64 // -1 when the table is not partitioned
	bucket    int32
}

// Append serves one stream. Jobs for the same bucket are written one after
// the other in arrival order (a bucket's next job is not sent before the
// previous one has its answer); different buckets proceed in parallel.
// When the client half-closes, every received job is still answered before
// the stream ends; when the stream's context ends, jobs in flight are
// abandoned unanswered (there is nobody to answer).
func (s *Service) Append(stream grpc.BidiStreamingServer[appendv1.AppendRequest, appendv1.AppendResponse]) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()

	st := &streamState{
		svc:     s,
		ctx:     ctx,
		pending: make(chan struct{}, s.cfg.MaxPending),
		out:     make(chan *appendv1.AppendResponse, s.cfg.MaxPending),
		queues:  map[bucketKey]chan *job{},
	}
	sendDone := make(chan error, 1)
	go func() { sendDone <- st.sendLoop(stream) }()

	recvErr := st.recvLoop(stream)
	// No more jobs: let each bucket worker finish its queue.
	for _, q := range st.queues {
		close(q)
	}
	if recvErr != nil {
		cancel()
	}
	st.workers.Wait()
	close(st.out)
	sendErr := <-sendDone
	if recvErr != nil {
		return recvErr
	}
	return sendErr
}

type streamState struct {
	svc     *Service
	ctx     context.Context
	pending chan struct{} // one token per unanswered job
	out     chan *appendv1.AppendResponse
	queues  map[bucketKey]chan *job // owned by recvLoop
	workers sync.WaitGroup
}

// recvLoop reads requests until the client half-closes (nil) or the stream
// fails, queueing each job on its bucket.
func (st *streamState) recvLoop(stream grpc.BidiStreamingServer[appendv1.AppendRequest, appendv1.AppendResponse]) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case st.pending <- struct{}{}:
		case <-st.ctx.Done():
			return st.ctx.Err()
		}
		j := st.svc.newJob(st.ctx, req)
		key := bucketKey{table: req.GetTableId(), partition: -1, bucket: req.GetBucketId()}
		switch {
		case len(req.GetPieces()) > 0:
			key = routedKey(req)
		case req.PartitionId != nil:
			key.partition = req.GetPartitionId()
		}
		q := st.queues[key]
		if q == nil {
			// Capacity MaxPending: with at most MaxPending jobs pending in
			// total, pushing never blocks.
			q = make(chan *job, st.svc.cfg.MaxPending)
			st.queues[key] = q
			st.workers.Add(1)
			go func() {
				defer st.workers.Done()
				st.bucketWorker(q)
			}()
		}
		q <- j
	}
}

// sendLoop is the only goroutine that sends on the stream.
func (st *streamState) sendLoop(stream grpc.BidiStreamingServer[appendv1.AppendRequest, appendv1.AppendResponse]) error {
	var err error
	for resp := range st.out {
		if err == nil {
			if err = stream.Send(resp); err != nil {
				st.svc.log.Warn("append: sending response failed", "job_id", resp.GetJobId(), "err", err)
			}
		}
		<-st.pending
	}
	return err
}

func (st *streamState) answer(j *job, resp *appendv1.AppendResponse) {
	j.finish(resp)
	code := attribute.Int("fluss.error_code", int(resp.GetErrorCode()))
	st.svc.jobs.Add(st.ctx, 1, metric.WithAttributes(code))
	if resp.GetErrorCode() == 0 {
		st.svc.records.Add(st.ctx, j.records)
	}
	st.svc.duration.Record(st.ctx, time.Since(j.start).Seconds(), metric.WithAttributes(code))
	st.out <- resp
}

// bucketWorker writes one bucket's jobs in order. Consecutive jobs already
// queued are sent together (one request, each still its own batch) up to
// MaxCoalesceBytes.
func (st *streamState) bucketWorker(q chan *job) {
	var group []*job
	var next *job
	for {
		group = group[:0]
		if next != nil {
			group = append(group, next)
			next = nil
		} else {
			j, ok := <-q
			if !ok {
				return
			}
			group = append(group, j)
		}
		// Build the first job, then take more only while they are ready.
		size := st.prepare(group[0])
		for size < st.svc.cfg.MaxCoalesceBytes && group[0].resp == nil {
			var j *job
			select {
			case j = <-q:
			default:
			}
			if j == nil {
				break
			}
			if !group[0].coalescesWith(j) {
				next = j
				break
			}
			n := st.prepare(j)
			if j.resp != nil {
				// A job that failed here (bad request, schema mismatch) is
				// answered at once; the jobs behind it start a new group.
				st.answer(j, j.resp)
				break
			}
			group = append(group, j)
			size += n
		}
		if group[0].resp != nil {
			st.answer(group[0], group[0].resp)
			continue
		}
		if group[0].pieces != nil {
			st.svc.produceRoutedGroup(st.ctx, group)
		} else {
			st.svc.produce(st.ctx, group)
		}
		for _, j := range group {
			if j.resp == nil {
				// Only when the stream is gone: nobody can be answered.
				j.abandon(st.ctx.Err())
				<-st.pending
				continue
			}
			st.answer(j, j.resp)
		}
	}
}

// prepare decodes and builds j's batch; on failure j.resp holds the answer.
func (st *streamState) prepare(j *job) int {
	if j.resp != nil {
		return 0
	}
	build := st.svc.build
	if len(j.req.GetPieces()) > 0 {
		build = st.svc.buildRouted
	}
	if err := build(j); err != nil {
		// Nothing was sent to Fluss.
		j.resp = j.fail(err, false)
		return 0
	}
	n := partsSize(j.batch)
	for _, p := range j.pieces {
		n += len(p.batch.Records) + partsSize(p.batch.Parts)
	}
	return n
}

// traceContext extracts the sender's trace context of one message: a
// stream's gRPC metadata carries only the trace of whoever opened it.
func (s *Service) traceContext(ctx context.Context, tc *tracev1.TraceContext) context.Context {
	if s.propagator == nil {
		return ctx
	}
	return runtime.ExtractTrace(ctx, s.propagator, tc)
}
