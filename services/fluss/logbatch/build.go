package logbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	flatbuffers "github.com/google/flatbuffers/go"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// Compression is the Arrow body compression of a log table
// (table.log.arrow.compression.type).
type Compression uint8

const (
	CompressionNone Compression = iota
	CompressionLZ4Frame
	CompressionZSTD
)

func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "NONE"
	case CompressionLZ4Frame:
		return "LZ4_FRAME"
	case CompressionZSTD:
		return "ZSTD"
	}
	return fmt.Sprintf("Compression(%d)", uint8(c))
}

// DefaultZSTDLevel is Fluss's default table.log.arrow.compression.zstd.level.
const DefaultZSTDLevel = 3

// Options describe one batch. The zero value is not valid: use
// DefaultOptions or set WriterID/BatchSequence to -1 explicitly.
type Options struct {
	// Magic is the batch format: MagicV0 (what the 0.9.1 Java client
	// writes, the zero value) or MagicV1.
	Magic       byte
	SchemaID    int16
	Compression Compression
	// ZSTDLevel is 1..22 for ZSTD; 0 means DefaultZSTDLevel. Ignored otherwise.
	ZSTDLevel int
	// WriterID and BatchSequence identify an idempotent writer's batch;
	// NoWriterID / NoBatchSequence otherwise.
	WriterID      int64
	BatchSequence int32
	// AppendOnly marks a batch of APPEND_ONLY records (log tables). When
	// false, ChangeTypes gives one change type per row.
	AppendOnly  bool
	ChangeTypes []ChangeType
}

// DefaultOptions is an append-only, uncompressed, non-idempotent batch.
func DefaultOptions(schemaID int16) Options {
	return Options{SchemaID: schemaID, WriterID: NoWriterID, BatchSequence: NoBatchSequence, AppendOnly: true}
}

// Validate names the first bad field.
func (o Options) Validate() error {
	if _, err := layoutOf(o.Magic); err != nil {
		return fmt.Errorf("logbatch: Options.Magic: %w", err)
	}
	if o.SchemaID < 0 {
		return fmt.Errorf("logbatch: Options.SchemaID %d is negative", o.SchemaID)
	}
	switch o.Compression {
	case CompressionNone, CompressionLZ4Frame:
	case CompressionZSTD:
		if o.ZSTDLevel != 0 && (o.ZSTDLevel < 1 || o.ZSTDLevel > 22) {
			return fmt.Errorf("logbatch: Options.ZSTDLevel %d outside 1..22", o.ZSTDLevel)
		}
	default:
		return fmt.Errorf("logbatch: Options.Compression %d unknown", o.Compression)
	}
	if o.WriterID < NoWriterID {
		return fmt.Errorf("logbatch: Options.WriterID %d is below -1", o.WriterID)
	}
	if o.BatchSequence < NoBatchSequence {
		return fmt.Errorf("logbatch: Options.BatchSequence %d is below -1", o.BatchSequence)
	}
	if o.AppendOnly && o.ChangeTypes != nil {
		return errors.New("logbatch: Options.ChangeTypes set on an append-only batch")
	}
	return nil
}

// Builder builds batches, reusing its scratch memory, compressors and
// metadata builder between calls. It is not safe for concurrent use.
type Builder struct {
	body    bodyEncoder
	out     [][]byte // buffers as they go into the body (compressed or not)
	outMem  slab
	fb      *flatbuffers.Builder
	codecs  codecs
	layouts []int64
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{fb: flatbuffers.NewBuilder(1024)}
}

var builders = sync.Pool{New: func() any { return NewBuilder() }}

// Build returns one complete log record batch holding every row of rec.
func Build(rec arrow.RecordBatch, opts Options) ([]byte, error) {
	b := builders.Get().(*Builder)
	defer builders.Put(b)
	return b.Append(nil, rec, opts)
}

// Append appends one complete log record batch holding every row of rec to
// dst and returns the extended slice. The layout is that of Fluss 0.9.1's
// MemoryLogRecordsArrowBuilder: header, change types (unless append-only),
// then the Arrow IPC record batch message (no schema message, no
// end-of-stream marker). Base offset and commit timestamp are 0 and the
// leader epoch is -1: the leader assigns them. A batch without rows is the
// bare header, as the Java builder writes it.
func (b *Builder) Append(dst []byte, rec arrow.RecordBatch, opts Options) ([]byte, error) {
	if err := opts.Validate(); err != nil {
		return dst, err
	}
	rows := rec.NumRows()
	if rows > 1<<31-1 {
		return dst, fmt.Errorf("logbatch: %d rows exceed a batch's int32 record count", rows)
	}
	if !opts.AppendOnly && len(opts.ChangeTypes) != int(rows) {
		return dst, fmt.Errorf("logbatch: Options.ChangeTypes has %d entries for %d rows", len(opts.ChangeTypes), rows)
	}
	l, _ := layoutOf(opts.Magic)
	start := len(dst)
	dst = append(dst, make([]byte, l.headerSize)...)
	if !opts.AppendOnly {
		for _, c := range opts.ChangeTypes {
			if c > Delete {
				return dst[:start], fmt.Errorf("logbatch: change type %d unknown", c)
			}
			dst = append(dst, byte(c))
		}
	}
	if rows > 0 {
		var err error
		if dst, err = b.appendArrow(dst, rec, opts); err != nil {
			return dst[:start], err
		}
	}
	return seal(dst, start, l, opts, int32(rows))
}

// AppendRecords appends the records section of an append-only batch holding
// every row of rec (the Arrow IPC record batch message, compressed per
// opts) to dst. It is the part of Append that depends on the rows; Frame
// adds the header, which carries what only the writer knows (writer id,
// batch sequence). Only Compression and ZSTDLevel of opts are used.
func (b *Builder) AppendRecords(dst []byte, rec arrow.RecordBatch, opts Options) ([]byte, error) {
	if rec.NumRows() == 0 || rec.NumRows() > 1<<31-1 {
		return dst, fmt.Errorf("logbatch: a records section holds 1..2^31-1 rows, not %d", rec.NumRows())
	}
	return b.appendArrow(dst, rec, opts)
}

// Frame appends one complete append-only batch to dst: the header for opts
// and rows, then records, a records section from AppendRecords (copied).
// The result is byte for byte what Append gives for the same rows and
// options. Frame checks only what the header needs; CheckRecords checks the
// records against a table's columns.
func Frame(dst, records []byte, rows int32, opts Options) ([]byte, error) {
	dst, err := AppendHeader(dst, records, rows, opts)
	if err != nil {
		return dst, err
	}
	return append(dst, records...), nil
}

// AppendHeader appends to dst the header Frame would put in front of records,
// without copying them: the batch is the header followed by records, which
// a writer can send as two pieces (a records section is tens of KiB, a
// header 48 or 52 bytes).
func AppendHeader(dst, records []byte, rows int32, opts Options) ([]byte, error) {
	if err := opts.Validate(); err != nil {
		return dst, err
	}
	if !opts.AppendOnly {
		return dst, errors.New("logbatch: only append-only batches are framed")
	}
	if rows <= 0 || len(records) == 0 {
		return dst, fmt.Errorf("logbatch: a framed batch needs rows (%d) and records (%d bytes)", rows, len(records))
	}
	l, _ := layoutOf(opts.Magic)
	if l.headerSize+len(records) > 1<<31-1 {
		return dst, fmt.Errorf("logbatch: batch of %d bytes exceeds the int32 length field", l.headerSize+len(records))
	}
	start := len(dst)
	dst = append(dst, make([]byte, l.headerSize)...)
	putHeaderOf(dst[start:], records, l, opts.Magic, opts.SchemaID, opts.AppendOnly, opts.WriterID, opts.BatchSequence, rows)
	return dst, nil
}

// seal writes the header of the batch that starts at dst[start].
func seal(dst []byte, start int, l layout, opts Options, rows int32) ([]byte, error) {
	batch := dst[start:]
	if len(batch) > 1<<31-1 {
		return dst[:start], fmt.Errorf("logbatch: batch of %d bytes exceeds the int32 length field", len(batch))
	}
	putHeader(batch, l, opts.Magic, opts.SchemaID, opts.AppendOnly, opts.WriterID, opts.BatchSequence, rows)
	return dst, nil
}

func (b *Builder) appendArrow(dst []byte, rec arrow.RecordBatch, opts Options) ([]byte, error) {
	b.body.reset()
	if err := b.body.encodeRecord(rec); err != nil {
		return dst, fmt.Errorf("logbatch: %w", err)
	}
	// Compress each buffer on its own, as Arrow's BodyCompression (BUFFER
	// method) prescribes; Java does the same in VectorUnloader.
	b.out = b.out[:0]
	b.outMem.reset()
	for _, raw := range b.body.bufs {
		if opts.Compression == CompressionNone {
			b.out = append(b.out, raw)
			continue
		}
		c, err := b.codecs.compress(&b.outMem, raw, opts)
		if err != nil {
			return dst, fmt.Errorf("logbatch: %s: %w", opts.Compression, err)
		}
		b.out = append(b.out, c)
	}
	// Buffer offsets advance by the unpadded size rounded up to 8.
	b.layouts = b.layouts[:0]
	var bodyLen int64
	for _, buf := range b.out {
		b.layouts = append(b.layouts, bodyLen)
		bodyLen = align8(bodyLen + int64(len(buf)))
	}
	meta := b.recordBatchMessage(rec.NumRows(), bodyLen, opts.Compression)
	// Message framing: continuation marker, metadata length padded so that
	// prefix + metadata is a multiple of 8, metadata, zero padding.
	metaLen := len(meta)
	if r := (metaLen + 8) % 8; r != 0 {
		metaLen += 8 - r
	}
	// The size is known now: one allocation instead of growing dst piece
	// by piece (callers often pass nil).
	dst = slices.Grow(dst, 8+metaLen+int(bodyLen))
	dst = binary.LittleEndian.AppendUint32(dst, 0xFFFFFFFF)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(metaLen))
	dst = append(dst, meta...)
	dst = appendZeros(dst, metaLen-len(meta))
	bodyStart := len(dst)
	for i, buf := range b.out {
		dst = appendZeros(dst, bodyStart+int(b.layouts[i])-len(dst))
		dst = append(dst, buf...)
	}
	dst = appendZeros(dst, bodyStart+int(bodyLen)-len(dst))
	return dst, nil
}

func align8(n int64) int64 { return (n + 7) &^ 7 }

func appendZeros(dst []byte, n int) []byte {
	if n <= 0 {
		return dst
	}
	dst = append(dst, make([]byte, n)...)
	return dst
}

// Arrow flatbuffer schema (Message.fbs / Schema.fbs) slot numbers and enum
// values used by the RecordBatch message.
const (
	msgSlotVersion    = 0
	msgSlotHeaderType = 1
	msgSlotHeader     = 2
	msgSlotBodyLength = 3
	msgNumFields      = 5

	rbSlotLength      = 0
	rbSlotNodes       = 1
	rbSlotBuffers     = 2
	rbSlotCompression = 3
	rbNumFields       = 5

	bcSlotCodec  = 0
	bcSlotMethod = 1
	bcNumFields  = 2

	headerRecordBatch = 3
	metadataV5        = 4
	codecLZ4Frame     = 0
	codecZSTD         = 1
	methodBuffer      = 0
)

// recordBatchMessage serializes the Message flatbuffer in the same call
// order as Arrow Java's ArrowRecordBatch.writeTo and
// MessageSerializer.serializeMessage; flatbuffers builders are the same
// algorithm in Go and Java, so the same calls give the same bytes.
func (b *Builder) recordBatchMessage(length, bodyLen int64, c Compression) []byte {
	fb := b.fb
	fb.Reset()
	nodes := b.body.nodes
	fb.StartVector(16, len(nodes), 8)
	for i := len(nodes) - 1; i >= 0; i-- {
		fb.Prep(8, 16)
		fb.PlaceInt64(nodes[i].nulls)
		fb.PlaceInt64(nodes[i].length)
	}
	nodesOff := fb.EndVector(len(nodes))
	fb.StartVector(16, len(b.out), 8)
	for i := len(b.out) - 1; i >= 0; i-- {
		fb.Prep(8, 16)
		fb.PlaceInt64(int64(len(b.out[i])))
		fb.PlaceInt64(b.layouts[i])
	}
	buffersOff := fb.EndVector(len(b.out))
	var compOff flatbuffers.UOffsetT
	if c != CompressionNone {
		codec := int8(codecLZ4Frame)
		if c == CompressionZSTD {
			codec = codecZSTD
		}
		// Generated createBodyCompression adds method before codec.
		fb.StartObject(bcNumFields)
		fb.PrependInt8Slot(bcSlotMethod, methodBuffer, 0)
		fb.PrependInt8Slot(bcSlotCodec, codec, 0)
		compOff = fb.EndObject()
	}
	fb.StartObject(rbNumFields)
	fb.PrependInt64Slot(rbSlotLength, length, 0)
	fb.PrependUOffsetTSlot(rbSlotNodes, nodesOff, 0)
	fb.PrependUOffsetTSlot(rbSlotBuffers, buffersOff, 0)
	if c != CompressionNone {
		fb.PrependUOffsetTSlot(rbSlotCompression, compOff, 0)
	}
	rb := fb.EndObject()

	fb.StartObject(msgNumFields)
	fb.PrependByteSlot(msgSlotHeaderType, headerRecordBatch, 0)
	fb.PrependUOffsetTSlot(msgSlotHeader, rb, 0)
	fb.PrependInt16Slot(msgSlotVersion, metadataV5, 0)
	fb.PrependInt64Slot(msgSlotBodyLength, bodyLen, 0)
	fb.Finish(fb.EndObject())
	return fb.FinishedBytes()
}

// CompressionOf is the log batch compression of a table whose Ferry catalog
// mapping says c; false for a value this build does not know. Unspecified
// means the table sets nothing: Fluss's default, ZSTD.
func CompressionOf(c catalogv1.ArrowCompression) (Compression, bool) {
	switch c {
	case catalogv1.ArrowCompression_ARROW_COMPRESSION_UNSPECIFIED, catalogv1.ArrowCompression_ARROW_COMPRESSION_ZSTD:
		return CompressionZSTD, true
	case catalogv1.ArrowCompression_ARROW_COMPRESSION_NONE:
		return CompressionNone, true
	case catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME:
		return CompressionLZ4Frame, true
	}
	return 0, false
}
