package kafkabatch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pierrec/lz4/v4"
)

// LZ4 frame format fields (lz4 Frame_format.md) used by lz4Frames.
const (
	lz4Magic         = 0x184D2204
	lz4SkippableMask = 0xFFFFFFF0
	lz4Skippable     = 0x184D2A50
	lz4FlagVersion   = 0xC0 // must read 01
	lz4FlagIndep     = 0x20
	lz4FlagBlockSum  = 0x10
	lz4FlagSize      = 0x08
	lz4FlagSum       = 0x04
	lz4FlagDict      = 0x01
	lz4Raw           = 0x80000000
	lz4Window        = 64 << 10
)

var errLZ4Short = errors.New("lz4: frame ends early")

// lz4Frames appends the decompressed content of the LZ4 frames in src to
// dst, decoding each block straight into dst. Checksums (header, block,
// content) are not verified: the record batch CRC already covers these
// bytes and was checked. Linked blocks (librdkafka's default) use the
// output before them as their dictionary. More than limit bytes of output
// fail with tooLarge.
func lz4Frames(src, dst []byte, limit int) ([]byte, error) {
	for len(src) > 0 {
		if len(src) < 4 {
			return dst, errLZ4Short
		}
		magic := binary.LittleEndian.Uint32(src)
		if magic&lz4SkippableMask == lz4Skippable {
			if len(src) < 8 {
				return dst, errLZ4Short
			}
			n := uint64(binary.LittleEndian.Uint32(src[4:]))
			if n > uint64(len(src)-8) {
				return dst, errLZ4Short
			}
			src = src[8+n:]
			continue
		}
		if magic != lz4Magic {
			return dst, fmt.Errorf("lz4: bad frame magic %#08x", magic)
		}
		var err error
		if dst, src, err = lz4Frame(src[4:], dst, limit); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// lz4Frame decodes one frame after its magic and returns what follows it.
func lz4Frame(src, dst []byte, limit int) ([]byte, []byte, error) {
	if len(src) < 3 {
		return dst, src, errLZ4Short
	}
	flg, bd := src[0], src[1]
	if flg&lz4FlagVersion != 0x40 {
		return dst, src, fmt.Errorf("lz4: frame version bits %#02x", flg&lz4FlagVersion)
	}
	if flg&lz4FlagDict != 0 {
		return dst, src, errors.New("lz4: frames with a dictionary id are not supported")
	}
	blockMax := 0
	switch (bd >> 4) & 7 {
	case 4:
		blockMax = 64 << 10
	case 5:
		blockMax = 256 << 10
	case 6:
		blockMax = 1 << 20
	case 7:
		blockMax = 4 << 20
	default:
		return dst, src, fmt.Errorf("lz4: block size code %d", (bd>>4)&7)
	}
	header := 3 // FLG, BD, header checksum
	if flg&lz4FlagSize != 0 {
		header += 8
	}
	if len(src) < header {
		return dst, src, errLZ4Short
	}
	src = src[header:]
	start := len(dst)
	for {
		if len(src) < 4 {
			return dst, src, errLZ4Short
		}
		size := binary.LittleEndian.Uint32(src)
		src = src[4:]
		if size == 0 {
			break
		}
		n := int(size &^ lz4Raw)
		if n > len(src) || n > blockMax {
			return dst, src, fmt.Errorf("lz4: block of %d bytes (%d left, blocks up to %d)", n, len(src), blockMax)
		}
		block := src[:n]
		src = src[n:]
		if flg&lz4FlagBlockSum != 0 {
			if len(src) < 4 {
				return dst, src, errLZ4Short
			}
			src = src[4:]
		}
		room := min(blockMax, limit-len(dst))
		if size&lz4Raw != 0 {
			if n > room {
				return dst, src, tooLarge(limit)
			}
			dst = append(dst, block...)
			continue
		}
		if room <= 0 {
			return dst, src, tooLarge(limit)
		}
		if cap(dst)-len(dst) < room {
			// Doubling: a batch of many blocks is not copied once per block.
			dst = append(make([]byte, 0, max(2*cap(dst), len(dst)+room)), dst...)
		}
		out := dst[len(dst) : len(dst)+room]
		var (
			got int
			err error
		)
		if flg&lz4FlagIndep != 0 {
			got, err = lz4.UncompressBlock(block, out)
		} else {
			got, err = lz4.UncompressBlockWithDict(block, out, dst[max(start, len(dst)-lz4Window):])
		}
		if err != nil {
			if room < blockMax {
				// The block may only have needed more than the bound left.
				return dst, src, tooLarge(limit)
			}
			return dst, src, fmt.Errorf("lz4: %w", err)
		}
		dst = dst[:len(dst)+got]
	}
	if flg&lz4FlagSum != 0 {
		if len(src) < 4 {
			return dst, src, errLZ4Short
		}
		src = src[4:]
	}
	return dst, src, nil
}
