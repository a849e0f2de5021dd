package fluss

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// TestRealLargeBatch sends a multi-megabyte batch (frames well past the
// pooled buffer size) and fetches it back whole.
func TestRealLargeBatch(t *testing.T) {
	c := dialReal(t)
	ctx := testCtx(t)
	db := tempDatabase(t, c)
	path := TablePath{db, "large"}
	info := CreateTestTable(t, c, path, TableDescriptor{
		Schema:     types.Schema{Columns: []types.Column{col("s", types.DataType{Root: types.String, Nullable: true})}},
		NumBuckets: 1,
		Properties: map[string]string{PropArrowCompressionType: "NONE"},
	})
	schema, _ := types.ArrowSchema(info.Schema.Fields())
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	row := strings.Repeat("x", 1000)
	const rows = 3000
	for i := 0; i < rows; i++ {
		bld.Field(0).(*array.StringBuilder).Append(row)
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	batch, err := logbatch.Build(rec, logbatch.DefaultOptions(int16(info.SchemaID)))
	if err != nil {
		t.Fatal(err)
	}
	if len(batch) < 2<<20 {
		t.Fatalf("batch is only %d bytes; the test wants a multi-megabyte frame", len(batch))
	}
	res := produceRetryingStale(t, c, info.TableID, AcksAll, []BucketBatch{{Bucket: 0, Records: batch}})
	if res[0].Err != nil || res[0].BaseOffset != 0 {
		t.Fatalf("produce %d bytes: %+v", len(batch), res[0])
	}
	fr, err := c.FetchLog(ctx, info.TableID, []FetchBucket{{Bucket: 0, MaxBytes: 8 << 20}}, FetchOptions{MaxBytes: 8 << 20})
	if err != nil || fr[0].Err != nil {
		t.Fatalf("fetch: %+v %v", fr, err)
	}
	if fr[0].HighWatermark != rows || len(fr[0].Records) != len(batch) {
		t.Errorf("fetched %d bytes, high watermark %d; want %d bytes, %d", len(fr[0].Records), fr[0].HighWatermark, len(batch), rows)
	}
}
