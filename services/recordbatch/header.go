// Package recordbatch owns the layout of a Kafka record batch (magic 2). It
// checks the header of one batch as a producer sends it in a Produce v3+
// request, answering a refusal with the Kafka error code a broker would
// give (frontdoor and transcodesvc both check batches with it, so a batch
// gets the same code from either), and writes the batches fetchsvc answers
// a Fetch with (writer.go).
package recordbatch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// HeaderSize is the fixed part of a record batch, up to and including the
// record count.
const HeaderSize = 61

// Offsets of the header fields within a batch (Kafka's DefaultRecordBatch),
// for code that builds or patches batches.
const (
	OffsetBatchLength     = 8
	OffsetLeaderEpoch     = 12
	OffsetMagic           = 16
	OffsetCRC             = 17
	OffsetAttributes      = 21
	OffsetLastOffsetDelta = 23
	OffsetBaseTimestamp   = 27
	OffsetMaxTimestamp    = 35
	OffsetProducerID      = 43
	OffsetProducerEpoch   = 51
	OffsetBaseSequence    = 53
	OffsetRecordCount     = 57
)

// Attribute bits of a batch.
const (
	AttrCodecMask     = 0x07
	AttrTimestampType = 0x08
	AttrTransactional = 0x10
	AttrControl       = 0x20
)

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
func (h *Header) Codec() Codec { return Codec(h.Attributes & AttrCodecMask) }

// LogAppendTime reports whether the timestamp type bit says log-append time.
func (h *Header) LogAppendTime() bool { return h.Attributes&AttrTimestampType != 0 }

// Transactional reports the transactional attribute bit.
func (h *Header) Transactional() bool { return h.Attributes&AttrTransactional != 0 }

// Control reports the control-batch attribute bit.
func (h *Header) Control() bool { return h.Attributes&AttrControl != 0 }

// Error is a batch refusal that carries the Kafka error code the producer
// will see, so callers never have to guess a code from a message.
type Error struct {
	Code int16
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func refuse(code *kerr.Error, format string, args ...any) *Error {
	return &Error{Code: code.Code, Msg: fmt.Sprintf(format, args...)}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ParseHeader checks what a broker checks of a produced batch before
// looking at its records, except the CRC (VerifyCRC): b holds exactly one
// batch of consistent length, magic 2, not a control batch,
// with a known codec, a record count that matches its last offset delta,
// and usable producer fields. Errors are *Error.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) == 0 {
		return h, refuse(kerr.InvalidRecord, "Produce v3+ needs exactly one record batch per partition; got none")
	}
	if len(b) < HeaderSize {
		return h, refuse(kerr.CorruptMessage, "record batch is %d bytes, shorter than the %d-byte header", len(b), HeaderSize)
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b))
	h.BatchLength = int32(binary.BigEndian.Uint32(b[OffsetBatchLength:]))
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[OffsetLeaderEpoch:]))
	h.Magic = int8(b[OffsetMagic])
	h.CRC = binary.BigEndian.Uint32(b[OffsetCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[OffsetAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[OffsetLastOffsetDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[OffsetBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[OffsetMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[OffsetProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[OffsetProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[OffsetBaseSequence:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[OffsetRecordCount:]))

	// The length counts everything after the length field itself.
	want := int64(h.BatchLength) + OffsetLeaderEpoch
	switch {
	case want > int64(len(b)):
		return h, refuse(kerr.CorruptMessage, "record batch length %d needs %d bytes but only %d were sent (truncated)", h.BatchLength, want, len(b))
	case want < HeaderSize:
		return h, refuse(kerr.CorruptMessage, "record batch length %d is shorter than the header", h.BatchLength)
	case want < int64(len(b)):
		// A sound first batch followed by more bytes is a second batch,
		// which Produce v3+ forbids (Kafka answers INVALID_RECORD); a
		// first batch that does not check out is a corrupt length. Only
		// this refusal pays for a CRC.
		if h.Magic == 2 && crc32.Checksum(b[OffsetAttributes:want], castagnoli) == h.CRC {
			return h, refuse(kerr.InvalidRecord, "more than one record batch for a partition: Produce v3+ allows exactly one")
		}
		return h, refuse(kerr.CorruptMessage, "record batch length %d covers %d of the %d bytes sent and its CRC does not match", h.BatchLength, want, len(b))
	}
	switch {
	case h.Magic != 2:
		return h, refuse(kerr.InvalidRecord, "record batch magic %d is not supported: Produce v3+ needs magic 2 (Kafka 0.11+ clients)", h.Magic)
	case h.Control():
		return h, refuse(kerr.InvalidRecord, "control batches cannot be produced by clients")
	case h.Codec() > CodecZstd:
		return h, refuse(kerr.UnsupportedCompressionType, "record batch compression codec %d is unknown", h.Codec())
	case h.RecordCount < 0:
		return h, refuse(kerr.CorruptMessage, "record batch record count %d is negative", h.RecordCount)
	case h.RecordCount == 0:
		return h, refuse(kerr.CorruptMessage, "record batch has no records")
	case int64(h.LastOffsetDelta) != int64(h.RecordCount)-1:
		return h, refuse(kerr.CorruptMessage, "record batch last offset delta %d does not match record count %d", h.LastOffsetDelta, h.RecordCount)
	case h.ProducerID < -1:
		return h, refuse(kerr.InvalidRecord, "record batch producer id %d is negative but not -1", h.ProducerID)
	case h.ProducerID >= 0 && (h.ProducerEpoch < 0 || h.BaseSequence < 0):
		return h, refuse(kerr.InvalidRecord, "idempotent record batch of producer %d has epoch %d and base sequence %d; both must be non-negative",
			h.ProducerID, h.ProducerEpoch, h.BaseSequence)
	}
	return h, nil
}

// VerifyCRC checks the CRC-32C of b, the batch ParseHeader returned h for.
func (h *Header) VerifyCRC(b []byte) error {
	if got := crc32.Checksum(b[OffsetAttributes:], castagnoli); got != h.CRC {
		return refuse(kerr.CorruptMessage, "record batch CRC mismatch: header says %08x, content gives %08x", h.CRC, got)
	}
	return nil
}
