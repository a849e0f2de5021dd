package schemas

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// maxMessageIndexes bounds the message-index array of a framed Protobuf
// value; nesting deeper than that is not a real schema.
const maxMessageIndexes = 64

// MessageIndexes reads the message-index array a Confluent Protobuf
// serializer writes after the schema id: a zig-zag varint count, then that
// many zig-zag varint indexes (the path from the file's top-level messages
// to the nested one used). A single 0 byte is the shorthand for [0], the
// file's first message. It appends the indexes to dst (so a caller can
// reuse one slice from record to record) and returns the Protobuf payload.
func MessageIndexes(dst []int, payload []byte) ([]int, []byte, error) {
	n, l := protowire.ConsumeVarint(payload)
	if l < 0 {
		return dst, nil, &FrameError{Msg: "bad message indexes: the value ends inside the message-index count after the schema id"}
	}
	payload = payload[l:]
	count := protowire.DecodeZigZag(n)
	if count == 0 {
		return append(dst, 0), payload, nil
	}
	if count < 0 || count > maxMessageIndexes {
		return dst, nil, &FrameError{Msg: fmt.Sprintf("bad message indexes: count %d is not between 1 and %d", count, maxMessageIndexes)}
	}
	for i := range int(count) {
		v, l := protowire.ConsumeVarint(payload)
		if l < 0 {
			return dst, nil, &FrameError{Msg: fmt.Sprintf("bad message indexes: the value ends inside message index %d of %d", i+1, count)}
		}
		payload = payload[l:]
		x := protowire.DecodeZigZag(v)
		if x < 0 || x > 1<<20 {
			return dst, nil, &FrameError{Msg: fmt.Sprintf("bad message indexes: index %d is %d", i+1, x)}
		}
		dst = append(dst, int(x))
	}
	return dst, payload, nil
}

// AppendMessageIndexes appends the message-index array of indexes, with
// the one-byte shorthand for [0].
func AppendMessageIndexes(dst []byte, indexes []int) []byte {
	if len(indexes) == 1 && indexes[0] == 0 {
		return append(dst, 0)
	}
	dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(int64(len(indexes))))
	for _, x := range indexes {
		dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(int64(x)))
	}
	return dst
}
