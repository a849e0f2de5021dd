package appender

import (
	"context"
	"errors"
	"fmt"

	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
)

// LogReader is implemented by a Fluss that can read a bucket's log back
// (*ClientAdapter does). Like WriterIDs it is separate from Fluss so that
// fakes which only append need not implement it; GetLatestOffset and
// ListWriterBatches answer Unimplemented then.
type LogReader interface {
	// LatestOffset is the offset the next record appended to the bucket
	// gets.
	LatestOffset(ctx context.Context, table Table, partitionID *int64, bucket int32) (int64, error)
	// ReadLog returns the bucket's raw log batches from offset (the first
	// possibly starting before it, the last possibly cut short) and the
	// high watermark.
	ReadLog(ctx context.Context, table Table, partitionID *int64, bucket int32, offset int64, maxBytes int32) ([]byte, int64, error)
}

// LatestOffset implements LogReader. The path is looked up first, which
// registers the id with the client and checks it still names the table.
func (a *ClientAdapter) LatestOffset(ctx context.Context, table Table, partitionID *int64, bucket int32) (int64, error) {
	c, ok := a.client.(interface {
		ListOffsets(ctx context.Context, tableID int64, partitionID *int64, buckets []int32, spec fluss.OffsetSpec) (map[int32]int64, error)
	})
	if !ok {
		return 0, errors.New("appender: the Fluss client cannot list offsets")
	}
	if _, err := a.lookup(ctx, table); err != nil {
		return 0, err
	}
	offs, err := c.ListOffsets(ctx, table.ID, partitionID, []int32{bucket}, fluss.OffsetLatest)
	if err != nil {
		return 0, err
	}
	off, ok := offs[bucket]
	if !ok {
		return 0, fmt.Errorf("appender: no latest offset for bucket %d of %s", bucket, table)
	}
	return off, nil
}

// ReadLog implements LogReader.
func (a *ClientAdapter) ReadLog(ctx context.Context, table Table, partitionID *int64, bucket int32, offset int64, maxBytes int32) ([]byte, int64, error) {
	c, ok := a.client.(interface {
		FetchLog(ctx context.Context, tableID int64, buckets []fluss.FetchBucket, opt fluss.FetchOptions) ([]fluss.FetchResult, error)
	})
	if !ok {
		return nil, 0, errors.New("appender: the Fluss client cannot read logs")
	}
	if _, err := a.lookup(ctx, table); err != nil {
		return nil, 0, err
	}
	res, err := c.FetchLog(ctx, table.ID, []fluss.FetchBucket{{PartitionID: partitionID, Bucket: bucket, Offset: offset, MaxBytes: maxBytes}},
		fluss.FetchOptions{MaxBytes: maxBytes})
	if err != nil {
		return nil, 0, err
	}
	if len(res) != 1 {
		return nil, 0, fmt.Errorf("appender: fetch answered %d buckets for 1", len(res))
	}
	if res[0].Err != nil {
		return nil, 0, res[0].Err
	}
	return res[0].Records, res[0].HighWatermark, nil
}

// DefaultListWriterBatchesBytes is how much log one ListWriterBatches call
// reads when the request does not say.
const DefaultListWriterBatchesBytes = 8 << 20

// errNoProgress: a read that returned bytes but no whole batch twice.
var errNoProgress = errors.New("appender: the log returned no whole batch")

// GetLatestOffset implements ferry.append.v1.AppendService.
func (s *Service) GetLatestOffset(ctx context.Context, req *appendv1.GetLatestOffsetRequest) (*appendv1.GetLatestOffsetResponse, error) {
	r, ok := s.fluss.(LogReader)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "appendsvc: this Fluss backend cannot read offsets")
	}
	table, err := bucketTable(req.GetBucket())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DefaultTimeout)
	defer cancel()
	ctx, span := s.tracer.Start(ctx, "fluss.ListOffsets", trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	b := req.GetBucket()
	off, err := r.LatestOffset(ctx, table, b.PartitionId, b.GetBucketId())
	if err != nil {
		return nil, s.logReadError(span, "latest offset", table, b.GetBucketId(), err)
	}
	return &appendv1.GetLatestOffsetResponse{Offset: off}, nil
}

// ListWriterBatches implements ferry.append.v1.AppendService: one read of
// the bucket's log from from_offset, filtered down to the headers of the
// writer's batches that start at or after from_offset.
func (s *Service) ListWriterBatches(ctx context.Context, req *appendv1.ListWriterBatchesRequest) (*appendv1.ListWriterBatchesResponse, error) {
	r, ok := s.fluss.(LogReader)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "appendsvc: this Fluss backend cannot read logs")
	}
	table, err := bucketTable(req.GetBucket())
	if err != nil {
		return nil, err
	}
	if req.GetFromOffset() < 0 || req.GetWriterId() < 0 || req.GetMaxBytes() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "appendsvc: from_offset %d, writer_id %d and max_bytes %d must not be negative",
			req.GetFromOffset(), req.GetWriterId(), req.GetMaxBytes())
	}
	maxBytes := req.GetMaxBytes()
	if maxBytes == 0 {
		maxBytes = DefaultListWriterBatchesBytes
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DefaultTimeout)
	defer cancel()
	ctx, span := s.tracer.Start(ctx, "fluss.FetchLog", trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	b := req.GetBucket()
	from := req.GetFromOffset()
	resp, err := s.writerBatches(ctx, r, table, b, from, req.GetWriterId(), maxBytes)
	if err != nil {
		return nil, s.logReadError(span, "reading the log", table, b.GetBucketId(), err)
	}
	return resp, nil
}

func (s *Service) writerBatches(ctx context.Context, r LogReader, table Table, b *appendv1.BucketRef, from, writer int64, maxBytes int32) (*appendv1.ListWriterBatchesResponse, error) {
	for attempt := 0; ; attempt++ {
		records, hw, err := r.ReadLog(ctx, table, b.PartitionId, b.GetBucketId(), from, maxBytes)
		if err != nil {
			return nil, err
		}
		resp := &appendv1.ListWriterBatchesResponse{NextOffset: from, HighWatermark: hw}
		it := logbatch.NewIterator(records)
		whole := 0
		for it.Next() {
			h := it.Batch().Header
			whole++
			if h.BaseOffset < from {
				continue // the batch holding from; ours start at batch boundaries
			}
			if h.WriterID == writer {
				resp.Batches = append(resp.Batches, &appendv1.WriterBatch{
					BaseOffset: h.BaseOffset, BatchSequence: h.BatchSequence, RecordCount: h.RecordCount,
				})
			}
			resp.NextOffset = max(resp.NextOffset, h.BaseOffset+int64(h.LastOffsetDelta)+1)
		}
		if err := it.Err(); err != nil && !errors.Is(err, logbatch.ErrShortBatch) {
			return nil, fmt.Errorf("appender: log of %s bucket %d at offset %d: %w", table, b.GetBucketId(), from, err)
		}
		if whole > 0 || len(records) == 0 {
			return resp, nil
		}
		// One batch bigger than maxBytes: read again asking for all of it.
		h, _ := logbatch.ParseHeader(records)
		if attempt > 0 || h.SizeInBytes() <= int(maxBytes) {
			return nil, fmt.Errorf("%w at offset %d of %s bucket %d (%d bytes read)", errNoProgress, from, table, b.GetBucketId(), len(records))
		}
		maxBytes = int32(h.SizeInBytes())
	}
}

func bucketTable(b *appendv1.BucketRef) (Table, error) {
	if b.GetDatabase() == "" || b.GetTable() == "" {
		return Table{}, status.Error(codes.InvalidArgument, "appendsvc: bucket needs database and table")
	}
	if b.GetBucketId() < 0 {
		return Table{}, status.Errorf(codes.InvalidArgument, "appendsvc: bucket id %d is negative", b.GetBucketId())
	}
	return Table{ID: b.GetTableId(), Path: fluss.TablePath{Database: b.GetDatabase(), Table: b.GetTable()}}, nil
}

// logReadError maps a failed read to a gRPC status frontdoor can act on.
func (s *Service) logReadError(span trace.Span, what string, table Table, bucket int32, err error) error {
	span.RecordError(err)
	span.SetStatus(otelcodes.Error, err.Error())
	s.log.Warn("appendsvc: "+what+" failed", "table", table.String(), "bucket", bucket, "err", err)
	code := codes.Internal
	switch fc := fluss.CodeOf(err); {
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case fc == fluss.CodeTableNotExist || fc == fluss.CodeDatabaseNotExist || fc == fluss.CodeUnknownTableOrBucket || fc == fluss.CodePartitionNotExists:
		code = codes.NotFound
	case fc == fluss.CodeLogOffsetOutOfRange || errors.Is(err, fluss.ErrRemoteLog):
		code = codes.OutOfRange
	case fluss.IsRetriable(err) || fc == fluss.CodeUnknownServerError || errors.Is(err, errNoProgress):
		code = codes.Unavailable
	}
	return status.Errorf(code, "appendsvc: %s of %s bucket %d: %v", what, table, bucket, err)
}
