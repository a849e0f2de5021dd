package reader

import (
	"fmt"

	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// codecOf is the codec a topic's Fetch answers are compressed with
// (kafka.fetch.compression, resolved by catalogsvc).
func codecOf(m *catalogv1.TopicMapping) (rebuild.Codec, error) {
	switch c := m.GetFetchCompression(); c {
	case catalogv1.FetchCompression_FETCH_COMPRESSION_UNSPECIFIED, catalogv1.FetchCompression_FETCH_COMPRESSION_NONE:
		return rebuild.CodecNone, nil
	case catalogv1.FetchCompression_FETCH_COMPRESSION_GZIP:
		return rebuild.CodecGzip, nil
	case catalogv1.FetchCompression_FETCH_COMPRESSION_LZ4:
		return rebuild.CodecLZ4, nil
	case catalogv1.FetchCompression_FETCH_COMPRESSION_ZSTD:
		return rebuild.CodecZstd, nil
	default:
		return 0, fmt.Errorf("fetch compression %v is not supported", c)
	}
}

// compressors keeps each codec's idle compressors for the next conversion:
// a compressor holds encoder state (zstd's tables, lz4's blocks) that is
// costly to build. A free list rather than a sync.Pool, which every garbage
// collection empties and fetchsvc collects often.
type compressors struct {
	free [rebuild.CodecZstd + 1]chan *rebuild.Compressor
}

// newCompressors keeps up to idle compressors per codec (the conversions
// that run at once).
func newCompressors(idle int) *compressors {
	cs := &compressors{}
	for i := range cs.free {
		cs.free[i] = make(chan *rebuild.Compressor, idle)
	}
	return cs
}

func (cs *compressors) get(codec rebuild.Codec) (*rebuild.Compressor, error) {
	select {
	case c := <-cs.free[codec]:
		return c, nil
	default:
		return rebuild.NewCompressor(codec)
	}
}

func (cs *compressors) put(c *rebuild.Compressor) {
	select {
	case cs.free[c.Codec()] <- c:
	default: // enough idle ones
	}
}
