package reader

import (
	"fmt"
	"sync"

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

// compressors pools one codec's compressors: each holds encoder state
// worth keeping between conversions.
type compressors struct {
	pools [rebuild.CodecZstd + 1]sync.Pool
}

func (cs *compressors) get(codec rebuild.Codec) (*rebuild.Compressor, error) {
	if c, ok := cs.pools[codec].Get().(*rebuild.Compressor); ok {
		return c, nil
	}
	return rebuild.NewCompressor(codec)
}

func (cs *compressors) put(c *rebuild.Compressor) { cs.pools[c.Codec()].Put(c) }
