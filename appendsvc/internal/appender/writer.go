package appender

import (
	"context"
	"errors"
	"time"

	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
)

// WriterIDs is implemented by a Fluss that can allocate writer ids
// (*ClientAdapter does). It is separate from Fluss so that fakes which only
// append need not implement it; InitWriter answers Unimplemented then.
type WriterIDs interface {
	// InitWriter returns a cluster-unique Fluss writer id.
	InitWriter(ctx context.Context) (int64, error)
}

// maxInitWriterPaths bounds the table paths sent along with InitWriter. A
// Fluss cluster with an authorizer grants a writer id when the caller may
// write to any one of them; without an authorizer they are ignored.
const maxInitWriterPaths = 16

// InitWriter implements WriterIDs over the Fluss client.
func (a *ClientAdapter) InitWriter(ctx context.Context) (int64, error) {
	c, ok := a.client.(interface {
		InitWriter(ctx context.Context, paths ...fluss.TablePath) (int64, error)
	})
	if !ok {
		return 0, errors.New("appender: the Fluss client cannot allocate writer ids")
	}
	a.mu.Lock()
	paths := make([]fluss.TablePath, 0, min(len(a.paths), maxInitWriterPaths))
	for _, p := range a.paths {
		if len(paths) == maxInitWriterPaths {
			break
		}
		paths = append(paths, p)
	}
	a.mu.Unlock()
	return c.InitWriter(ctx, paths...)
}

// InitWriter implements ferry.append.v1.AppendService: it hands out a Fluss
// writer id. frontdoor uses it as the Kafka producer id of an idempotent
// producer; Fluss then deduplicates that writer's retried batches.
func (s *Service) InitWriter(ctx context.Context, _ *appendv1.InitWriterRequest) (*appendv1.InitWriterResponse, error) {
	w, ok := s.fluss.(WriterIDs)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "appendsvc: this Fluss backend cannot allocate writer ids")
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DefaultTimeout)
	defer cancel()
	ctx, span := s.tracer.Start(ctx, "fluss.InitWriter", trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	start := time.Now()
	id, err := w.InitWriter(ctx)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(otelcodes.Error, err.Error())
		s.log.Warn("init writer failed", "err", err, "elapsed", time.Since(start))
		code := codes.Internal
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			code = codes.DeadlineExceeded
		case errors.Is(err, context.Canceled):
			code = codes.Canceled
		case fluss.IsRetriable(err) || fluss.CodeOf(err) == fluss.CodeUnknownServerError:
			code = codes.Unavailable
		}
		return nil, status.Errorf(code, "appendsvc: fluss InitWriter: %v", err)
	}
	if id < 0 {
		// Negative ids mean "no writer" in Fluss batches.
		s.log.Error("fluss answered a negative writer id", "writer_id", id)
		return nil, status.Errorf(codes.Internal, "appendsvc: fluss InitWriter answered writer id %d", id)
	}
	s.log.Debug("writer id allocated", "writer_id", id)
	return &appendv1.InitWriterResponse{WriterId: id}, nil
}
