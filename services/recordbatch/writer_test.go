package recordbatch

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAppendBatch decodes a rebuilt batch the way a consumer does: header,
// CRC-32C, then each record's varint fields.
func TestAppendBatch(t *testing.T) {
	recs := []Record{
		{Key: []byte("k1"), Value: []byte(`{"id":1}`), Timestamp: 1000, Headers: []RecordHeader{{Key: "h", Value: []byte("v")}, {Key: "n"}}},
		{Key: nil, Value: nil, Timestamp: 900, OffsetDelta: 1},
		{Key: []byte{}, Value: []byte("x"), Timestamp: 1500, OffsetDelta: 3}, // offset 2 is a gap
	}
	b, err := AppendBatch([]byte("prefix"), 77, 4, recs)
	if err != nil {
		t.Fatal(err)
	}
	b = b[len("prefix"):]
	// recordbatch.ParseHeader checks what a producer may send (no gaps), so
	// the header is read with kmsg, as consumers do.
	var h kmsg.RecordBatch
	if err := h.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if h.FirstOffset != 77 || h.NumRecords != 3 || h.LastOffsetDelta != 4 || h.FirstTimestamp != 1000 || h.MaxTimestamp != 1500 ||
		h.ProducerID != -1 || h.Attributes != 0 || h.Magic != 2 || int(h.Length) != len(b)-12 {
		t.Fatalf("header %+v", h)
	}
	if got := crc32.Checksum(b[OffsetAttributes:], castagnoli); got != binary.BigEndian.Uint32(b[OffsetCRC:]) {
		t.Fatal("CRC mismatch")
	}
	rest := b[HeaderSize:]
	varint := func() int64 {
		v, n := binary.Varint(rest)
		if n <= 0 {
			t.Fatalf("bad varint at %x", rest)
		}
		rest = rest[n:]
		return v
	}
	bytesField := func() []byte {
		n := varint()
		if n < 0 {
			return nil
		}
		v := rest[:n]
		rest = rest[n:]
		return v
	}
	for i, want := range recs {
		length := varint()
		before := len(rest)
		rest = rest[1:] // attributes
		if d := varint(); d != want.Timestamp-1000 {
			t.Errorf("record %d: timestamp delta %d", i, d)
		}
		if d := varint(); d != int64(want.OffsetDelta) {
			t.Errorf("record %d: offset delta %d", i, d)
		}
		key, val := bytesField(), bytesField()
		if (key == nil) != (want.Key == nil) || string(key) != string(want.Key) || (val == nil) != (want.Value == nil) || string(val) != string(want.Value) {
			t.Errorf("record %d: key %q value %q, want %q %q", i, key, val, want.Key, want.Value)
		}
		if n := varint(); n != int64(len(want.Headers)) {
			t.Fatalf("record %d: %d headers", i, n)
		}
		for _, wh := range want.Headers {
			hk, hv := bytesField(), bytesField()
			if string(hk) != wh.Key || (hv == nil) != (wh.Value == nil) || string(hv) != string(wh.Value) {
				t.Errorf("record %d: header %q=%q, want %q=%q", i, hk, hv, wh.Key, wh.Value)
			}
		}
		if int64(before-len(rest)) != length {
			t.Errorf("record %d: length %d, read %d", i, length, before-len(rest))
		}
	}
	if len(rest) != 0 {
		t.Errorf("%d bytes after the last record", len(rest))
	}
}

// TestAppendBatchEmptyAndRefusals: a batch of only gaps keeps its offsets
// (a consumer moves past them); deltas out of order or beyond the batch
// are refused.
func TestAppendBatchEmptyAndRefusals(t *testing.T) {
	b, err := AppendBatch(nil, 10, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	var h kmsg.RecordBatch
	if err := h.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if len(b) != HeaderSize || h.FirstOffset != 10 || h.LastOffsetDelta != 2 || h.NumRecords != 0 ||
		crc32.Checksum(b[OffsetAttributes:], castagnoli) != binary.BigEndian.Uint32(b[OffsetCRC:]) {
		t.Fatalf("empty batch %x", b)
	}
	for name, recs := range map[string][]Record{
		"repeated delta": {{OffsetDelta: 1}, {OffsetDelta: 1}},
		"beyond last":    {{OffsetDelta: 3}},
		"too many":       {{OffsetDelta: 0}, {OffsetDelta: 1}, {OffsetDelta: 2}, {OffsetDelta: 3}},
	} {
		if out, err := AppendBatch([]byte("x"), 0, 2, recs); err == nil || string(out) != "x" {
			t.Errorf("%s: %q, %v; want an error and dst unchanged", name, out, err)
		}
	}
}

// TestRecordBodySize: the size AppendBatch writes ahead of each record is
// the length of what it writes.
func TestRecordBodySize(t *testing.T) {
	long := strings.Repeat("x", 300)
	for i, r := range []Record{
		{},
		{Key: []byte{}, Value: []byte(long), Timestamp: -5, OffsetDelta: 70},
		{Key: []byte("k"), Timestamp: 1 << 40, OffsetDelta: 1 << 20, Headers: []RecordHeader{{Key: long}, {Key: "h", Value: []byte(long)}}},
	} {
		if got, want := recordBodySize(&r, 3), len(appendRecordBody(nil, &r, 3)); got != want {
			t.Errorf("record %d: size %d, written %d", i, got, want)
		}
	}
	for _, v := range []int64{0, -1, 63, 64, -65, 1 << 20, math.MaxInt64, math.MinInt64} {
		if got, want := varintSize(v), len(binary.AppendVarint(nil, v)); got != want {
			t.Errorf("varintSize(%d) = %d, want %d", v, got, want)
		}
	}
}

// TestWriterAndParserAgree: what AppendBatch writes without gaps is a batch
// ParseHeader accepts, with the fields it was written with and a CRC that
// VerifyCRC checks; a batch with gaps (a compacted topic's, never a
// producer's) is one ParseHeader refuses, as a broker refuses it in a
// Produce request.
func TestWriterAndParserAgree(t *testing.T) {
	recs := []Record{
		{Key: []byte("k"), Value: []byte("v"), Timestamp: 2000, Headers: []RecordHeader{{Key: "h"}}},
		{Value: []byte("w"), Timestamp: 1900, OffsetDelta: 1},
	}
	b, err := AppendBatch(nil, 42, 1, recs)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 42 || h.Magic != 2 || h.RecordCount != 2 || h.LastOffsetDelta != 1 || h.BaseTimestamp != 2000 || h.MaxTimestamp != 2000 ||
		h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 || h.Codec() != CodecNone || int(h.BatchLength) != len(b)-OffsetLeaderEpoch {
		t.Fatalf("header %+v", h)
	}
	if err := h.VerifyCRC(b); err != nil {
		t.Fatal(err)
	}
	// Seal is what the writer ends with: after a change it makes the CRC
	// right again.
	b[OffsetAttributes+1] |= byte(CodecGzip)
	if err := h.VerifyCRC(b); err == nil {
		t.Fatal("CRC still matches after the attributes changed")
	}
	if err := Seal(b); err != nil {
		t.Fatal(err)
	}
	if h, err = ParseHeader(b); err != nil || h.Codec() != CodecGzip || h.VerifyCRC(b) != nil {
		t.Fatalf("sealed batch: %+v, %v", h, err)
	}
	if err := Seal(b[:HeaderSize-1]); err == nil {
		t.Fatal("Seal took a batch shorter than its header")
	}

	gaps, err := AppendBatch(nil, 0, 2, []Record{{OffsetDelta: 0}, {OffsetDelta: 2}})
	if err != nil {
		t.Fatal(err)
	}
	var re *Error
	if _, err := ParseHeader(gaps); !errors.As(err, &re) || re.Code != kerr.CorruptMessage.Code {
		t.Fatalf("batch with a gap: %v, want CORRUPT_MESSAGE", err)
	}
}
