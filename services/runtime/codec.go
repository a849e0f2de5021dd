package runtime

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the fallback codec
	"google.golang.org/grpc/mem"
)

// vtMessage is what protoc-gen-go-vtproto generates for every message of
// proto/ (buf.gen.yaml): marshalling and sizing without reflection, and an
// unmarshal whose bytes and string fields point into its input.
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVT(dst []byte) (int, error)
	UnmarshalVTUnsafe(src []byte) error
}

// codec is the gRPC codec of every internal connection (NewServer, Dial).
// Its wire format is protobuf, as gRPC's own codec; it differs in cost.
// gRPC's codec unmarshals from a pooled copy of the frames and copies every
// bytes field once more; a job's records (tens of KiB) were copied twice
// on every hop, and the copies' allocations fed the GC. This codec copies
// the frames once into a buffer that the message then owns, and its bytes
// fields alias that buffer.
//
// Aliased strings skip proto3's UTF-8 check. Internal peers are
// authenticated by mutual TLS and built from the same protos, so a string
// that is not UTF-8 is a bug at the sender, not an attack on this process.
//
// Messages without the generated methods (health, reflection) go through
// gRPC's proto codec unchanged.
type codec struct{}

// protoCodec is gRPC's own proto codec, for messages codec does not know.
var protoCodec = encoding.GetCodecV2("proto")

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMessage)
	if !ok {
		return protoCodec.Marshal(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
			return nil, fmt.Errorf("marshal %T: %w", v, err)
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBufferVT((*buf)[:size]); err != nil {
		pool.Put(buf)
		return nil, fmt.Errorf("marshal %T: %w", v, err)
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtMessage)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	// Materialize allocates: the message keeps the buffer after gRPC frees
	// data's pooled frames.
	return m.UnmarshalVTUnsafe(data.Materialize())
}
