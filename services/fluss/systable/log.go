package systable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
)

// produceTimeout is how long Fluss may take to have a batch on all
// replicas; the caller's context bounds the wait anyway.
const produceTimeout = 30 * time.Second

// Append writes rec (rows in Schema) to bucket as one batch: all rows or
// none, acknowledged by every replica (acks=all). A batch without writer
// id may be stored twice by a retry after a lost answer: the caller's
// rows must make that harmless.
func (t *Table) Append(ctx context.Context, bucket int32, rec arrow.RecordBatch) error {
	// A second try when the table was found gone: another process created
	// it again since this one looked it up.
	for try := 0; ; try++ {
		err := t.append(ctx, bucket, rec)
		if !t.forgetOn(err) || try > 0 {
			return err
		}
	}
}

func (t *Table) append(ctx context.Context, bucket int32, rec arrow.RecordBatch) error {
	info, err := t.Info(ctx)
	if err != nil {
		return err
	}
	batch, err := logbatch.Build(rec, logbatch.DefaultOptions(int16(info.SchemaID)))
	if err != nil {
		return err
	}
	err = fluss.RetryWithin(ctx, t.retryFor, func() error {
		res, err := t.fluss.ProduceLog(ctx, info.TableID, fluss.AcksAll, produceTimeout, []fluss.BucketBatch{{Bucket: bucket, Records: batch}})
		if err == nil {
			err = res[0].Err
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("append to %s: %w", t.path, err)
	}
	return nil
}

// Scan reads bucket from offset from (0: the log's start, wherever
// retention moved it) to the end of the log as it is now, calling fn with
// the rows of each batch, in order; rec is released when fn returns. It
// returns the offset after the last batch read.
func (t *Table) Scan(ctx context.Context, bucket int32, from int64, fn func(rec arrow.RecordBatch) error) (int64, error) {
	info, err := t.Info(ctx)
	if err != nil {
		return from, err
	}
	next, err := t.scan(ctx, info, bucket, from, fn)
	t.forgetOn(err)
	return next, err
}

func (t *Table) scan(ctx context.Context, info *fluss.TableInfo, bucket int32, from int64, fn func(rec arrow.RecordBatch) error) (int64, error) {
	if from == 0 {
		var starts map[int32]int64
		err := fluss.RetryWithin(ctx, t.retryFor, func() (err error) {
			starts, err = t.fluss.ListOffsets(ctx, info.TableID, nil, []int32{bucket}, fluss.OffsetEarliest)
			return err
		})
		if err != nil {
			return from, fmt.Errorf("start of %s bucket %d: %w", t.path, bucket, err)
		}
		from = starts[bucket]
	}
	dec, err := logbatch.NewDecoder(t.schema, nil)
	if err != nil {
		return from, err
	}
	next := from
	for {
		var res []fluss.FetchResult
		err := fluss.RetryWithin(ctx, t.retryFor, func() (err error) {
			res, err = t.fluss.FetchLog(ctx, info.TableID, []fluss.FetchBucket{{Bucket: bucket, Offset: next, MaxBytes: t.fetchBytes}}, fluss.FetchOptions{})
			if err == nil {
				err = res[0].Err
			}
			return err
		})
		if err != nil {
			return from, fmt.Errorf("read %s bucket %d at %d: %w", t.path, bucket, next, err)
		}
		it := logbatch.NewIterator(res[0].Records)
		for it.Next() {
			b := it.Batch()
			if b.BaseOffset+int64(b.LastOffsetDelta) < next {
				continue
			}
			next = b.BaseOffset + int64(b.LastOffsetDelta) + 1
			if b.RecordCount == 0 {
				continue
			}
			if err := decodeTo(dec, b, fn); err != nil {
				return from, fmt.Errorf("%s bucket %d batch at %d: %w", t.path, bucket, b.BaseOffset, err)
			}
		}
		if err := it.Err(); err != nil && !errors.Is(err, logbatch.ErrShortBatch) {
			return from, fmt.Errorf("%s bucket %d at %d: %w", t.path, bucket, next, err)
		}
		if next >= res[0].HighWatermark {
			return next, nil
		}
	}
}

func decodeTo(dec *logbatch.Decoder, b logbatch.Batch, fn func(rec arrow.RecordBatch) error) error {
	rec, err := dec.Decode(b)
	if err != nil {
		return err
	}
	defer rec.Release()
	return fn(rec)
}
