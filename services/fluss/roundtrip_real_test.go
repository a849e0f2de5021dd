package fluss

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestRealProduceFetchRoundTrip writes Arrow log batches built by logbatch
// with ProduceLog (each acks mode), reads them back with FetchLog and
// ListOffsets, and has the official Java client (testenv's helper) read the
// same rows.
func TestRealProduceFetchRoundTrip(t *testing.T) {
	cluster := testenv.Fluss(t)
	c := dialReal(t)
	ctx := testCtx(t)
	db := tempDatabase(t, c)
	path := TablePath{db, "events"}
	info := CreateTestTable(t, c, path, TableDescriptor{
		Schema: types.Schema{Columns: []types.Column{
			col("id", nn(types.DataType{Root: types.BigInt})),
			col("name", types.DataType{Root: types.String, Nullable: true}),
		}},
		NumBuckets: 2,
		Properties: map[string]string{PropArrowCompressionType: "LZ4_FRAME"},
	})
	schema, err := types.ArrowSchema(info.Schema.Fields())
	if err != nil {
		t.Fatal(err)
	}

	build := func(first int64, n int) []byte {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer bld.Release()
		for i := int64(0); i < int64(n); i++ {
			bld.Field(0).(*array.Int64Builder).Append(first + i)
			if (first+i)%3 == 0 {
				bld.Field(1).AppendNull()
			} else {
				bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", first+i))
			}
		}
		rec := bld.NewRecordBatch()
		defer rec.Release()
		opts := logbatch.DefaultOptions(int16(info.SchemaID))
		opts.Compression = logbatch.CompressionLZ4Frame
		out, err := logbatch.Build(rec, opts)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// Three produce calls, one per acks mode, each writing 5 rows to
	// bucket 0 and 5 to bucket 1.
	next := int64(0)
	wantOffset := map[int32]int64{0: 0, 1: 0}
	for _, acks := range []Acks{AcksAll, AcksLeader, AcksNone} {
		batches := []BucketBatch{{Bucket: 0, Records: build(next, 5)}, {Bucket: 1, Records: build(next+5, 5)}}
		next += 10
		res := produceRetryingStale(t, c, info.TableID, acks, batches)
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("acks %d bucket %d: %v", acks, r.Bucket, r.Err)
			}
			if r.BaseOffset != wantOffset[r.Bucket] {
				t.Errorf("acks %d bucket %d: base offset %d, want %d", acks, r.Bucket, r.BaseOffset, wantOffset[r.Bucket])
			}
			wantOffset[r.Bucket] += 5
		}
	}

	latest, err := c.ListOffsets(ctx, info.TableID, nil, []int32{0, 1}, OffsetLatest)
	if err != nil || latest[0] != 15 || latest[1] != 15 {
		t.Errorf("ListOffsets(latest) = %v, %v; want 15 each", latest, err)
	}
	earliest, err := c.ListOffsets(ctx, info.TableID, nil, []int32{0, 1}, OffsetEarliest)
	if err != nil || earliest[0] != 0 || earliest[1] != 0 {
		t.Errorf("ListOffsets(earliest) = %v, %v", earliest, err)
	}

	// Read everything back with FetchLog and decode it.
	dec, err := logbatch.NewDecoder(schema, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	fetched, err := c.FetchLog(ctx, info.TableID, []FetchBucket{{Bucket: 0}, {Bucket: 1}}, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fr := range fetched {
		if fr.Err != nil {
			t.Fatalf("fetch bucket %d: %v", fr.Bucket, fr.Err)
		}
		if fr.HighWatermark != 15 {
			t.Errorf("bucket %d high watermark %d, want 15", fr.Bucket, fr.HighWatermark)
		}
		it := logbatch.NewIterator(fr.Records)
		wantBase := int64(0)
		for it.Next() {
			b := it.Batch()
			if b.BaseOffset != wantBase || b.RecordCount != 5 {
				t.Errorf("bucket %d: batch at %d with %d records, want %d with 5", fr.Bucket, b.BaseOffset, b.RecordCount, wantBase)
			}
			wantBase += 5
			rec, err := dec.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			ids := rec.Column(0).(*array.Int64)
			names := rec.Column(1).(*array.String)
			for i := 0; i < int(rec.NumRows()); i++ {
				name := "<null>"
				if names.IsValid(i) {
					name = names.Value(i)
				}
				got[ids.Value(i)] = name
			}
			rec.Release()
		}
		if err := it.Err(); err != nil {
			t.Fatalf("bucket %d: %v", fr.Bucket, err)
		}
	}
	checkRows := func(who string, got map[int64]string) {
		t.Helper()
		if len(got) != 30 {
			t.Errorf("%s read %d rows, want 30", who, len(got))
		}
		for id := int64(0); id < 30; id++ {
			want := fmt.Sprintf("row-%d", id)
			if id%3 == 0 {
				want = "<null>"
			}
			if got[id] != want {
				t.Errorf("%s: row %d name %q, want %q", who, id, got[id], want)
			}
		}
	}
	checkRows("FetchLog", got)

	// The official Java client reads the same rows.
	rows := cluster.Scan(t, db, "events", testenv.ScanOptions{Expect: 30, Timeout: 60 * time.Second})
	javaGot := map[int64]string{}
	for _, r := range rows {
		if r.ChangeType != "+A" {
			t.Errorf("change type %q", r.ChangeType)
		}
		id, err := r.Row["id"].(interface{ Int64() (int64, error) }).Int64()
		if err != nil {
			t.Fatalf("row %v: %v", r.Row, err)
		}
		name := "<null>"
		if s, ok := r.Row["name"].(string); ok {
			name = s
		}
		javaGot[id] = name
		if r.Offset < 0 || r.Offset >= 15 || (r.Bucket != 0 && r.Bucket != 1) {
			t.Errorf("row %d at bucket %d offset %d", id, r.Bucket, r.Offset)
		}
	}
	checkRows("Java scanner", javaGot)
}

// TestRealPartitionedProduce creates a partition (with the table, waiting
// for its leader), writes one batch into it by partition id, and reads it
// back with FetchLog and the Java client.
func TestRealPartitionedProduce(t *testing.T) {
	cluster := testenv.Fluss(t)
	c := dialReal(t)
	ctx := testCtx(t)
	db := tempDatabase(t, c)
	path := TablePath{db, "by_region"}
	info := CreateTestTable(t, c, path, TableDescriptor{
		Schema: types.Schema{Columns: []types.Column{
			col("region", nn(types.DataType{Root: types.String})),
			col("n", types.DataType{Root: types.Int, Nullable: true}),
		}},
		PartitionKeys: []string{"region"},
		NumBuckets:    1,
	}, PartitionSpec{"region": "eu"})
	if err := c.CreatePartition(ctx, path, PartitionSpec{"region": "eu"}, false); CodeOf(err) != CodePartitionAlreadyExists {
		t.Errorf("CreatePartition(again) err = %v, want PARTITION_ALREADY_EXISTS", err)
	}
	if err := c.CreatePartition(ctx, path, PartitionSpec{"region": "eu"}, true); err != nil {
		t.Errorf("CreatePartition(again, ignore) = %v", err)
	}
	parts, err := c.ListPartitions(ctx, path)
	if err != nil || len(parts) != 1 || parts[0].Name != "eu" {
		t.Fatalf("ListPartitions = %+v, %v", parts, err)
	}
	pid := parts[0].ID

	schema, err := types.ArrowSchema(info.Schema.Fields())
	if err != nil {
		t.Fatal(err)
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	for i := int32(0); i < 4; i++ {
		bld.Field(0).(*array.StringBuilder).Append("eu")
		bld.Field(1).(*array.Int32Builder).Append(i * 10)
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	batch, err := logbatch.Build(rec, logbatch.DefaultOptions(int16(info.SchemaID)))
	if err != nil {
		t.Fatal(err)
	}
	res := produceRetryingStale(t, c, info.TableID, AcksAll, []BucketBatch{{PartitionID: &pid, Bucket: 0, Records: batch}})
	if res[0].Err != nil || res[0].BaseOffset != 0 || res[0].PartitionID == nil || *res[0].PartitionID != pid {
		t.Fatalf("produce into partition: %+v", res[0])
	}
	// Without a partition id the batch has nowhere to go.
	res, err = c.ProduceLog(ctx, info.TableID, AcksAll, time.Second, []BucketBatch{{Bucket: 0, Records: batch}})
	if err != nil || CodeOf(res[0].Err) != CodeUnknownTableOrBucket || !strings.Contains(res[0].Err.Error(), "partition id") {
		t.Errorf("produce to a partitioned table without partition id: %+v, %v", res, err)
	}
	offs, err := c.ListOffsets(ctx, info.TableID, &pid, []int32{0}, OffsetLatest)
	if err != nil || offs[0] != 4 {
		t.Errorf("ListOffsets(partition) = %v, %v; want 4", offs, err)
	}
	fr, err := c.FetchLog(ctx, info.TableID, []FetchBucket{{PartitionID: &pid, Bucket: 0}}, FetchOptions{})
	if err != nil || fr[0].Err != nil || fr[0].HighWatermark != 4 {
		t.Fatalf("FetchLog(partition) = %+v, %v", fr, err)
	}
	rows := cluster.Scan(t, db, "by_region", testenv.ScanOptions{Expect: 4, Timeout: 60 * time.Second})
	for _, r := range rows {
		if r.PartitionID == nil || *r.PartitionID != pid || r.Row["region"] != "eu" {
			t.Errorf("Java scanner row %+v", r)
		}
	}
	if len(rows) != 4 {
		t.Errorf("Java scanner read %d rows, want 4", len(rows))
	}
}
