package logbatch

import (
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// LZ4 frame as Fluss's FlussLZ4BlockOutputStream writes it: magic, FLG
// (version 1, independent blocks, no checksums, no content size), BD (64 KiB
// blocks), header checksum, blocks (high bit of the size = stored raw), end
// mark. FLG/BD never change, so the header checksum (second byte of
// xxh32(FLG BD)) is a constant.
var lz4FrameHeader = []byte{0x04, 0x22, 0x4D, 0x18, 0x60, 0x40, 0x82}

const (
	lz4BlockMax     = 64 << 10
	lz4Incompressed = 0x80000000
)

type codecs struct {
	lz4  lz4.CompressorCCompat
	zstd map[int]*zstd.Encoder
	// ones keeps the compressed form of buffers that are all 0xFF but for
	// their last byte: the validity bitmap of a column without nulls (and
	// the values of an all-true BOOLEAN column). Every batch has one per
	// such column and a codec's output depends only on its input, so the
	// frame is made once per length instead of once per batch.
	ones map[onesKey][]byte
}

type onesKey struct {
	comp  Compression
	level int
	n     int
	last  byte
}

// Bounds of the ones cache: bitmaps of up to 64Ki rows, a few hundred
// batch sizes (it is emptied when full).
const (
	onesMaxLen     = 8 << 10
	onesMaxEntries = 512
)

// allOnesButLast reports whether every byte of b but the last is 0xFF.
func allOnesButLast(b []byte) bool {
	b = b[:len(b)-1]
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != ^uint64(0) {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0xFF {
			return false
		}
	}
	return true
}

// compress returns one body buffer compressed the way Arrow Java's
// AbstractCompressionCodec does: 8-byte little-endian uncompressed length
// then the codec's output; an empty buffer is just a zero length; when the
// compressed form is larger the raw bytes follow a length of -1.
func (c *codecs) compress(mem *slab, raw []byte, opts Options) ([]byte, error) {
	if len(raw) == 0 {
		return mem.alloc(8), nil
	}
	if len(raw) > onesMaxLen || !allOnesButLast(raw) {
		return c.compressAny(mem, raw, opts)
	}
	key := onesKey{opts.Compression, opts.ZSTDLevel, len(raw), raw[len(raw)-1]}
	if out, ok := c.ones[key]; ok {
		b := mem.allocUncleared(len(out))
		copy(b, out)
		return b, nil
	}
	out, err := c.compressAny(mem, raw, opts)
	if err != nil {
		return nil, err
	}
	if c.ones == nil || len(c.ones) >= onesMaxEntries {
		c.ones = map[onesKey][]byte{}
	}
	c.ones[key] = append([]byte(nil), out...)
	return out, nil
}

// compressAny is compress without the cache.
func (c *codecs) compressAny(mem *slab, raw []byte, opts Options) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch opts.Compression {
	case CompressionLZ4Frame:
		out = c.lz4Frame(mem, raw)
	case CompressionZSTD:
		out, err = c.zstdFrame(mem, raw, opts.ZSTDLevel)
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("compression %s unsupported", opts.Compression)
	}
	if len(out)-8 > len(raw) {
		out = mem.allocUncleared(8 + len(raw))
		binary.LittleEndian.PutUint64(out, ^uint64(0))
		copy(out[8:], raw)
		return out, nil
	}
	binary.LittleEndian.PutUint64(out, uint64(len(raw)))
	return out, nil
}

func (c *codecs) lz4Frame(mem *slab, raw []byte) []byte {
	// The bound follows the actual block sizes: most buffers of a batch are
	// far smaller than one 64 KiB block. Every byte of out[:pos] is written
	// below, so the memory needs no clearing.
	full, last := len(raw)/lz4BlockMax, len(raw)%lz4BlockMax
	bound := 8 + len(lz4FrameHeader) + full*(4+lz4.CompressBlockBound(lz4BlockMax)) + 4
	if last > 0 {
		bound += 4 + lz4.CompressBlockBound(last)
	}
	out := mem.allocUncleared(bound)
	pos := 8
	pos += copy(out[pos:], lz4FrameHeader)
	for len(raw) > 0 {
		blk := raw[:min(len(raw), lz4BlockMax)]
		raw = raw[len(blk):]
		// Compressed straight into place after the block's size field.
		dst := out[pos+4 : pos+4+lz4.CompressBlockBound(len(blk))]
		n, err := c.lz4.CompressBlock(blk, dst)
		// Same rule as the Java stream: a block that does not shrink is stored.
		if err != nil || n == 0 || n >= len(blk) {
			binary.LittleEndian.PutUint32(out[pos:], uint32(len(blk))|lz4Incompressed)
			pos += 4
			pos += copy(out[pos:], blk)
			continue
		}
		binary.LittleEndian.PutUint32(out[pos:], uint32(n))
		pos += 4 + n
	}
	binary.LittleEndian.PutUint32(out[pos:], 0)
	pos += 4
	return out[:pos]
}

func (c *codecs) zstdFrame(mem *slab, raw []byte, level int) ([]byte, error) {
	if level == 0 {
		level = DefaultZSTDLevel
	}
	enc := c.zstd[level]
	if enc == nil {
		var err error
		enc, err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderCRC(false),
			zstd.WithZeroFrames(true))
		if err != nil {
			return nil, err
		}
		if c.zstd == nil {
			c.zstd = map[int]*zstd.Encoder{}
		}
		c.zstd[level] = enc
	}
	bound := 8 + len(raw) + len(raw)/8 + 64
	out := mem.allocUncleared(bound)
	// EncodeAll appends after the length prefix; should it outgrow the
	// bound it reallocates, which is correct, only slower.
	return enc.EncodeAll(raw, out[:8]), nil
}
