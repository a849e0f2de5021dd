package logbatch_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/testenv"
)

// produceStale calls ProduceLog until the bucket stops reporting stale
// metadata (a new table's leader needs a moment).
func produceStale(t *testing.T, c *fluss.Client, tableID int64, batch []byte) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		res, err := c.ProduceLog(ctx, tableID, fluss.AcksAll, 10*time.Second, []fluss.BucketBatch{{Bucket: 0, Records: batch}})
		if err != nil {
			t.Fatalf("ProduceLog: %v", err)
		}
		var fe *fluss.Error
		if res[0].Err == nil {
			return res[0].BaseOffset
		}
		if !(errors.As(res[0].Err, &fe) && fe.StaleMetadata()) && !fluss.IsRetriable(res[0].Err) {
			t.Fatalf("ProduceLog bucket 0: %v", res[0].Err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ProduceLog kept failing: %v", res[0].Err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestRealRoundTripEveryType writes batches built by Build into real Fluss
// log tables (one per compression, and magic V1), reads them back with the
// Fluss Java client (flusshelper scan) and compares every value, then
// fetches the stored bytes and compares them with what was sent: the
// server may only have filled in base offset and commit timestamp.
func TestRealRoundTripEveryType(t *testing.T) {
	cluster := testenv.Fluss(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := fluss.Dial(ctx, cluster.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	db := cluster.NewDatabase(t, "logbatch")
	cols := goldentest.AllTypesColumns()
	var specCols []testenv.Column
	for _, col := range cols {
		specCols = append(specCols, testenv.Column{Name: col.Name, Type: col.Type.String()})
	}
	for i, tc := range []struct {
		name     string
		table    string
		comp     logbatch.Compression
		magic    byte
		property string
	}{
		{"none", "t_none", logbatch.CompressionNone, logbatch.MagicV0, "NONE"},
		{"lz4", "t_lz4", logbatch.CompressionLZ4Frame, logbatch.MagicV0, "LZ4_FRAME"},
		{"zstd", "t_zstd", logbatch.CompressionZSTD, logbatch.MagicV0, "ZSTD"},
		{"v1", "t_v1", logbatch.CompressionLZ4Frame, logbatch.MagicV1, "LZ4_FRAME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := cluster.NewTable(t, testenv.TableSpec{Database: db, Table: tc.table, Columns: specCols, BucketCount: 1,
				Properties: map[string]string{"table.log.arrow.compression.type": tc.property}})
			if _, err := c.GetTableInfo(ctx, fluss.TablePath{Database: db, Table: tc.table}); err != nil {
				t.Fatal(err)
			}
			var recs []arrow.RecordBatch
			var sent [][]byte
			rows := 0
			for b, n := range []int{40, 1, 300} {
				rec, err := goldentest.Record(memory.NewGoAllocator(), cols, n, uint64(100*i+b), 25)
				if err != nil {
					t.Fatal(err)
				}
				opts := logbatch.DefaultOptions(int16(info.SchemaID))
				opts.Compression, opts.Magic = tc.comp, tc.magic
				batch, err := logbatch.Build(rec, opts)
				if err != nil {
					t.Fatal(err)
				}
				if off := produceStale(t, c, info.TableID, batch); off != int64(rows) {
					t.Fatalf("batch %d stored at offset %d, want %d", b, off, rows)
				}
				recs = append(recs, rec)
				sent = append(sent, batch)
				rows += n
			}

			// The Java client reads every value back as written.
			scanned := cluster.Scan(t, db, tc.table, testenv.ScanOptions{Expect: rows})
			if len(scanned) != rows {
				t.Fatalf("scanned %d rows, want %d", len(scanned), rows)
			}
			var want []map[string]any
			for _, rec := range recs {
				for r := 0; r < int(rec.NumRows()); r++ {
					want = append(want, goldentest.ScanRowValues(rec, cols, r))
				}
			}
			for _, s := range scanned {
				if s.Offset < 0 || s.Offset >= int64(rows) {
					t.Fatalf("scanned offset %d", s.Offset)
				}
				if d := goldentest.SameScanValue(want[s.Offset], s.Row); d != "" {
					t.Errorf("offset %d: %s", s.Offset, d)
				}
			}

			// The stored bytes are the sent bytes plus what the leader fills in.
			res, err := c.FetchLog(ctx, info.TableID, []fluss.FetchBucket{{Bucket: 0, Offset: 0, MaxBytes: 16 << 20}}, fluss.FetchOptions{})
			if err != nil || res[0].Err != nil {
				t.Fatalf("FetchLog: %v %v", err, res[0].Err)
			}
			it := logbatch.NewIterator(res[0].Records)
			n := 0
			base := int64(0)
			for it.Next() {
				got := it.Batch()
				if n >= len(sent) {
					t.Fatal("more batches stored than sent")
				}
				if got.BaseOffset != base || got.CommitTimestamp <= 0 {
					t.Errorf("batch %d: base offset %d commit timestamp %d", n, got.BaseOffset, got.CommitTimestamp)
				}
				// Fluss 0.9.1's LogTablet sets only base offset and commit
				// timestamp; a V1 batch keeps the client's leader epoch (-1).
				if tc.magic == logbatch.MagicV1 && got.LeaderEpoch != logbatch.NoLeaderEpoch {
					t.Errorf("batch %d: leader epoch %d, the server was not expected to set it", n, got.LeaderEpoch)
				}
				if d := diffOutsideServerFields(sent[n], got.Bytes); d != "" {
					t.Errorf("batch %d: %s", n, d)
				}
				base += int64(got.RecordCount)
				n++
			}
			if it.Err() != nil || n != len(sent) {
				t.Fatalf("fetched %d batches (err %v), sent %d", n, it.Err(), len(sent))
			}
		})
	}
}

// diffOutsideServerFields compares two batches ignoring base offset and
// commit timestamp.
func diffOutsideServerFields(sent, stored []byte) string {
	if len(sent) != len(stored) {
		return fmt.Sprintf("stored %d bytes, sent %d", len(stored), len(sent))
	}
	a, b := bytes.Clone(sent), bytes.Clone(stored)
	for _, x := range [][]byte{a, b} {
		binary.LittleEndian.PutUint64(x[0:], 0)  // base offset
		binary.LittleEndian.PutUint64(x[13:], 0) // commit timestamp
	}
	if !bytes.Equal(a, b) {
		return "stored batch differs from the sent one beyond the server-assigned fields: " + firstDiff(b, a)
	}
	return ""
}

// TestRealMultiBatchRequest checks what appendsvc's coalescing relies on:
// several batches concatenated in one bucket's produce request are stored
// as separate batches at consecutive offsets, and the answer is the first
// batch's base offset.
func TestRealMultiBatchRequest(t *testing.T) {
	cluster := testenv.Fluss(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := fluss.Dial(ctx, cluster.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	db := cluster.NewDatabase(t, "logbatch_multi")
	cols := goldentest.AllTypesColumns()[:6]
	var specCols []testenv.Column
	for _, col := range cols {
		specCols = append(specCols, testenv.Column{Name: col.Name, Type: col.Type.String()})
	}
	info := cluster.NewTable(t, testenv.TableSpec{Database: db, Table: "multi", Columns: specCols, BucketCount: 1})
	if _, err := c.GetTableInfo(ctx, fluss.TablePath{Database: db, Table: "multi"}); err != nil {
		t.Fatal(err)
	}
	first := produceStale(t, c, info.TableID, buildRows(t, cols, 4, 1, int16(info.SchemaID)))
	var records []byte
	sizes := []int{3, 5, 2}
	for i, n := range sizes {
		records = append(records, buildRows(t, cols, n, uint64(10+i), int16(info.SchemaID))...)
	}
	base := produceStale(t, c, info.TableID, records)
	if first != 0 || base != 4 {
		t.Fatalf("base offsets %d then %d, want 0 then 4", first, base)
	}
	res, err := c.FetchLog(ctx, info.TableID, []fluss.FetchBucket{{Bucket: 0, Offset: 0, MaxBytes: 16 << 20}}, fluss.FetchOptions{})
	if err != nil || res[0].Err != nil {
		t.Fatalf("FetchLog: %v %v", err, res[0].Err)
	}
	want := []struct{ base, count int64 }{{0, 4}, {4, 3}, {7, 5}, {12, 2}}
	it := logbatch.NewIterator(res[0].Records)
	i := 0
	for it.Next() {
		b := it.Batch()
		if i >= len(want) || b.BaseOffset != want[i].base || int64(b.RecordCount) != want[i].count {
			t.Fatalf("stored batch %d at %d with %d records, want %+v", i, b.BaseOffset, b.RecordCount, want)
		}
		i++
	}
	if it.Err() != nil || i != len(want) {
		t.Fatalf("%d batches stored (err %v), want %d", i, it.Err(), len(want))
	}
}

func buildRows(t *testing.T, cols []types.Field, n int, seed uint64, schemaID int16) []byte {
	t.Helper()
	rec, err := goldentest.Record(memory.NewGoAllocator(), cols, n, seed, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	b, err := logbatch.Build(rec, logbatch.DefaultOptions(schemaID))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
