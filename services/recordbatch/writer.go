package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Record is one record to write. Nil Key or Value is a null one.
type Record struct {
	Key, Value []byte
	// Timestamp is in epoch milliseconds.
	Timestamp int64
	Headers   []RecordHeader
	// OffsetDelta is the record's offset less its batch's base offset.
	OffsetDelta int32
}

// RecordHeader is one record header; a nil Value is a null one.
type RecordHeader struct {
	Key   string
	Value []byte
}

// AppendBatch appends to dst one uncompressed Kafka record batch (magic 2)
// spanning offsets baseOffset to baseOffset+lastOffsetDelta and holding
// recs, each at baseOffset+OffsetDelta (deltas ascending, at most
// lastOffsetDelta): no producer id, no transactional or control flag,
// CreateTime timestamps, CRC-32C over the batch as the protocol defines it.
// Offsets without a record are gaps, as in a compacted Kafka topic; a batch
// without records only moves a consumer past its offsets.
func AppendBatch(dst []byte, baseOffset int64, lastOffsetDelta int32, recs []Record) ([]byte, error) {
	if lastOffsetDelta < 0 || len(recs) > int(lastOffsetDelta)+1 {
		return dst, fmt.Errorf("recordbatch: %d records cannot span %d offsets", len(recs), int64(lastOffsetDelta)+1)
	}
	prev := int32(-1)
	for i := range recs {
		if d := recs[i].OffsetDelta; d <= prev || d > lastOffsetDelta {
			return dst, fmt.Errorf("recordbatch: record %d has offset delta %d after %d (last %d)", i, d, prev, lastOffsetDelta)
		}
		prev = recs[i].OffsetDelta
	}
	base, maxTS := int64(-1), int64(-1)
	if len(recs) > 0 {
		base, maxTS = recs[0].Timestamp, recs[0].Timestamp
		for _, r := range recs[1:] {
			maxTS = max(maxTS, r.Timestamp)
		}
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(baseOffset))
	dst = binary.BigEndian.AppendUint32(dst, 0) // batch length, below
	dst = binary.BigEndian.AppendUint32(dst, 0) // partition leader epoch
	dst = append(dst, 2)                        // magic
	dst = binary.BigEndian.AppendUint32(dst, 0) // CRC, below
	dst = binary.BigEndian.AppendUint16(dst, 0) // attributes
	dst = binary.BigEndian.AppendUint32(dst, uint32(lastOffsetDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(base))
	dst = binary.BigEndian.AppendUint64(dst, uint64(maxTS))
	dst = binary.BigEndian.AppendUint64(dst, math.MaxUint64) // producer id -1
	dst = binary.BigEndian.AppendUint16(dst, math.MaxUint16) // producer epoch -1
	dst = binary.BigEndian.AppendUint32(dst, math.MaxUint32) // base sequence -1
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(recs)))
	// Each record is sized first so that it is written in place after its
	// length (the caller sizes dst for the whole answer).
	for i := range recs {
		dst = binary.AppendVarint(dst, int64(recordBodySize(&recs[i], base)))
		dst = appendRecordBody(dst, &recs[i], base)
	}
	if err := Seal(dst[start:]); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// Seal sets the batch length and CRC-32C of b, one whole batch, after its
// writer filled in the rest (or changed its records or attributes).
func Seal(b []byte) error {
	if len(b) < HeaderSize {
		return fmt.Errorf("recordbatch: %d bytes are not a batch", len(b))
	}
	if len(b) > math.MaxInt32 {
		return errors.New("recordbatch: record batch too large")
	}
	binary.BigEndian.PutUint32(b[OffsetBatchLength:], uint32(len(b)-OffsetLeaderEpoch))
	binary.BigEndian.PutUint32(b[OffsetCRC:], crc32.Checksum(b[OffsetAttributes:], castagnoli))
	return nil
}

// appendRecordBody is one record after its length: attributes, timestamp
// and offset deltas, key, value, headers, with Kafka's zig-zag varints and
// -1 lengths for null.
func appendRecordBody(dst []byte, r *Record, baseTS int64) []byte {
	dst = append(dst, 0) // attributes
	dst = binary.AppendVarint(dst, r.Timestamp-baseTS)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendNullableBytes(dst, r.Key)
	dst = appendNullableBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendNullableBytes(dst, h.Value)
	}
	return dst
}

// recordBodySize is the length appendRecordBody writes.
func recordBodySize(r *Record, baseTS int64) int {
	n := 1 + varintSize(r.Timestamp-baseTS) + varintSize(int64(r.OffsetDelta)) +
		nullableSize(r.Key) + nullableSize(r.Value) + varintSize(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintSize(int64(len(h.Key))) + len(h.Key) + nullableSize(h.Value)
	}
	return n
}

func nullableSize(b []byte) int {
	if b == nil {
		return 1 // -1
	}
	return varintSize(int64(len(b))) + len(b)
}

// varintSize is the length of v as a zig-zag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func appendNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}
