package backends

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/ferrygw/ferry/frontdoor/internal/streampool"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Appender sends Arrow batches to appendsvc. All batches of one bucket go
// over one stream, in the order they are submitted; appendsvc writes a
// bucket's batches in stream order.
type Appender struct {
	pool  *streampool.Pool[appendv1.AppendServiceClient, *appendv1.AppendRequest, *appendv1.AppendResponse]
	prop  propagation.TextMapPropagator
	unary roundRobin[appendv1.AppendServiceClient]
}

var appendCodec = streampool.Codec[appendv1.AppendServiceClient, *appendv1.AppendRequest, *appendv1.AppendResponse]{
	Open: func(ctx context.Context, c appendv1.AppendServiceClient) (streampool.Stream[*appendv1.AppendRequest, *appendv1.AppendResponse], error) {
		return c.Append(ctx)
	},
	SetID: func(r *appendv1.AppendRequest, id uint64) { r.JobId = id },
	ID:    func(r *appendv1.AppendResponse) uint64 { return r.GetJobId() },
}

// NewAppender builds the pool over backends; Start connects it.
func NewAppender(cfg streampool.Config, backends []streampool.Backend[appendv1.AppendServiceClient], prop propagation.TextMapPropagator, log *slog.Logger) (*Appender, error) {
	p, err := streampool.New(cfg, backends, appendCodec, streampool.ByKey, log)
	if err != nil {
		return nil, err
	}
	return &Appender{pool: p, prop: prop, unary: newRoundRobin("appendsvc", backends)}, nil
}

// Start connects every instance.
func (a *Appender) Start(ctx context.Context) error { return a.pool.Start(ctx) }

// Shutdown closes the streams.
func (a *Appender) Shutdown(ctx context.Context) error { return a.pool.Shutdown(ctx) }

// Pending is a submitted append.
type Pending = streampool.Call[*appendv1.AppendResponse]

// Submit queues req (its trace is taken from ctx) and returns at once.
// Submissions for one (table, bucket) are sent in call order, so the
// caller serializes calls per partition to keep Kafka's order.
func (a *Appender) Submit(ctx context.Context, req *appendv1.AppendRequest) *Pending {
	req.Trace = traceContext(ctx, a.prop)
	key := uint64(req.TableId)*1_000_003 + uint64(req.BucketId) + uint64(req.GetPartitionId())*7919
	return a.pool.Submit(key, req)
}

// ErrWriterIDsUnsupported is returned by InitWriter when appendsvc does not
// implement InitWriter (an appendsvc older than the idempotence support).
var ErrWriterIDsUnsupported = errors.New("backends: appendsvc cannot allocate writer ids")

// InitWriter asks appendsvc for a new Fluss writer id. Any appendsvc
// instance can answer (Fluss's coordinator allocates the id); instances are
// tried round robin, moving on when one is unreachable.
func (a *Appender) InitWriter(ctx context.Context) (int64, error) {
	resp, err := call(ctx, &a.unary, "InitWriter", func(c appendv1.AppendServiceClient) (*appendv1.InitWriterResponse, error) {
		return c.InitWriter(ctx, &appendv1.InitWriterRequest{})
	})
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return 0, fmt.Errorf("%w: %v", ErrWriterIDsUnsupported, err)
		}
		return 0, err
	}
	if resp.GetWriterId() < 0 {
		return 0, fmt.Errorf("backends: appendsvc answered writer id %d", resp.GetWriterId())
	}
	return resp.GetWriterId(), nil
}

// LatestOffset asks appendsvc for the offset the next batch appended to a
// bucket gets. Errors keep their gRPC status (NOT_FOUND: no such table).
func (a *Appender) LatestOffset(ctx context.Context, b *appendv1.BucketRef) (int64, error) {
	resp, err := call(ctx, &a.unary, "GetLatestOffset", func(c appendv1.AppendServiceClient) (*appendv1.GetLatestOffsetResponse, error) {
		return c.GetLatestOffset(ctx, &appendv1.GetLatestOffsetRequest{Bucket: b})
	})
	return resp.GetOffset(), err
}

// ListWriterBatches asks appendsvc for one page of a writer's batches in a
// bucket's log. Errors keep their gRPC status (OUT_OF_RANGE: the log no
// longer holds from_offset).
func (a *Appender) ListWriterBatches(ctx context.Context, req *appendv1.ListWriterBatchesRequest) (*appendv1.ListWriterBatchesResponse, error) {
	return call(ctx, &a.unary, "ListWriterBatches", func(c appendv1.AppendServiceClient) (*appendv1.ListWriterBatchesResponse, error) {
		return c.ListWriterBatches(ctx, req)
	})
}

// roundRobin makes unary calls to any instance of a service, round robin,
// moving on when one is unreachable.
type roundRobin[C any] struct {
	service  string
	backends []streampool.Backend[C]
	next     atomic.Uint32
}

func newRoundRobin[C any](service string, backends []streampool.Backend[C]) roundRobin[C] {
	return roundRobin[C]{service: service, backends: append([]streampool.Backend[C](nil), backends...)}
}

// call runs fn against one instance after another until one answers
// other than UNAVAILABLE. The error wraps the last instance's, status
// included.
func call[C, R any](ctx context.Context, rr *roundRobin[C], name string, fn func(C) (R, error)) (R, error) {
	var zero R
	if len(rr.backends) == 0 {
		return zero, fmt.Errorf("backends: no %s instance configured", rr.service)
	}
	start := int(rr.next.Add(1))
	var errs []error
	for i := range rr.backends {
		b := rr.backends[(start+i)%len(rr.backends)]
		resp, err := fn(b.Client)
		if err == nil {
			return resp, nil
		}
		if status.Code(err) == codes.Unavailable && ctx.Err() == nil {
			errs = append(errs, fmt.Errorf("%s: %w", b.Addr, err))
			continue
		}
		return zero, &statusError{fmt.Errorf("backends: %s at %s: %w", name, b.Addr, err), err}
	}
	return zero, &statusError{fmt.Errorf("backends: %s: %w", name, errors.Join(errs...)),
		status.Errorf(codes.Unavailable, "every %s instance is unavailable", rr.service)}
}

// statusError keeps the gRPC status of the call that failed, so that
// status.Code sees through the context added to it.
type statusError struct {
	err error
	st  error
}

func (e *statusError) Error() string              { return e.err.Error() }
func (e *statusError) Unwrap() error              { return e.err }
func (e *statusError) GRPCStatus() *status.Status { return status.Convert(e.st) }
