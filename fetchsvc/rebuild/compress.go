package rebuild

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/ferrygw/ferry/services/recordbatch"
)

// Codec is a Kafka record batch compression codec (attribute bits 0-2).
type Codec int16

// The codecs a Fetch answer can carry. Snappy is left out: Java clients
// expect xerial framing and the others raw snappy, and it is no faster
// here than lz4.
const (
	CodecNone Codec = 0
	CodecGzip Codec = 1
	CodecLZ4  Codec = 3
	CodecZstd Codec = 4
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int16(c))
}

// Compressor writes compressed record batches with one codec. It keeps the
// codec's state and a scratch buffer between batches, so it is not safe for
// concurrent use; pool it.
type Compressor struct {
	codec   Codec
	scratch []byte
	buf     bytes.Buffer // gzip and lz4 write through it
	gz      *gzip.Writer
	lz      *lz4.Writer
	zs      *zstd.Encoder
}

// NewCompressor makes a compressor for codec. CodecNone is allowed: its
// batches are recordbatch.AppendBatch's.
func NewCompressor(codec Codec) (*Compressor, error) {
	c := &Compressor{codec: codec}
	switch codec {
	case CodecNone:
	case CodecGzip:
		// Fastest: the answer is compressed on every read, not once.
		gz, err := gzip.NewWriterLevel(nil, gzip.BestSpeed)
		if err != nil {
			return nil, err
		}
		c.gz = gz
	case CodecLZ4:
		c.lz = lz4.NewWriter(nil)
		// As Kafka's own lz4 writer frames it: 64 KiB blocks (not a
		// 4 MiB default block per writer for batches far smaller) and no
		// content checksum (the batch CRC covers the bytes; 13% of the
		// compression time).
		if err := c.lz.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1), lz4.ChecksumOption(false)); err != nil {
			return nil, err
		}
	case CodecZstd:
		zs, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithWindowSize(1<<20), zstd.WithZeroFrames(true))
		if err != nil {
			return nil, err
		}
		c.zs = zs
	default:
		return nil, fmt.Errorf("rebuild: compression codec %v is not supported", codec)
	}
	return c, nil
}

// Codec is the compressor's codec.
func (c *Compressor) Codec() Codec { return c.codec }

// AppendBatch is recordbatch.AppendBatch with the records section
// compressed by c's codec (attribute bits set, CRC over the compressed
// form, as Kafka's own writers produce it).
func (c *Compressor) AppendBatch(dst []byte, baseOffset int64, lastOffsetDelta int32, recs []Record) ([]byte, error) {
	// A batch without records stays uncompressed, as Kafka leaves its own
	// empty batches: librdkafka 2.0 aborts on an lz4 frame of nothing.
	if c.codec == CodecNone || len(recs) == 0 {
		return recordbatch.AppendBatch(dst, baseOffset, lastOffsetDelta, recs)
	}
	raw, err := recordbatch.AppendBatch(c.scratch[:0], baseOffset, lastOffsetDelta, recs)
	if err != nil {
		return dst, err
	}
	c.scratch = raw
	start := len(dst)
	dst = append(dst, raw[:recordbatch.HeaderSize]...)
	if dst, err = c.compress(dst, raw[recordbatch.HeaderSize:]); err != nil {
		return dst[:start], fmt.Errorf("rebuild: %v: %w", c.codec, err)
	}
	b := dst[start:]
	attrs := binary.BigEndian.Uint16(b[recordbatch.OffsetAttributes:])
	binary.BigEndian.PutUint16(b[recordbatch.OffsetAttributes:], attrs|uint16(c.codec))
	if err := recordbatch.Seal(b); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// compress appends src compressed to dst.
func (c *Compressor) compress(dst, src []byte) ([]byte, error) {
	if c.codec == CodecZstd {
		return c.zs.EncodeAll(src, dst), nil
	}
	// The writers append to buf, which starts as dst's free tail, so that
	// an answer sized for its output is written in place.
	c.buf = *bytes.NewBuffer(dst)
	var err error
	switch c.codec {
	case CodecGzip:
		c.gz.Reset(&c.buf)
		if _, err = c.gz.Write(src); err == nil {
			err = c.gz.Close()
		}
	case CodecLZ4:
		c.lz.Reset(&c.buf)
		if _, err = c.lz.Write(src); err == nil {
			err = c.lz.Close()
		}
	}
	out := c.buf.Bytes()
	c.buf = bytes.Buffer{}
	return out, err
}
