package appender

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// TestRealListWriterBatches: the read-back frontdoor rebuilds lost
// sequence state from, against a real tablet server. Batches of two
// writers interleave in one bucket; the listing returns exactly one
// writer's headers, in order, from any batch boundary, also one batch per
// call when max_bytes is smaller than a batch.
func TestRealListWriterBatches(t *testing.T) {
	e := newRealEnv(t)
	info := e.table(t, "writer_log", testCols, 1, "LZ4_FRAME")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bucket := &appendv1.BucketRef{TableId: info.TableID, Database: info.Database, Table: info.Table, BucketId: 0}
	latest := func() int64 {
		t.Helper()
		r, err := e.client.GetLatestOffset(ctx, &appendv1.GetLatestOffsetRequest{Bucket: bucket})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetOffset()
	}
	if got := latest(); got != 0 {
		t.Fatalf("latest offset of an empty bucket: %d", got)
	}
	var ws []int64
	for range 2 {
		w, err := e.client.InitWriter(ctx, &appendv1.InitWriterRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w.GetWriterId())
	}
	job := uint64(0)
	req := func(writer int64, seq int32, rows int) *appendv1.AppendRequest {
		job++
		b, _ := ipcOf(t, rows, job)
		return &appendv1.AppendRequest{JobId: job, TableId: info.TableID, Database: info.Database, Table: info.Table, BucketId: 0, SchemaId: info.SchemaID,
			ArrowCompression: catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME, ArrowIpc: b, RecordCount: int32(rows),
			Acks: -1, TimeoutMs: 30000, WriterId: writer, BatchSequence: seq}
	}
	// Offsets: w0/0 at 0-2, w1/0 at 3, w0/1 at 4-5, unidempotent at 6, w0/2 at 7-10.
	reqs := []*appendv1.AppendRequest{req(ws[0], 0, 3), req(ws[1], 0, 1), req(ws[0], 1, 2), req(-1, -1, 1), req(ws[0], 2, 4)}
	for _, r := range reqs {
		if a := e.stream(t, []*appendv1.AppendRequest{r})[r.GetJobId()]; a.GetErrorCode() != 0 {
			t.Fatalf("append %v: %v", r.GetJobId(), a)
		}
	}
	if got := latest(); got != 11 {
		t.Fatalf("latest offset after 11 rows: %d", got)
	}
	list := func(from int64, writer int64, maxBytes int32) ([]*appendv1.WriterBatch, int64) {
		t.Helper()
		var out []*appendv1.WriterBatch
		calls := 0
		for {
			r, err := e.client.ListWriterBatches(ctx, &appendv1.ListWriterBatchesRequest{Bucket: bucket, FromOffset: from, WriterId: writer, MaxBytes: maxBytes})
			if err != nil {
				t.Fatal(err)
			}
			calls++
			out = append(out, r.GetBatches()...)
			if r.GetHighWatermark() != 11 || r.GetNextOffset() <= from {
				t.Fatalf("from %d: next %d, high watermark %d", from, r.GetNextOffset(), r.GetHighWatermark())
			}
			from = r.GetNextOffset()
			if from >= r.GetHighWatermark() {
				return out, int64(calls)
			}
		}
	}
	type hdr struct {
		off       int64
		seq, rows int32
	}
	check := func(name string, got []*appendv1.WriterBatch, want ...hdr) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d batches %v, want %v", name, len(got), got, want)
		}
		for i, w := range want {
			if g := got[i]; g.GetBaseOffset() != w.off || g.GetBatchSequence() != w.seq || g.GetRecordCount() != w.rows {
				t.Fatalf("%s: batch %d is %v, want %+v", name, i, g, w)
			}
		}
	}
	got, _ := list(0, ws[0], 0)
	check("writer 0 from 0", got, hdr{0, 0, 3}, hdr{4, 1, 2}, hdr{7, 2, 4})
	got, _ = list(4, ws[0], 0)
	check("writer 0 from 4", got, hdr{4, 1, 2}, hdr{7, 2, 4})
	got, _ = list(0, ws[1], 0)
	check("writer 1", got, hdr{3, 0, 1})
	got, calls := list(0, ws[0], 1)
	check("writer 0, one batch per call", got, hdr{0, 0, 3}, hdr{4, 1, 2}, hdr{7, 2, 4})
	if calls != 5 {
		t.Fatalf("max_bytes 1 took %d calls for 5 batches", calls)
	}
	// Read to the end: nothing, and next_offset stays.
	r, err := e.client.ListWriterBatches(ctx, &appendv1.ListWriterBatchesRequest{Bucket: bucket, FromOffset: 11, WriterId: ws[0]})
	if err != nil || len(r.GetBatches()) != 0 || r.GetNextOffset() != 11 {
		t.Fatalf("at the end: %v, %v", r, err)
	}

	missing := &appendv1.BucketRef{TableId: info.TableID, Database: info.Database, Table: "no_such_table", BucketId: 0}
	_, err = e.client.ListWriterBatches(ctx, &appendv1.ListWriterBatchesRequest{Bucket: missing, WriterId: ws[0]})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("missing table: %v, want NotFound", err)
	}
	_, err = e.client.GetLatestOffset(ctx, &appendv1.GetLatestOffsetRequest{Bucket: missing})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("missing table, latest offset: %v, want NotFound", err)
	}
}
