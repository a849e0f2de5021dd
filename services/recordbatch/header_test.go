package recordbatch

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// batch builds a sound batch header over records (any bytes: ParseHeader
// does not read them) with count records, then lets edit change it. The
// CRC is computed after edit.
func batch(count int32, records []byte, edit func(b []byte)) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[OffsetBatchLength:], uint32(len(b)-OffsetLeaderEpoch))
	binary.BigEndian.PutUint32(b[OffsetLeaderEpoch:], 0xffffffff)
	b[OffsetMagic] = 2
	binary.BigEndian.PutUint32(b[OffsetLastOffsetDelta:], uint32(count-1))
	binary.BigEndian.PutUint64(b[OffsetBaseTimestamp:], 1767323045678)
	binary.BigEndian.PutUint64(b[OffsetMaxTimestamp:], 1767323045678)
	binary.BigEndian.PutUint64(b[OffsetProducerID:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[OffsetProducerEpoch:], 0xffff)
	binary.BigEndian.PutUint32(b[OffsetBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[OffsetRecordCount:], uint32(count))
	if edit != nil {
		edit(b)
	}
	binary.BigEndian.PutUint32(b[OffsetCRC:], crc32.Checksum(b[OffsetAttributes:], castagnoli))
	return b
}

func idempotent(pid int64, epoch int16, seq int32) func([]byte) {
	return func(b []byte) {
		binary.BigEndian.PutUint64(b[OffsetProducerID:], uint64(pid))
		binary.BigEndian.PutUint16(b[OffsetProducerEpoch:], uint16(epoch))
		binary.BigEndian.PutUint32(b[OffsetBaseSequence:], uint32(seq))
	}
}

func attrs(a int16) func([]byte) {
	return func(b []byte) { binary.BigEndian.PutUint16(b[OffsetAttributes:], uint16(a)) }
}

func TestParseHeaderAccepts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    []byte
		codec Codec
		pid   int64
	}{
		{"plain", batch(3, []byte("records"), nil), CodecNone, -1},
		{"zstd", batch(1, []byte("x"), attrs(int16(CodecZstd))), CodecZstd, -1},
		{"log append time", batch(1, []byte("x"), attrs(AttrTimestampType|int16(CodecLZ4))), CodecLZ4, -1},
		{"idempotent", batch(2, []byte("xy"), idempotent(42, 0, 7)), CodecNone, 42},
		// Whether a transactional batch belongs in its request is
		// frontdoor's decision (the request's transactional id).
		{"transactional", batch(2, []byte("xy"), func(b []byte) { idempotent(42, 0, 7)(b); attrs(AttrTransactional)(b) }), CodecNone, 42},
	} {
		h, err := ParseHeader(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if h.Codec() != tc.codec || h.ProducerID != tc.pid || int(h.BatchLength)+OffsetLeaderEpoch != len(tc.in) || h.Magic != 2 {
			t.Fatalf("%s: header %+v", tc.name, h)
		}
		if err := h.VerifyCRC(tc.in); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
}

func TestParseHeaderRefuses(t *testing.T) {
	good := batch(2, []byte("records"), nil)
	mutate := func(edit func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		edit(b)
		return b
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want *kerr.Error
		msg  string
	}{
		{"empty", nil, kerr.InvalidRecord, "got none"},
		{"shorter than the header", good[:40], kerr.CorruptMessage, "shorter than"},
		{"truncated", good[:len(good)-1], kerr.CorruptMessage, "truncated"},
		{"trailing byte", append(append([]byte(nil), good...), 0), kerr.InvalidRecord, "more than one record batch"},
		{"two batches", append(append([]byte(nil), good...), good...), kerr.InvalidRecord, "exactly one"},
		{"length too short, CRC off", mutate(func(b []byte) {
			binary.BigEndian.PutUint32(b[OffsetBatchLength:], uint32(len(b)-OffsetLeaderEpoch-2))
		}), kerr.CorruptMessage, "CRC does not match"},
		{"length below header", mutate(func(b []byte) { binary.BigEndian.PutUint32(b[OffsetBatchLength:], 3) }), kerr.CorruptMessage, "shorter than the header"},
		{"magic 1", batch(2, []byte("records"), func(b []byte) { b[OffsetMagic] = 1 }), kerr.InvalidRecord, "magic 1"},
		{"control", batch(1, []byte("x"), attrs(AttrControl|AttrTransactional)), kerr.InvalidRecord, "control"},
		{"codec 5", batch(1, []byte("x"), attrs(5)), kerr.UnsupportedCompressionType, "codec 5"},
		{"codec 7", batch(1, []byte("x"), attrs(7)), kerr.UnsupportedCompressionType, "codec 7"},
		{"negative count", batch(-2, []byte("x"), nil), kerr.CorruptMessage, "negative"},
		{"no records", batch(0, nil, nil), kerr.CorruptMessage, "no records"},
		{"delta does not match count", batch(3, []byte("x"), func(b []byte) { binary.BigEndian.PutUint32(b[OffsetLastOffsetDelta:], 5) }),
			kerr.CorruptMessage, "last offset delta 5"},
		{"producer id below -1", batch(1, []byte("x"), idempotent(-5, 0, 0)), kerr.InvalidRecord, "producer id -5"},
		{"idempotent, negative epoch", batch(1, []byte("x"), idempotent(42, -1, 0)), kerr.InvalidRecord, "epoch -1"},
		{"idempotent, negative sequence", batch(1, []byte("x"), idempotent(42, 0, -1)), kerr.InvalidRecord, "base sequence -1"},
	} {
		_, err := ParseHeader(tc.in)
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.want.Code || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s: %v, want %v mentioning %q", tc.name, err, tc.want, tc.msg)
		}
	}
}

func TestVerifyCRC(t *testing.T) {
	b := batch(2, []byte("records"), nil)
	b[len(b)-1] ^= 1
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := h.VerifyCRC(b); !errors.As(err, &e) || e.Code != kerr.CorruptMessage.Code || !strings.Contains(e.Msg, "CRC mismatch") {
		t.Fatalf("flipped record byte: %v, want CORRUPT_MESSAGE naming the CRC", err)
	}
}

// FuzzParseHeader: any bytes are either refused with a Kafka code or
// accepted as exactly one batch whose header agrees with the bytes.
func FuzzParseHeader(f *testing.F) {
	f.Add(batch(2, []byte("records"), nil))
	f.Add(batch(1, []byte("x"), idempotent(42, 0, 7)))
	f.Add(batch(1, []byte("x"), attrs(AttrTransactional)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || kerr.ErrorForCode(e.Code) == nil || e.Msg == "" {
				t.Fatalf("refusal %v carries no Kafka code", err)
			}
			return
		}
		if int64(h.BatchLength)+OffsetLeaderEpoch != int64(len(b)) || h.Magic != 2 || h.RecordCount <= 0 || h.Control() {
			t.Fatalf("accepted header %+v for %d bytes", h, len(b))
		}
		_ = h.VerifyCRC(b)
	})
}
