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
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Appender sends Arrow batches to appendsvc. All batches of one bucket go
// over one stream, in the order they are submitted; appendsvc writes a
// bucket's batches in stream order.
type Appender struct {
	pool     *streampool.Pool[*appendv1.AppendRequest, *appendv1.AppendResponse]
	prop     propagation.TextMapPropagator
	backends []streampool.Backend
	next     atomic.Uint32 // round robin over backends for unary calls
}

var appendCodec = streampool.Codec[*appendv1.AppendRequest, *appendv1.AppendResponse]{
	Open: func(ctx context.Context, conn grpc.ClientConnInterface) (streampool.Stream[*appendv1.AppendRequest, *appendv1.AppendResponse], error) {
		return appendv1.NewAppendServiceClient(conn).Append(ctx)
	},
	SetID: func(r *appendv1.AppendRequest, id uint64) { r.JobId = id },
	ID:    func(r *appendv1.AppendResponse) uint64 { return r.GetJobId() },
}

// NewAppender builds the pool over backends; Start connects it.
func NewAppender(cfg streampool.Config, backends []streampool.Backend, prop propagation.TextMapPropagator, log *slog.Logger) (*Appender, error) {
	p, err := streampool.New(cfg, backends, appendCodec, streampool.ByKey, log)
	if err != nil {
		return nil, err
	}
	return &Appender{pool: p, prop: prop, backends: append([]streampool.Backend(nil), backends...)}, nil
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
	if len(a.backends) == 0 {
		return 0, errors.New("backends: no appendsvc instance configured")
	}
	start := int(a.next.Add(1))
	var errs []error
	for i := range a.backends {
		b := a.backends[(start+i)%len(a.backends)]
		resp, err := appendv1.NewAppendServiceClient(b.Conn).InitWriter(ctx, &appendv1.InitWriterRequest{})
		if err == nil {
			if resp.GetWriterId() < 0 {
				return 0, fmt.Errorf("backends: appendsvc %s answered writer id %d", b.Addr, resp.GetWriterId())
			}
			return resp.GetWriterId(), nil
		}
		switch status.Code(err) {
		case codes.Unimplemented:
			return 0, fmt.Errorf("%w: %s: %v", ErrWriterIDsUnsupported, b.Addr, err)
		case codes.Unavailable:
			errs = append(errs, fmt.Errorf("%s: %w", b.Addr, err))
			if ctx.Err() == nil {
				continue
			}
		}
		return 0, fmt.Errorf("backends: InitWriter at %s: %w", b.Addr, err)
	}
	return 0, fmt.Errorf("backends: InitWriter: %w", errors.Join(errs...))
}
