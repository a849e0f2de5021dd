// Package logbatch builds and reads Fluss log record batches whose records
// are an Arrow record batch, laid out byte for byte as Fluss 0.9.1's Java
// writer (MemoryLogRecordsArrowBuilder + ArrowWriter) lays them out, so that
// Fluss servers and clients accept them unchanged.
//
// What the golden tests (goldentest, against the real Java classes) and the
// real-cluster tests established:
//   - The 0.9.1 client writes magic V0 (48-byte header); V1 (52 bytes, with
//     leader epoch) is accepted by the server too. Both are byte-exact.
//   - With NONE and LZ4_FRAME compression a batch is identical to Java's,
//     metadata flatbuffer and LZ4 frames included. ZSTD frames differ (Java
//     uses libzstd, Go klauspost/compress); everything else, including each
//     buffer's decompressed bytes, is identical.
//   - The leader sets only base offset and commit timestamp, both outside
//     the CRC; a V1 batch keeps the client's leader epoch (-1).
//   - Java's Arrow reader cannot read pre-1970 TIMESTAMP values below
//     millisecond precision (negative remainder rejected), and keeps TIME at
//     milliseconds; maps come back as hash maps (order lost, keys unique).
package logbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Batch header layouts. Every integer is little-endian (Fluss's MemorySegment
// byte order), unlike Kafka's big-endian batches. Fluss 0.9.1 reads magic V0
// and V1 but its Java client still writes V0 (LogRecordBatch
// .CURRENT_LOG_MAGIC_VALUE), so V0 is what byte-exact means here; V1 only
// adds the leader epoch after the commit timestamp.
//
//	V0: BaseOffset int64 | Length int32 | Magic int8 | CommitTimestamp int64 |
//	    CRC uint32 | SchemaId int16 | Attributes int8 | LastOffsetDelta int32 |
//	    WriterID int64 | BatchSequence int32 | RecordCount int32   (48 bytes)
//	V1: as V0 with LeaderEpoch int32 between CommitTimestamp and CRC (52 bytes)
const (
	offBaseOffset      = 0
	offLength          = 8
	offMagic           = 12
	offCommitTimestamp = 13
	// V1 only.
	offLeaderEpoch = 21

	// LogOverhead is the part of the header the Length field does not count.
	LogOverhead = 12

	// MagicV0 is what Fluss 0.9.1's Java client writes.
	MagicV0 byte = 0
	// MagicV1 adds the leader epoch; 0.9.1 servers accept it.
	MagicV1 byte = 1

	// NoWriterID and NoBatchSequence mark a batch of a non-idempotent writer.
	NoWriterID      int64 = -1
	NoBatchSequence int32 = -1
	// NoLeaderEpoch is what clients write into V1; the leader overwrites it.
	NoLeaderEpoch int32 = -1

	attrAppendOnly = 0x01
)

// layout gives the offsets of the fields after the commit timestamp.
type layout struct {
	crc, schemaID, attributes, lastOffsetDelta, writerID, batchSequence, recordCount, headerSize int
}

func layoutOf(magic byte) (layout, error) {
	var base int
	switch magic {
	case MagicV0:
		base = offCommitTimestamp + 8
	case MagicV1:
		base = offLeaderEpoch + 4
	default:
		return layout{}, fmt.Errorf("logbatch: magic %d not supported (want 0 or 1)", magic)
	}
	return layout{
		crc: base, schemaID: base + 4, attributes: base + 6, lastOffsetDelta: base + 7,
		writerID: base + 11, batchSequence: base + 19, recordCount: base + 23, headerSize: base + 27,
	}, nil
}

// HeaderSize returns the header size of a magic, 0 if unknown.
func HeaderSize(magic byte) int {
	l, err := layoutOf(magic)
	if err != nil {
		return 0
	}
	return l.headerSize
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ChangeType is the per-record change kind stored in front of the Arrow body
// of batches that are not append-only (Fluss ChangeType byte values).
type ChangeType byte

const (
	AppendOnly   ChangeType = 0
	Insert       ChangeType = 1
	UpdateBefore ChangeType = 2
	UpdateAfter  ChangeType = 3
	Delete       ChangeType = 4
)

// Header is the decoded batch header.
type Header struct {
	BaseOffset      int64
	Length          int32 // bytes after the Length field
	Magic           byte
	CommitTimestamp int64
	LeaderEpoch     int32 // NoLeaderEpoch for V0
	CRC             uint32
	SchemaID        int16
	AppendOnly      bool
	LastOffsetDelta int32
	WriterID        int64
	BatchSequence   int32
	RecordCount     int32
	// HeaderSize is where the change types (or, append-only, the Arrow
	// message) start.
	HeaderSize int
}

// SizeInBytes is the size of the whole batch, header included.
func (h Header) SizeInBytes() int { return int(h.Length) + LogOverhead }

// ErrShortBatch reports bytes that end inside a batch.
var ErrShortBatch = errors.New("logbatch: truncated batch")

// ParseHeader decodes the header at the start of b and checks that the whole
// batch is present; it does not verify the CRC (see Verify).
func ParseHeader(b []byte) (Header, error) {
	if len(b) < offMagic+1 {
		return Header{}, fmt.Errorf("%w: %d bytes, no magic", ErrShortBatch, len(b))
	}
	l, err := layoutOf(b[offMagic])
	if err != nil {
		return Header{}, err
	}
	if len(b) < l.headerSize {
		return Header{}, fmt.Errorf("%w: %d bytes, header needs %d", ErrShortBatch, len(b), l.headerSize)
	}
	le := binary.LittleEndian
	h := Header{
		BaseOffset:      int64(le.Uint64(b[offBaseOffset:])),
		Length:          int32(le.Uint32(b[offLength:])),
		Magic:           b[offMagic],
		CommitTimestamp: int64(le.Uint64(b[offCommitTimestamp:])),
		LeaderEpoch:     NoLeaderEpoch,
		CRC:             le.Uint32(b[l.crc:]),
		SchemaID:        int16(le.Uint16(b[l.schemaID:])),
		AppendOnly:      b[l.attributes]&attrAppendOnly != 0,
		LastOffsetDelta: int32(le.Uint32(b[l.lastOffsetDelta:])),
		WriterID:        int64(le.Uint64(b[l.writerID:])),
		BatchSequence:   int32(le.Uint32(b[l.batchSequence:])),
		RecordCount:     int32(le.Uint32(b[l.recordCount:])),
		HeaderSize:      l.headerSize,
	}
	if h.Magic == MagicV1 {
		h.LeaderEpoch = int32(le.Uint32(b[offLeaderEpoch:]))
	}
	if int(h.Length) < l.headerSize-LogOverhead {
		return h, fmt.Errorf("logbatch: length field %d below the header size", h.Length)
	}
	if h.SizeInBytes() > len(b) {
		return h, fmt.Errorf("%w: batch of %d bytes, %d present", ErrShortBatch, h.SizeInBytes(), len(b))
	}
	if h.RecordCount < 0 {
		return h, fmt.Errorf("logbatch: negative record count %d", h.RecordCount)
	}
	return h, nil
}

// Verify checks the CRC-32C, which covers everything from the schema id to
// the end of the batch: the fields the server rewrites (base offset, commit
// timestamp, leader epoch) sit before it, so a stored batch keeps its CRC.
func Verify(batch []byte) error {
	h, err := ParseHeader(batch)
	if err != nil {
		return err
	}
	l, _ := layoutOf(h.Magic)
	got := crc32.Checksum(batch[l.schemaID:h.SizeInBytes()], castagnoli)
	if got != h.CRC {
		return fmt.Errorf("logbatch: CRC mismatch: header %#08x, computed %#08x", h.CRC, got)
	}
	return nil
}

// putHeader writes the header into the start of b, a whole batch, and
// computes the CRC over the rest, as the Java builder does.
func putHeader(b []byte, l layout, magic byte, schemaID int16, appendOnly bool, writerID int64, seq int32, records int32) {
	putHeaderOf(b[:l.headerSize], b[l.headerSize:], l, magic, schemaID, appendOnly, writerID, seq, records)
}

// putHeaderOf writes into h, a header, the fields of the batch h followed by
// body, with the CRC over both: the body need not follow the header in
// memory.
func putHeaderOf(h, body []byte, l layout, magic byte, schemaID int16, appendOnly bool, writerID int64, seq int32, records int32) {
	le := binary.LittleEndian
	le.PutUint64(h[offBaseOffset:], 0)
	le.PutUint32(h[offLength:], uint32(len(h)+len(body)-LogOverhead))
	h[offMagic] = magic
	le.PutUint64(h[offCommitTimestamp:], 0)
	if magic == MagicV1 {
		le.PutUint32(h[offLeaderEpoch:], 0xFFFFFFFF) // NoLeaderEpoch
	}
	le.PutUint32(h[l.crc:], 0)
	le.PutUint16(h[l.schemaID:], uint16(schemaID))
	if appendOnly {
		h[l.attributes] = attrAppendOnly
	} else {
		h[l.attributes] = 0
	}
	// An empty batch stores 0, not -1 (DefaultLogRecordBatch's convention).
	last := records - 1
	if records == 0 {
		last = 0
	}
	le.PutUint32(h[l.lastOffsetDelta:], uint32(last))
	le.PutUint64(h[l.writerID:], uint64(writerID))
	le.PutUint32(h[l.batchSequence:], uint32(seq))
	le.PutUint32(h[l.recordCount:], uint32(records))
	crc := crc32.Update(crc32.Checksum(h[l.schemaID:], castagnoli), castagnoli, body)
	le.PutUint32(h[l.crc:], crc)
}
