// Package kafkabatch validates and decodes one Kafka record batch (magic 2)
// as a producer sends it in a Produce request: header checks, CRC-32C,
// decompression with a size bound, and the varint-encoded records, which
// are returned as slices into the decoder's buffers rather than copies.
package kafkabatch

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
)

// HeaderSize is the fixed part of a record batch, up to and including the
// record count.
const HeaderSize = 61

// Offsets of the header fields within a batch (see Kafka's DefaultRecordBatch).
const (
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57
)

// Attribute bits of a batch.
const (
	attrCodecMask     = 0x07
	attrTimestampType = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// minRecordSize is the smallest possible encoded record: a one-byte length
// varint and six one-byte fields (attributes, timestamp delta, offset delta,
// key length, value length, header count). It bounds how many records a
// buffer can hold before anything is allocated for them.
const minRecordSize = 7

// Codec is the compression of a batch's records (attribute bits 0-2).
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return "codec(" + strconv.Itoa(int(c)) + ")"
}

// Header is the fixed part of a record batch.
type Header struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Codec returns the batch's compression codec.
func (h *Header) Codec() Codec { return Codec(h.Attributes & attrCodecMask) }

// LogAppendTime reports whether the timestamp type bit says log-append time.
func (h *Header) LogAppendTime() bool { return h.Attributes&attrTimestampType != 0 }

// Transactional reports the transactional attribute bit.
func (h *Header) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports the control-batch attribute bit.
func (h *Header) Control() bool { return h.Attributes&attrControl != 0 }

// RecordHeader is one Kafka record header. Key is never nil; Value is nil for
// a null header value.
type RecordHeader struct {
	Key   []byte
	Value []byte
}

// Record is one decoded record. Key and Value are nil when null. All slices
// point into the Decoder's buffers (or the input batch) and stay valid only
// until the next Decode.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []RecordHeader
}

// Timestamp is the record's absolute timestamp in epoch milliseconds.
func (b *Batch) Timestamp(r *Record) int64 { return b.Header.BaseTimestamp + r.TimestampDelta }

// Batch is a decoded record batch.
type Batch struct {
	Header  Header
	Records []Record
	// RawSize is the size of the record section after decompression.
	RawSize int
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ParseHeader checks the framing of one record batch (length, magic, CRC,
// attributes) and returns its header. b must hold exactly one batch.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, corrupt("record batch is %d bytes, shorter than the %d-byte header", len(b), HeaderSize)
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b))
	h.BatchLength = int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
	h.Magic = int8(b[offMagic])
	h.CRC = binary.BigEndian.Uint32(b[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[offRecordCount:]))

	// The length counts everything after the length field itself.
	want := int64(h.BatchLength) + offLeaderEpoch
	if want > int64(len(b)) {
		return h, corrupt("record batch length %d needs %d bytes but only %d were sent (truncated)", h.BatchLength, want, len(b))
	}
	if want < HeaderSize {
		return h, corrupt("record batch length %d is shorter than the header", h.BatchLength)
	}
	if want < int64(len(b)) {
		// A sound first batch followed by more bytes is a second batch,
		// which Produce v3+ forbids (Kafka answers INVALID_RECORD); a
		// first batch that does not check out is a corrupt length.
		if h.Magic == 2 && crc32.Checksum(b[offAttributes:want], castagnoli) == h.CRC {
			return h, &Error{Code: CodeInvalidRecord, Msg: "more than one record batch for a partition: Produce v3+ allows exactly one"}
		}
		return h, corrupt("record batch length %d covers %d of the %d bytes sent and its CRC does not match", h.BatchLength, want, len(b))
	}
	if h.Magic != 2 {
		return h, &Error{Code: CodeInvalidRecord, Msg: "record batch magic " + strconv.Itoa(int(h.Magic)) + " is not supported: only magic 2 (Kafka 0.11+ clients)"}
	}
	if got := crc32.Checksum(b[offAttributes:], castagnoli); got != h.CRC {
		return h, corrupt("record batch CRC mismatch: header says %08x, content gives %08x", h.CRC, got)
	}
	if h.Control() {
		return h, &Error{Code: CodeInvalidRecord, Msg: "control batches cannot be produced by clients"}
	}
	if h.Transactional() {
		return h, &Error{Code: CodeInvalidRecord, Msg: "transactional batches are not supported by Ferry"}
	}
	if h.Codec() > CodecZstd {
		return h, &Error{Code: CodeUnsupportedCompressionType, Msg: "record batch compression codec " + strconv.Itoa(int(h.Codec())) + " is unknown"}
	}
	if h.RecordCount < 0 {
		return h, corrupt("record batch record count %d is negative", h.RecordCount)
	}
	if h.RecordCount == 0 {
		return h, corrupt("record batch has no records")
	}
	if int64(h.LastOffsetDelta) != int64(h.RecordCount)-1 {
		return h, corrupt("record batch last offset delta %d does not match record count %d", h.LastOffsetDelta, h.RecordCount)
	}
	return h, nil
}
