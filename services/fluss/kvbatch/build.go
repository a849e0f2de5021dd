// Package kvbatch builds and reads Fluss KV record batches
// (DefaultKvRecordBatch, magic 0): the records of a PutKv request to a
// primary-key table, laid out byte for byte as Fluss 0.9.1's Java client
// (KvWriteBatch over KvRecordBatchBuilder) lays them out. Every integer is
// little-endian, as in log batches.
//
//	batch  = Length int32 (bytes after it) | Magic int8 (0) | CRC uint32 |
//	         SchemaId int16 | Attributes int8 (0) | WriterID int64 |
//	         BatchSequence int32 | RecordCount int32 | records  (28-byte header)
//	record = Length int32 (bytes after it) | KeyLength uvarint | Key | Row
//
// The CRC is CRC-32C over everything from SchemaId to the end. A record's
// key is the table's physical primary key encoded by bucketing.KeyEncoder
// (CompactedKeyEncoder); its row is the whole row in the table's KV format
// (compacted.RowEncoder for table.kv.format=compacted), or nothing at all
// for a delete of that key.
package kvbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ferrygw/ferry/services/fluss/compacted"
)

// Header layout.
const (
	offLength        = 0
	offMagic         = 4
	offCRC           = 5
	offSchemaID      = 9
	offAttributes    = 11
	offWriterID      = 12
	offBatchSequence = 20
	offRecordCount   = 24
	// HeaderSize is the size of a batch without records.
	HeaderSize = 28

	// MagicV0 is the only KV batch magic Fluss 0.9.1 has.
	MagicV0 byte = 0

	// NoWriterID and NoBatchSequence mark a batch of a non-idempotent writer.
	NoWriterID      int64 = -1
	NoBatchSequence int32 = -1

	// lengthSize is the Length field of batches and records, which does
	// not count itself.
	lengthSize = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Options are the header fields a writer chooses.
type Options struct {
	SchemaID int16
	// WriterID and BatchSequence identify an idempotent writer's batch;
	// NoWriterID / NoBatchSequence otherwise.
	WriterID      int64
	BatchSequence int32
}

// DefaultOptions is a non-idempotent batch for a schema.
func DefaultOptions(schemaID int16) Options {
	return Options{SchemaID: schemaID, WriterID: NoWriterID, BatchSequence: NoBatchSequence}
}

// Validate names the first bad field.
func (o Options) Validate() error {
	switch {
	case o.SchemaID < 0:
		return fmt.Errorf("kvbatch: Options.SchemaID %d is negative", o.SchemaID)
	case o.WriterID < NoWriterID:
		return fmt.Errorf("kvbatch: Options.WriterID %d is below -1", o.WriterID)
	case o.BatchSequence < NoBatchSequence:
		return fmt.Errorf("kvbatch: Options.BatchSequence %d is below -1", o.BatchSequence)
	case (o.WriterID == NoWriterID) != (o.BatchSequence == NoBatchSequence):
		return fmt.Errorf("kvbatch: Options.WriterID %d and BatchSequence %d: set both or neither", o.WriterID, o.BatchSequence)
	}
	return nil
}

// Builder collects the records of one batch. Its memory is reused after
// Reset. It is not safe for concurrent use.
type Builder struct {
	buf     []byte
	records int32
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	b := &Builder{}
	b.Reset()
	return b
}

// Reset empties the builder, keeping its memory. Batches returned by Build
// are overwritten by later appends.
func (b *Builder) Reset() {
	b.buf = append(b.buf[:0], make([]byte, HeaderSize)...)
	b.records = 0
}

// Size is the size the batch would have if built now, for batch-size limits.
func (b *Builder) Size() int { return len(b.buf) }

// Records is the number of records appended since Reset.
func (b *Builder) Records() int { return int(b.records) }

// Append adds a record with a pre-encoded row; a nil row deletes the key.
func (b *Builder) Append(key, row []byte) error {
	if row != nil && len(row) == 0 {
		// On the wire it would read as a delete.
		return errors.New("kvbatch: empty row (a row has at least its null bitmap; nil deletes)")
	}
	start, err := b.startRecord(key)
	if err != nil {
		return err
	}
	b.buf = append(b.buf, row...)
	return b.endRecord(start)
}

// AppendRow adds an upsert of row of rec, encoding the row in place with
// rows.
func (b *Builder) AppendRow(key []byte, rows *compacted.RowEncoder, rec arrow.RecordBatch, row int) error {
	start, err := b.startRecord(key)
	if err != nil {
		return err
	}
	if b.buf, err = rows.Append(b.buf, rec, row); err != nil {
		b.buf = b.buf[:start]
		return fmt.Errorf("kvbatch: %w", err)
	}
	return b.endRecord(start)
}

// AppendDelete adds a delete of key.
func (b *Builder) AppendDelete(key []byte) error { return b.Append(key, nil) }

func (b *Builder) startRecord(key []byte) (int, error) {
	if len(b.buf) < HeaderSize {
		b.Reset() // the zero Builder
	}
	if len(key) == 0 {
		return 0, errors.New("kvbatch: empty key")
	}
	if b.records == math.MaxInt32-1 {
		// Java refuses to reach MaxInt32 records.
		return 0, fmt.Errorf("kvbatch: a batch holds fewer than %d records", math.MaxInt32)
	}
	start := len(b.buf)
	b.buf = append(b.buf, 0, 0, 0, 0)
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)))
	b.buf = append(b.buf, key...)
	return start, nil
}

func (b *Builder) endRecord(start int) error {
	n := len(b.buf) - start - lengthSize
	if n > math.MaxInt32 || len(b.buf)-lengthSize > math.MaxInt32 {
		b.buf = b.buf[:start]
		return errors.New("kvbatch: batch would exceed 2 GiB")
	}
	binary.LittleEndian.PutUint32(b.buf[start:], uint32(n))
	b.records++
	return nil
}

// Build writes the header and returns the batch. The slice aliases the
// builder's memory: it stays valid until the next Reset or append, and
// Build may be called again (e.g. with another writer id after a retry).
func (b *Builder) Build(opts Options) ([]byte, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if len(b.buf) < HeaderSize {
		b.Reset()
	}
	h := b.buf
	writeHeader(h, b.records, opts)
	return h, nil
}

// RecordBytes returns the records appended so far without a header, as a
// service that converts rows hands them to the one that writes batches
// (transcode.RoutedPiece.kv_records). It aliases the builder's memory.
func (b *Builder) RecordBytes() []byte {
	if len(b.buf) < HeaderSize {
		return nil
	}
	return b.buf[HeaderSize:]
}

// Frame appends to dst a whole batch: a header for opts and count, then
// records, which must be count records as RecordBytes returns them.
func Frame(dst, records []byte, count int32, opts Options) ([]byte, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if count < 0 {
		return nil, fmt.Errorf("kvbatch: negative record count %d", count)
	}
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	dst = append(dst, records...)
	writeHeader(dst[start:], count, opts)
	return dst, nil
}

// writeHeader fills the header of batch h, whose records follow it.
func writeHeader(h []byte, count int32, opts Options) {
	binary.LittleEndian.PutUint32(h[offLength:], uint32(len(h)-lengthSize))
	h[offMagic] = MagicV0
	binary.LittleEndian.PutUint16(h[offSchemaID:], uint16(opts.SchemaID))
	h[offAttributes] = 0
	binary.LittleEndian.PutUint64(h[offWriterID:], uint64(opts.WriterID))
	binary.LittleEndian.PutUint32(h[offBatchSequence:], uint32(opts.BatchSequence))
	binary.LittleEndian.PutUint32(h[offRecordCount:], uint32(count))
	binary.LittleEndian.PutUint32(h[offCRC:], crc32.Checksum(h[offSchemaID:], castagnoli))
}
