package backends

import (
	"context"
	"log/slog"

	"github.com/ferrygw/ferry/frontdoor/internal/streampool"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"go.opentelemetry.io/otel/propagation"
)

// Transcoder sends Kafka record batches to the transcodesvc instances,
// least outstanding first.
type Transcoder struct {
	pool *streampool.Pool[transcodev1.TranscodeServiceClient, *transcodev1.TranscodeRequest, *transcodev1.TranscodeResponse]
	prop propagation.TextMapPropagator
}

var transcodeCodec = streampool.Codec[transcodev1.TranscodeServiceClient, *transcodev1.TranscodeRequest, *transcodev1.TranscodeResponse]{
	Open: func(ctx context.Context, c transcodev1.TranscodeServiceClient) (streampool.Stream[*transcodev1.TranscodeRequest, *transcodev1.TranscodeResponse], error) {
		return c.Transcode(ctx)
	},
	SetID: func(r *transcodev1.TranscodeRequest, id uint64) { r.JobId = id },
	ID:    func(r *transcodev1.TranscodeResponse) uint64 { return r.GetJobId() },
	// The mapping travels once per stream and mapping id; later jobs name
	// it by id only.
	Prepare: func(sent map[string]bool, r *transcodev1.TranscodeRequest) *transcodev1.TranscodeRequest {
		if sent[r.MappingId] {
			return &transcodev1.TranscodeRequest{
				JobId: r.JobId, MappingId: r.MappingId, Partition: r.Partition,
				RecordBatch: r.RecordBatch, Trace: r.Trace, WantLogRecords: r.WantLogRecords,
			}
		}
		sent[r.MappingId] = true
		return r
	},
}

// NewTranscoder builds the pool over backends; Start connects it.
func NewTranscoder(cfg streampool.Config, backends []streampool.Backend[transcodev1.TranscodeServiceClient], prop propagation.TextMapPropagator, log *slog.Logger) (*Transcoder, error) {
	p, err := streampool.New(cfg, backends, transcodeCodec, streampool.LeastOutstanding, log)
	if err != nil {
		return nil, err
	}
	return &Transcoder{pool: p, prop: prop}, nil
}

// Start connects every instance.
func (t *Transcoder) Start(ctx context.Context) error { return t.pool.Start(ctx) }

// Shutdown closes the streams.
func (t *Transcoder) Shutdown(ctx context.Context) error { return t.pool.Shutdown(ctx) }

// Transcode converts one record batch of partition with mapping. An error
// means no instance answered in time (ctx); a refused batch is a
// TranscodeResponse with a failure. Log table rows are asked for as Fluss
// records sections, which appendsvc only frames; a transcodesvc older than
// that field answers with Arrow IPC, which appendsvc still takes.
func (t *Transcoder) Transcode(ctx context.Context, m *catalogv1.TopicMapping, partition int32, batch []byte) (*transcodev1.TranscodeResponse, error) {
	req := &transcodev1.TranscodeRequest{
		Mapping:        m,
		MappingId:      m.GetMappingId(),
		Partition:      partition,
		RecordBatch:    batch,
		Trace:          traceContext(ctx, t.prop),
		WantLogRecords: true,
	}
	return t.pool.Do(ctx, 0, req)
}

// Outstanding reports unanswered jobs per instance ("" = waiting for any).
func (t *Transcoder) Outstanding() map[string]int { return t.pool.Outstanding() }

// SetBackends replaces the instances (see streampool.Pool.SetBackends).
func (t *Transcoder) SetBackends(bs []streampool.Backend[transcodev1.TranscodeServiceClient]) (added, removed []string) {
	return t.pool.SetBackends(bs)
}
