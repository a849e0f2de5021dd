package reader

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/metric/noop"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
)

// tieredFluss is one bucket of one table whose offsets below localStart
// were tiered to remote storage: a read there names the remote segments,
// whose end is remoteEnd (Fluss's end offset, inclusive or not).
type tieredFluss struct {
	Fluss      // the methods not faked here are not called
	localStart int64
	remoteEnd  int64
	hw         int64
	reads      []int64 // offsets read, in order
}

func (f *tieredFluss) GetTableInfo(context.Context, fluss.TablePath) (*fluss.TableInfo, error) {
	return &fluss.TableInfo{TableID: 1}, nil
}

func (f *tieredFluss) ListOffsets(_ context.Context, _ int64, _ *int64, buckets []int32, spec fluss.OffsetSpec) (map[int32]int64, error) {
	off := int64(0) // the log's start, remote data included
	if spec == fluss.OffsetLatest {
		off = f.hw
	}
	return map[int32]int64{buckets[0]: off}, nil
}

func (f *tieredFluss) OffsetsForTimestamp(_ context.Context, _ int64, _ *int64, buckets []int32, _ int64) (map[int32]int64, error) {
	return map[int32]int64{buckets[0]: 10}, nil // a batch long tiered away
}

func (f *tieredFluss) FetchLog(_ context.Context, _ int64, buckets []fluss.FetchBucket, _ fluss.FetchOptions) ([]fluss.FetchResult, error) {
	b := buckets[0]
	f.reads = append(f.reads, b.Offset)
	r := fluss.FetchResult{Bucket: b.Bucket, HighWatermark: f.hw, LogStartOffset: 0}
	if b.Offset < f.localStart {
		r.RemoteEndOffset = f.remoteEnd
		r.Err = fmt.Errorf("%w: bucket %d at offset %d", fluss.ErrRemoteLog, b.Bucket, b.Offset)
		return []fluss.FetchResult{r}, nil
	}
	if b.MaxBytes == 1 {
		// A probe: the first local batch's header (committed at 777).
		rb := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int32}}, nil))
		rec := rb.NewRecordBatch()
		defer rec.Release()
		defer rb.Release()
		batch, err := logbatch.Build(rec, logbatch.DefaultOptions(0))
		if err != nil {
			return nil, err
		}
		binary.LittleEndian.PutUint64(batch, uint64(b.Offset))
		binary.LittleEndian.PutUint64(batch[13:], 777)
		r.Records = batch
	}
	return []fluss.FetchResult{r}, nil
}

// Data Fluss tiered to remote storage is cut off cleanly: ListOffsets
// (earliest) and a Fetch's log start offset name the first local offset, a
// Fetch below it gets OFFSET_OUT_OF_RANGE (the consumer resets instead of
// retrying forever) and a time before it finds the first local batch.
func TestTieredDataIsCutOff(t *testing.T) {
	for _, end := range []int64{200, 199} { // the remote end, exclusive or inclusive
		t.Run(fmt.Sprintf("remote end %d", end), func(t *testing.T) {
			f := &tieredFluss{localStart: 200, remoteEnd: end, hw: 210}
			s, err := New(Config{}, f, slog.New(slog.DiscardHandler), noop.NewMeterProvider())
			if err != nil {
				t.Fatal(err)
			}
			m := &catalogv1.TopicMapping{Topic: "t", Database: "db", Table: "t", TableId: 1, PartitionCount: 1}
			ctx := context.Background()

			read := func(offset int64) *fetchv1.PartitionRecords {
				resp, err := s.Read(ctx, &fetchv1.ReadRequest{MaxBytes: 1 << 20, Topics: []*fetchv1.ReadTopic{{Mapping: m,
					Partitions: []*fetchv1.ReadPartition{{Partition: 0, FetchOffset: offset, MaxBytes: 1 << 20}}}}})
				if err != nil {
					t.Fatal(err)
				}
				return resp.GetTopics()[0].GetPartitions()[0]
			}
			if p := read(50); p.GetErrorCode() != int32(kerr.OffsetOutOfRange.Code) {
				t.Errorf("fetch at 50 (tiered): error %d, want OFFSET_OUT_OF_RANGE", p.GetErrorCode())
			}

			list := func(ts int64) *fetchv1.OffsetAnswer {
				resp, err := s.ListOffsets(ctx, &fetchv1.ListOffsetsRequest{Mapping: m, Partitions: []*fetchv1.OffsetQuery{{Partition: 0, Timestamp: ts}}})
				if err != nil {
					t.Fatal(err)
				}
				return resp.GetPartitions()[0]
			}
			if a := list(timestampEarliest); a.GetErrorCode() != 0 || a.GetOffset() != 200 {
				t.Errorf("earliest: error %d offset %d, want the first local offset 200", a.GetErrorCode(), a.GetOffset())
			}
			if a := list(1000); a.GetErrorCode() != 0 || a.GetOffset() != 200 || a.GetTimestamp() != 777 {
				t.Errorf("by time (found in tiered data): error %d offset %d timestamp %d, want 200 at 777",
					a.GetErrorCode(), a.GetOffset(), a.GetTimestamp())
			}
			if p := read(205); p.GetErrorCode() != 0 || p.GetLogStartOffset() != 200 || p.GetHighWatermark() != 210 {
				t.Errorf("fetch at 205: error %d, log start %d, high watermark %d; want 0, 200, 210",
					p.GetErrorCode(), p.GetLogStartOffset(), p.GetHighWatermark())
			}
			t.Logf("reads: %v", f.reads)
		})
	}
}
