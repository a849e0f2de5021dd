package logbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
)

// Batch is one log record batch inside a byte slice (no copy).
type Batch struct {
	Header
	// Bytes is the whole batch, header included.
	Bytes []byte
	// ChangeTypes has one entry per record unless the batch is append-only.
	ChangeTypes []byte
	// Arrow is the Arrow IPC record batch message; empty without records.
	Arrow []byte
}

// Iterator walks the batches of concatenated log records, e.g. the records
// of a FetchLog answer.
type Iterator struct {
	rest  []byte
	batch Batch
	err   error
}

// NewIterator iterates over b.
func NewIterator(b []byte) *Iterator { return &Iterator{rest: b} }

// Next advances to the next batch; false at the end or on an error.
func (it *Iterator) Next() bool {
	if it.err != nil || len(it.rest) == 0 {
		return false
	}
	b, err := SplitBatch(it.rest)
	if err != nil {
		it.err = err
		return false
	}
	it.batch = b
	it.rest = it.rest[len(b.Bytes):]
	return true
}

// Batch is the current batch.
func (it *Iterator) Batch() Batch { return it.batch }

// Err is the error that stopped the iteration: a corrupt batch, or
// ErrShortBatch when the bytes end inside one.
func (it *Iterator) Err() error { return it.err }

// SplitBatch takes the first batch of b, checking its header and CRC.
func SplitBatch(b []byte) (Batch, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Batch{}, err
	}
	raw := b[:h.SizeInBytes()]
	if err := Verify(raw); err != nil {
		return Batch{}, err
	}
	out := Batch{Header: h, Bytes: raw}
	rest := raw[h.HeaderSize:]
	if !h.AppendOnly {
		if len(rest) < int(h.RecordCount) {
			return Batch{}, fmt.Errorf("logbatch: %d change types for %d records", len(rest), h.RecordCount)
		}
		out.ChangeTypes, rest = rest[:h.RecordCount], rest[h.RecordCount:]
	}
	out.Arrow = rest
	if h.RecordCount == 0 && len(rest) != 0 {
		return Batch{}, fmt.Errorf("logbatch: empty batch carries %d bytes of records", len(rest))
	}
	if h.RecordCount > 0 && len(rest) == 0 {
		return Batch{}, fmt.Errorf("logbatch: batch of %d records has no Arrow data", h.RecordCount)
	}
	return out, nil
}

// Message is the parsed Arrow IPC record batch message of a batch.
type Message struct {
	Length  int64
	Nodes   []FieldNode
	Buffers []BufferSpec
	// Compressed tells whether buffers carry BodyCompression framing, and
	// with which codec (CompressionLZ4Frame or CompressionZSTD).
	Compression Compression
	Metadata    []byte // the flatbuffer
	Body        []byte
}

// FieldNode is an Arrow field node: value count and null count.
type FieldNode struct{ Length, NullCount int64 }

// BufferSpec locates one buffer in the body.
type BufferSpec struct{ Offset, Length int64 }

// ParseMessage reads the record batch message Fluss writes after the header:
// continuation marker, metadata length, Message flatbuffer, body.
func ParseMessage(b []byte) (Message, error) {
	if len(b) < 8 {
		return Message{}, errors.New("logbatch: Arrow message shorter than its prefix")
	}
	le := binary.LittleEndian
	pos := 0
	if le.Uint32(b) == 0xFFFFFFFF {
		pos = 4
	}
	metaLen := int(int32(le.Uint32(b[pos:])))
	pos += 4
	if metaLen <= 0 || pos+metaLen > len(b) {
		return Message{}, fmt.Errorf("logbatch: Arrow metadata length %d does not fit %d bytes", metaLen, len(b))
	}
	meta := b[pos : pos+metaLen]
	body := b[pos+metaLen:]
	m, err := parseMeta(meta)
	if err != nil {
		return Message{}, err
	}
	bodyLen := m.bodyLength
	if bodyLen > int64(len(body)) {
		return Message{}, fmt.Errorf("logbatch: Arrow body of %d bytes, %d present", bodyLen, len(body))
	}
	if bodyLen < 0 {
		return Message{}, fmt.Errorf("logbatch: negative Arrow body length %d", bodyLen)
	}
	m.Body = body[:bodyLen]
	for i, s := range m.Buffers {
		if s.Offset < 0 || s.Length < 0 || s.Offset > bodyLen || s.Length > bodyLen-s.Offset { // no overflow
			return Message{}, fmt.Errorf("logbatch: buffer %d [%d,+%d) outside the %d-byte body", i, s.Offset, s.Length, bodyLen)
		}
	}
	return m.Message, nil
}

type parsedMeta struct {
	Message
	bodyLength int64
}

func parseMeta(meta []byte) (m parsedMeta, err error) {
	defer func() {
		// Offsets read from a corrupt flatbuffer can point anywhere.
		if r := recover(); r != nil {
			err = fmt.Errorf("logbatch: corrupt Arrow metadata: %v", r)
		}
	}()
	msg := flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
	if ht := msg.GetByteSlot(slotVT(msgSlotHeaderType), 0); ht != headerRecordBatch {
		return m, fmt.Errorf("logbatch: Arrow message type %d is not a record batch", ht)
	}
	m.bodyLength = msg.GetInt64Slot(slotVT(msgSlotBodyLength), 0)
	o := flatbuffers.UOffsetT(msg.Offset(slotVT(msgSlotHeader)))
	if o == 0 {
		return m, errors.New("logbatch: Arrow message without header")
	}
	rb := flatbuffers.Table{Bytes: meta, Pos: msg.Indirect(o + msg.Pos)}
	m.Length = rb.GetInt64Slot(slotVT(rbSlotLength), 0)
	if o := flatbuffers.UOffsetT(rb.Offset(slotVT(rbSlotNodes))); o != 0 {
		start, n := rb.Vector(o), rb.VectorLen(o)
		for i := 0; i < n; i++ {
			p := start + flatbuffers.UOffsetT(16*i)
			m.Nodes = append(m.Nodes, FieldNode{
				Length:    flatbuffers.GetInt64(meta[p:]),
				NullCount: flatbuffers.GetInt64(meta[p+8:]),
			})
		}
	}
	if o := flatbuffers.UOffsetT(rb.Offset(slotVT(rbSlotBuffers))); o != 0 {
		start, n := rb.Vector(o), rb.VectorLen(o)
		for i := 0; i < n; i++ {
			p := start + flatbuffers.UOffsetT(16*i)
			m.Buffers = append(m.Buffers, BufferSpec{
				Offset: flatbuffers.GetInt64(meta[p:]),
				Length: flatbuffers.GetInt64(meta[p+8:]),
			})
		}
	}
	if o := flatbuffers.UOffsetT(rb.Offset(slotVT(rbSlotCompression))); o != 0 {
		bc := flatbuffers.Table{Bytes: meta, Pos: rb.Indirect(o + rb.Pos)}
		switch codec := bc.GetInt8Slot(slotVT(bcSlotCodec), 0); codec {
		case codecLZ4Frame:
			m.Compression = CompressionLZ4Frame
		case codecZSTD:
			m.Compression = CompressionZSTD
		default:
			return m, fmt.Errorf("logbatch: Arrow body codec %d unknown", codec)
		}
	}
	m.Metadata = meta
	return m, nil
}

func slotVT(slot int) flatbuffers.VOffsetT { return flatbuffers.VOffsetT(4 + 2*slot) }

// DefaultMaxDecodedBytes bounds what one batch may decompress to.
const DefaultMaxDecodedBytes = 256 << 20

// Decoder turns batches of one table schema into Arrow records. Fluss
// batches carry no Arrow schema message, so the decoder supplies one.
type Decoder struct {
	// MaxDecodedBytes bounds the sizes a batch declares (decompressed
	// buffers, value counts): a corrupt or hostile length prefix must fail
	// the batch, not allocate gigabytes.
	MaxDecodedBytes int64

	schema    *arrow.Schema
	schemaMsg []byte
	// nodes and buffers are the counts a record batch of schema carries;
	// arrow-go indexes both vectors without bounds checks, so a batch
	// declaring fewer would make it read lengths out of unrelated bytes.
	nodes, buffers int
	mem            memory.Allocator
	buf            bytes.Buffer
}

// NewDecoder returns a decoder for batches written with schema (the Arrow
// form of the table's columns, see types.ArrowSchema).
func NewDecoder(schema *arrow.Schema, mem memory.Allocator) (*Decoder, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	var b bytes.Buffer
	w := ipc.NewWriter(&b, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("logbatch: schema message: %w", err)
	}
	// Close wrote schema + end-of-stream marker; keep only the schema.
	msg := b.Bytes()
	if len(msg) < 8 {
		return nil, errors.New("logbatch: arrow-go wrote no schema message")
	}
	d := &Decoder{MaxDecodedBytes: DefaultMaxDecodedBytes, schema: schema, schemaMsg: bytes.Clone(msg[:len(msg)-8]), mem: mem}
	for _, f := range schema.Fields() {
		d.countLayout(f.Type)
	}
	return d, nil
}

// countLayout adds the field nodes and buffers the IPC format writes for a
// column of type dt, children included.
func (d *Decoder) countLayout(dt arrow.DataType) {
	d.nodes++
	if dt.ID() != arrow.NULL { // a null column has no buffers in IPC
		d.buffers += len(dt.Layout().Buffers)
	}
	if n, ok := dt.(arrow.NestedType); ok {
		for _, f := range n.Fields() {
			d.countLayout(f.Type)
		}
	}
}

// Decode returns the rows of b as a record the caller must Release.
func (d *Decoder) Decode(b Batch) (arrow.RecordBatch, error) {
	if b.RecordCount == 0 {
		return emptyRecord(d.schema, d.mem), nil
	}
	if err := d.checkSizes(b); err != nil {
		return nil, err
	}
	d.buf.Reset()
	d.buf.Write(d.schemaMsg)
	d.buf.Write(b.Arrow)
	d.buf.Write([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0})
	r, err := ipc.NewReader(bytes.NewReader(d.buf.Bytes()), ipc.WithSchema(d.schema), ipc.WithAllocator(d.mem))
	if err != nil {
		return nil, fmt.Errorf("logbatch: Arrow reader: %w", err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("logbatch: Arrow record batch: %w", err)
		}
		return nil, errors.New("logbatch: batch holds no Arrow record batch")
	}
	rec := r.RecordBatch()
	if rec.NumRows() != int64(b.RecordCount) {
		return nil, fmt.Errorf("logbatch: header counts %d records, Arrow %d", b.RecordCount, rec.NumRows())
	}
	rec.Retain()
	return rec, nil
}

// checkSizes rejects declared sizes beyond MaxDecodedBytes before arrow-go
// allocates for them.
func (d *Decoder) checkSizes(b Batch) error {
	m, err := ParseMessage(b.Arrow)
	if err != nil {
		return err
	}
	if m.Length != int64(b.RecordCount) {
		return fmt.Errorf("logbatch: header counts %d records, Arrow message %d", b.RecordCount, m.Length)
	}
	if len(m.Nodes) != d.nodes || len(m.Buffers) != d.buffers {
		return fmt.Errorf("logbatch: Arrow message has %d field nodes and %d buffers, the table's schema %d and %d", len(m.Nodes), len(m.Buffers), d.nodes, d.buffers)
	}
	limit := d.MaxDecodedBytes
	var total int64
	for i, n := range m.Nodes {
		if n.Length < 0 || n.NullCount < 0 || n.NullCount > n.Length || n.Length > limit {
			return fmt.Errorf("logbatch: Arrow field node %d declares %d values, %d null", i, n.Length, n.NullCount)
		}
	}
	for i, s := range m.Buffers {
		size := s.Length
		if m.Compression != CompressionNone && s.Length > 0 {
			// A compressed buffer starts with its decoded length, which
			// arrow-go reads even past a shorter buffer's end.
			if s.Length < 8 {
				return fmt.Errorf("logbatch: compressed Arrow buffer %d of %d bytes has no length prefix", i, s.Length)
			}
			if n := int64(binary.LittleEndian.Uint64(m.Body[s.Offset:])); n != -1 {
				size = n
			}
		}
		if size < 0 || size > limit-total {
			return fmt.Errorf("logbatch: Arrow buffer %d declares %d bytes; the batch may decode to at most %d", i, size, limit)
		}
		total += size
	}
	return nil
}

func emptyRecord(schema *arrow.Schema, mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	return b.NewRecordBatch()
}
