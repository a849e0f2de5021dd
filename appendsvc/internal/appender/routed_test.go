package appender

import (
	"strings"
	"sync/atomic"
	"testing"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/kvbatch"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
)

// routedReq is a request with pieces instead of one Arrow batch.
func routedReq(job uint64, writer int64, pieces ...*appendv1.AppendPiece) *appendv1.AppendRequest {
	r := baseReq(job, 2, nil, 0)
	r.ArrowIpc, r.RecordCount, r.WriterId, r.Pieces = nil, 0, writer, pieces
	return r
}

func logPiece(t *testing.T, partition string, bucket int32, rows int, seq int32) *appendv1.AppendPiece {
	ipcBytes, _ := ipcOf(t, rows, uint64(bucket)+1)
	return &appendv1.AppendPiece{PartitionName: partition, BucketId: bucket, ArrowIpc: ipcBytes, RecordCount: int32(rows), BatchSequence: seq}
}

func kvPiece(t testing.TB, bucket int32, seq int32, keys ...string) *appendv1.AppendPiece {
	b := kvbatch.NewBuilder()
	for i, k := range keys {
		row := []byte{0, byte(i)}
		if i%2 == 1 {
			row = nil // a delete
		}
		if err := b.Append([]byte(k), row); err != nil {
			t.Fatal(err)
		}
	}
	return &appendv1.AppendPiece{BucketId: bucket, KvRecords: b.RecordBytes(), RecordCount: int32(len(keys)), BatchSequence: seq}
}

func TestRoutedLogPiecesResolvePartitionsFirst(t *testing.T) {
	h := newHarness(t, Config{}, okAt)
	resp := h.run(t, routedReq(1, 7, logPiece(t, "20261204", 0, 3, 4), logPiece(t, "20261203", 1, 2, 0)))[1]
	if resp.GetErrorCode() != 0 {
		t.Fatalf("answer %v", resp)
	}
	calls := h.fake.snapshot()
	if len(calls) != 1 || len(calls[0].batches) != 2 || calls[0].kv {
		t.Fatalf("calls %+v, want one ProduceLog with both pieces", calls)
	}
	ids := h.fake.partitions
	for i, want := range []struct {
		name string
		seq  int32
	}{{"20261204", 4}, {"20261203", 0}} {
		b := calls[0].batches[i]
		if b.PartitionID == nil || *b.PartitionID != ids[want.name] {
			t.Errorf("piece %d: partition id %v, want %d (%s)", i, b.PartitionID, ids[want.name], want.name)
		}
		it := logbatch.NewIterator(recordsOf(b))
		if !it.Next() || it.Batch().WriterID != 7 || it.Batch().BatchSequence != want.seq {
			t.Errorf("piece %d: batch header %+v, want writer 7 sequence %d", i, it.Batch(), want.seq)
		}
	}
}

func TestRoutedPartitionRefusedWritesNothing(t *testing.T) {
	h := newHarness(t, Config{}, okAt)
	h.fake.refuse = map[string]error{"bad": &fluss.Error{Code: fluss.CodePartitionSpecInvalid, Message: "no"}}
	resp := h.run(t, routedReq(1, -1, logPiece(t, "good", 0, 3, -1), logPiece(t, "bad", 0, 2, -1)))[1]
	if resp.GetErrorCode() != int32(fluss.CodePartitionSpecInvalid) || resp.GetPossiblyStored() || resp.GetRetriable() {
		t.Fatalf("answer %v, want a definite PARTITION_SPEC_INVALID", resp)
	}
	if calls := h.fake.snapshot(); len(calls) != 0 {
		t.Fatalf("%d writes for a batch with a refused partition", len(calls))
	}
}

func TestRoutedRetriesOnlyFailedPieces(t *testing.T) {
	var n atomic.Int32
	h := newHarness(t, Config{}, func(f *fakeFluss) func(int, fakeCall) ([]fluss.BucketResult, error) {
		return func(_ int, c fakeCall) ([]fluss.BucketResult, error) {
			var out []fluss.BucketResult
			for _, b := range c.batches {
				r := fluss.BucketResult{Bucket: b.Bucket, BaseOffset: 10 * int64(b.Bucket)}
				if b.Bucket == 1 && n.Add(1) == 1 {
					r.Err = &fluss.Error{Code: fluss.CodeNotLeaderOrFollower, Message: "moved"}
				}
				out = append(out, r)
			}
			return out, nil
		}
	})
	resp := h.run(t, routedReq(1, 3, kvPiece(t, 2, 0, "a", "b"), kvPiece(t, 1, 5, "c")))[1]
	if resp.GetErrorCode() != 0 || resp.GetBaseOffset() != 20 {
		t.Fatalf("answer %v, want success at the first piece's offset 20", resp)
	}
	calls := h.fake.snapshot()
	if len(calls) != 2 || !calls[0].kv || len(calls[0].batches) != 2 || len(calls[1].batches) != 1 || calls[1].batches[0].Bucket != 1 {
		t.Fatalf("calls %+v, want PutKv of both pieces, then of bucket 1 only", calls)
	}
	hdr, recs, err := kvbatch.Decode(recordsOf(calls[1].batches[0]))
	if err != nil || hdr.WriterID != 3 || hdr.BatchSequence != 5 || len(recs) != 1 {
		t.Fatalf("resent piece: %+v %d records %v, want writer 3 sequence 5", hdr, len(recs), err)
	}
}

func TestRoutedPartlyStoredIsPossiblyStored(t *testing.T) {
	h := newHarness(t, Config{}, func(f *fakeFluss) func(int, fakeCall) ([]fluss.BucketResult, error) {
		return func(_ int, c fakeCall) ([]fluss.BucketResult, error) {
			out := []fluss.BucketResult{{Bucket: c.batches[0].Bucket}}
			if len(c.batches) > 1 {
				out = append(out, fluss.BucketResult{Bucket: c.batches[1].Bucket, Err: &fluss.Error{Code: fluss.CodeRecordTooLarge, Message: "too large"}})
			}
			return out, nil
		}
	})
	resp := h.run(t, routedReq(1, -1, logPiece(t, "", 0, 1, -1), logPiece(t, "", 1, 1, -1)))[1]
	if resp.GetErrorCode() != int32(fluss.CodeRecordTooLarge) || !resp.GetPossiblyStored() {
		t.Fatalf("answer %v: one piece stored, one refused; want the refusal, possibly stored", resp)
	}
}

func TestRoutedRequestChecks(t *testing.T) {
	h := newHarness(t, Config{}, okAt)
	mixed := routedReq(1, -1, logPiece(t, "", 0, 1, -1), kvPiece(t, 1, -1, "k"))
	twice := routedReq(2, -1, logPiece(t, "p", 0, 1, -1), logPiece(t, "p", 0, 1, -1))
	noSeq := routedReq(3, 9, logPiece(t, "", 0, 1, -1))
	badKV := routedReq(4, -1, kvPiece(t, 0, -1, "k"))
	badKV.Pieces[0].RecordCount = 2
	got := h.run(t, mixed, twice, noSeq, badKV)
	for job, frag := range map[uint64]string{1: "either arrow_ipc", 2: "appears twice", 3: "batch_sequence -1 with writer_id 9", 4: "kv_records"} {
		if r := got[job]; r.GetErrorCode() == 0 || !strings.Contains(r.GetErrorMessage(), frag) || r.GetPossiblyStored() {
			t.Errorf("job %d: %v, want a refusal mentioning %q", job, r, frag)
		}
	}
	if calls := h.fake.snapshot(); len(calls) != 0 {
		t.Errorf("%d writes for refused requests", len(calls))
	}
}
