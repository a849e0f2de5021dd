package appender

import (
	"context"
	"testing"
	"time"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestRealWriterDedup: what frontdoor's idempotence rests on, against a
// real tablet server. A batch resent with the writer id and batch sequence
// of its first attempt is not stored again and is answered with the offset
// it was stored at; a gap in the sequences is refused; the log holds every
// row once.
func TestRealWriterDedup(t *testing.T) {
	e := newRealEnv(t)
	info := e.table(t, "writer_dedup", testCols, 1, "LZ4_FRAME")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w1, err := e.client.InitWriter(ctx, &appendv1.InitWriterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := e.client.InitWriter(ctx, &appendv1.InitWriterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if w1.GetWriterId() < 0 || w1.GetWriterId() == w2.GetWriterId() {
		t.Fatalf("writer ids %d and %d: want distinct and non-negative", w1.GetWriterId(), w2.GetWriterId())
	}
	job := uint64(0)
	req := func(writer int64, seq int32, rows int) *appendv1.AppendRequest {
		job++
		b, _ := ipcOf(t, rows, uint64(seq)+1)
		return &appendv1.AppendRequest{JobId: job, TableId: info.TableID, Database: info.Database, Table: info.Table, BucketId: 0, SchemaId: info.SchemaID,
			ArrowCompression: catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME, ArrowIpc: b, RecordCount: int32(rows),
			Acks: -1, TimeoutMs: 30000, WriterId: writer, BatchSequence: seq}
	}
	type step struct {
		req    *appendv1.AppendRequest
		code   fluss.ErrorCode
		offset int64
	}
	a, b := req(w1.GetWriterId(), 0, 3), req(w1.GetWriterId(), 1, 2)
	other := req(w2.GetWriterId(), 0, 1) // its own sequence space
	// One stream per round, answers awaited between rounds: the second
	// round is what a retry after a lost answer looks like.
	rounds := [][]step{
		{{a, 0, 0}, {b, 0, 3}},
		{{req(w1.GetWriterId(), 0, 3), 0, 0}, {req(w1.GetWriterId(), 1, 2), 0, 3}, {other, 0, 5}},
		{{req(w1.GetWriterId(), 3, 1), fluss.CodeOutOfOrderSequence, -1}, {req(w1.GetWriterId(), 2, 4), 0, 6}},
	}
	for i, round := range rounds {
		var reqs []*appendv1.AppendRequest
		for _, s := range round {
			reqs = append(reqs, s.req)
		}
		answers := e.stream(t, reqs)
		for _, s := range round {
			got := answers[s.req.GetJobId()]
			if fluss.ErrorCode(got.GetErrorCode()) != s.code || (s.code == 0 && got.GetBaseOffset() != s.offset) {
				t.Fatalf("round %d writer %d seq %d: %v, want code %v offset %d", i, s.req.GetWriterId(), s.req.GetBatchSequence(), got, s.code, s.offset)
			}
		}
	}
	rows := e.cluster.Scan(t, e.db, "writer_dedup", testenv.ScanOptions{Timeout: time.Minute})
	if len(rows) != 10 {
		t.Fatalf("table holds %d rows, want 10 (3+2+1+4, resends not stored)", len(rows))
	}
	for i, r := range rows {
		if r.Offset != int64(i) {
			t.Fatalf("row %d at offset %d", i, r.Offset)
		}
	}
}
