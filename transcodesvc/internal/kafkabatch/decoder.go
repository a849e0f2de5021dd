package kafkabatch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"

	"github.com/ferrygw/ferry/services/recordbatch"
)

// DefaultMaxDecompressed bounds the decompressed record section when the
// caller does not choose a bound: far above Kafka's default 1 MiB
// message.max.bytes, far below what would hurt a 2-core instance.
const DefaultMaxDecompressed = 64 << 20

// Decoder decodes record batches. It keeps its buffers and decompressors
// between calls, so one Decoder must not be used concurrently; pool them.
type Decoder struct {
	maxDecompressed int

	buf     []byte // decompressed records, reused
	batch   Batch
	records []Record
	headers []RecordHeader
	spans   []headerSpan

	dc decompressors
}

// headerSpan remembers where a record's headers sit in Decoder.headers while
// that slice may still grow and move.
type headerSpan struct{ start, end int }

// NewDecoder returns a Decoder that refuses batches whose records
// decompress to more than maxDecompressed bytes (DefaultMaxDecompressed
// when maxDecompressed <= 0).
func NewDecoder(maxDecompressed int) *Decoder {
	if maxDecompressed <= 0 {
		maxDecompressed = DefaultMaxDecompressed
	}
	return &Decoder{maxDecompressed: maxDecompressed}
}

// Decode validates b, which must hold exactly one record batch, and decodes
// its records. The returned Batch and every slice in it are valid until the
// next call to Decode; for an uncompressed batch they point into b itself.
// Errors are *recordbatch.Error with the Kafka code to answer with.
func (d *Decoder) Decode(b []byte) (*Batch, error) {
	h, err := recordbatch.ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if err := h.VerifyCRC(b); err != nil {
		return nil, err
	}
	data := b[recordbatch.HeaderSize:]
	if c := h.Codec(); c != recordbatch.CodecNone {
		out, err := d.dc.decompress(c, data, d.buf[:0], d.maxDecompressed)
		if out != nil {
			d.buf = out[:0]
		}
		if err != nil {
			var e *recordbatch.Error
			if errors.As(err, &e) {
				return nil, e
			}
			return nil, corrupt("record batch does not decompress with %s: %v", c, err)
		}
		data = out
	}
	if err := d.decodeRecords(&h, data); err != nil {
		return nil, err
	}
	d.batch = Batch{Header: h, Records: d.records, RawSize: len(data)}
	return &d.batch, nil
}

func (d *Decoder) decodeRecords(h *Header, data []byte) error {
	n := int(h.RecordCount)
	// The count is checked against what the bytes could possibly hold before
	// any slice is sized from it.
	if n > len(data)/minRecordSize {
		return corrupt("record batch claims %d records but its %d bytes of records can hold at most %d", n, len(data), len(data)/minRecordSize)
	}
	if cap(d.records) < n {
		d.records = make([]Record, n)
		d.spans = make([]headerSpan, n)
	}
	d.records = d.records[:n]
	d.spans = d.spans[:n]
	d.headers = d.headers[:0]

	pos := 0
	for i := 0; i < n; i++ {
		if pos >= len(data) {
			return corrupt("record batch claims %d records but holds only %d", n, i)
		}
		length, m := binary.Varint(data[pos:])
		if m <= 0 {
			return corrupt("record %d: bad length varint", i)
		}
		pos += m
		if length < 0 {
			return corrupt("record %d: length %d is negative", i, length)
		}
		if length > int64(len(data)-pos) {
			return corrupt("record %d: length %d exceeds the %d bytes left in the batch", i, length, len(data)-pos)
		}
		body := data[pos : pos+int(length)]
		pos += int(length)
		if err := d.decodeRecord(i, body); err != nil {
			return err
		}
	}
	if pos != len(data) {
		return corrupt("record batch has %d bytes after its %d records", len(data)-pos, n)
	}
	for i := range d.records {
		s := d.spans[i]
		if s.start == s.end {
			d.records[i].Headers = nil
		} else {
			d.records[i].Headers = d.headers[s.start:s.end:s.end]
		}
	}
	return nil
}

// reader walks one record's bytes; every read is bounded by the record.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) varlong(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, m := binary.Varint(r.b[r.pos:])
	if m <= 0 {
		r.err = fmt.Errorf("bad %s varint", what)
		return 0
	}
	r.pos += m
	return v
}

func (r *reader) varint(what string) int32 {
	v := r.varlong(what)
	if r.err == nil && (v < -1<<31 || v > 1<<31-1) {
		r.err = fmt.Errorf("%s %d does not fit in 32 bits", what, v)
		return 0
	}
	return int32(v)
}

// bytes reads a length-prefixed field; length -1 means null (nil). what
// names the field in errors; it is a constant at every call so that the hot
// path builds no strings.
func (r *reader) bytes(what string, nullable bool) []byte {
	n := r.varint(what)
	if r.err != nil {
		return nil
	}
	if n == -1 && nullable {
		return nil
	}
	if n < 0 {
		r.err = fmt.Errorf("%s %d is negative", what, n)
		return nil
	}
	if int(n) > len(r.b)-r.pos {
		r.err = fmt.Errorf("%s %d exceeds the %d bytes left in the record", what, n, len(r.b)-r.pos)
		return nil
	}
	v := r.b[r.pos : r.pos+int(n) : r.pos+int(n)]
	r.pos += int(n)
	return v
}

func (d *Decoder) decodeRecord(i int, body []byte) error {
	if len(body) < minRecordSize-1 {
		return corrupt("record %d: %d bytes is too short for a record", i, len(body))
	}
	rec := &d.records[i]
	r := reader{b: body}
	rec.Attributes = int8(body[0])
	r.pos = 1
	rec.TimestampDelta = r.varlong("timestamp delta")
	rec.OffsetDelta = r.varint("offset delta")
	rec.Key = r.bytes("key length", true)
	rec.Value = r.bytes("value length", true)
	count := r.varint("header count")
	if r.err == nil {
		// Each header needs at least two length bytes.
		if count < 0 || int(count) > (len(body)-r.pos)/2 {
			r.err = fmt.Errorf("header count %d does not fit in the %d bytes left", count, len(body)-r.pos)
		}
	}
	start := len(d.headers)
	for j := 0; r.err == nil && j < int(count); j++ {
		k := r.bytes("header key length", false)
		v := r.bytes("header value length", true)
		if r.err == nil {
			d.headers = append(d.headers, RecordHeader{Key: k, Value: v})
		}
	}
	if r.err != nil {
		return corrupt("record %d: %v", i, r.err)
	}
	if r.pos != len(body) {
		return corrupt("record %d: %d bytes left over after its last field", i, len(body)-r.pos)
	}
	if rec.OffsetDelta != int32(i) {
		return corrupt("record %d has offset delta %d: deltas must run 0..%d in order", i, rec.OffsetDelta, len(d.records)-1)
	}
	d.spans[i] = headerSpan{start: start, end: len(d.headers)}
	return nil
}

// zstdDecoderOptions builds the options of a decoder that refuses frames
// decoding to more than limit bytes.
func zstdDecoderOptions(limit int) []zstd.DOption {
	opts := []zstd.DOption{zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit))}
	if limit >= zstd.MinWindowSize {
		opts = append(opts, zstd.WithDecoderMaxWindow(uint64(limit)))
	}
	return opts
}
