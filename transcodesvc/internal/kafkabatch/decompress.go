package kafkabatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/services/recordbatch"
)

// xerialMagic starts snappy data framed the way the Java client's
// snappy-java SnappyOutputStream writes it: magic, version, compatible
// version, then length-prefixed raw snappy blocks. librdkafka and franz-go
// write one raw snappy block instead; both must be read.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// decompressors keeps one decoder per codec so that their internal state
// (windows, tables) is reused from batch to batch.
type decompressors struct {
	gz      *gzip.Reader
	zs      *zstd.Decoder
	zsLimit int
	src     bytes.Reader
}

func tooLarge(limit int) *recordbatch.Error {
	return corrupt("record batch decompresses to more than %d bytes", limit)
}

// decompress appends the decompressed form of src to dst. The returned slice
// is the (possibly grown) buffer, also on error, so it can be reused.
func (d *decompressors) decompress(c recordbatch.Codec, src, dst []byte, limit int) ([]byte, error) {
	switch c {
	case recordbatch.CodecGzip:
		d.src.Reset(src)
		if d.gz == nil {
			gz, err := gzip.NewReader(&d.src)
			if err != nil {
				return dst, err
			}
			d.gz = gz
		} else if err := d.gz.Reset(&d.src); err != nil {
			return dst, err
		}
		return readBounded(d.gz, dst, limit)
	case recordbatch.CodecSnappy:
		if len(src) >= xerialHeaderSize && bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
			return snappyXerial(src[xerialHeaderSize:], dst, limit)
		}
		return snappyBlock(src, dst, limit)
	case recordbatch.CodecLZ4:
		return lz4Frames(src, dst, limit)
	case recordbatch.CodecZstd:
		if d.zs == nil || d.zsLimit != limit {
			zs, err := zstd.NewReader(nil, zstdDecoderOptions(limit)...)
			if err != nil {
				return dst, err
			}
			if d.zs != nil {
				d.zs.Close()
			}
			d.zs, d.zsLimit = zs, limit
		}
		out, err := d.zs.DecodeAll(src, dst)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) || len(out) > limit {
			return out, tooLarge(limit)
		}
		return out, err
	}
	return dst, &recordbatch.Error{Code: kerr.UnsupportedCompressionType.Code, Msg: fmt.Sprintf("record batch compression %s is not supported", c)}
}

// readBounded reads r to its end into dst, failing once more than limit
// bytes came out: a small batch must not be able to inflate without bound.
func readBounded(r io.Reader, dst []byte, limit int) ([]byte, error) {
	if cap(dst) == 0 {
		dst = make([]byte, 0, 64<<10)
	}
	for {
		if len(dst) == cap(dst) {
			if len(dst) > limit {
				return dst, tooLarge(limit)
			}
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst, tooLarge(limit)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

func snappyBlock(src, dst []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return dst, err
	}
	if n > limit-len(dst) {
		return dst, tooLarge(limit)
	}
	dst = grow(dst, n)
	out, err := snappy.Decode(dst[len(dst):len(dst)+n], src)
	if err != nil {
		return dst, err
	}
	return dst[:len(dst)+len(out)], nil
}

func snappyXerial(src, dst []byte, limit int) ([]byte, error) {
	for len(src) > 0 {
		if len(src) < 4 {
			return dst, fmt.Errorf("xerial snappy: %d stray bytes where a chunk length belongs", len(src))
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return dst, fmt.Errorf("xerial snappy: chunk of %d bytes but %d remain", n, len(src))
		}
		var err error
		if dst, err = snappyBlock(src[:n], dst, limit); err != nil {
			return dst, err
		}
		src = src[n:]
	}
	return dst, nil
}

// grow makes room for n more bytes after len(dst).
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	out := make([]byte, len(dst), len(dst)+n)
	copy(out, dst)
	return out
}
