package fluss

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

// Frame layout (Fluss's MessageCodec). Every frame starts with an int32
// big-endian length that counts the bytes after it.
//
//	request:        length, api key int16, api version int16, request id int32, message
//	response:       length, response type int8, request id int32, message
//	server failure: length, response type int8 (2), ErrorResponse
const (
	lengthFieldSize      = 4
	requestHeaderSize    = 8
	responseHeaderSize   = 5
	serverFailureHdrSize = 1

	// DefaultMaxFrameSize bounds a response frame. Fetch responses are the
	// largest Ferry reads; the server caps them at the requested max bytes.
	DefaultMaxFrameSize = 64 << 20
)

// responseType is the first byte of a response (Fluss's ResponseType).
type responseType int8

const (
	respSuccess       responseType = 0
	respError         responseType = 1
	respServerFailure responseType = 2
)

// marshalOpts encodes requests. Deterministic output keeps frames
// reproducible for tests; proto2 required fields are checked.
var marshalOpts = proto.MarshalOptions{Deterministic: true}

// appendRequestFrame appends one complete request frame to dst.
func appendRequestFrame(dst []byte, key APIKey, version int16, requestID int32, msg proto.Message) ([]byte, error) {
	start := len(dst)
	dst = append(dst, make([]byte, lengthFieldSize+requestHeaderSize)...)
	hdr := dst[start:]
	binary.BigEndian.PutUint16(hdr[4:], uint16(key))
	binary.BigEndian.PutUint16(hdr[6:], uint16(version))
	binary.BigEndian.PutUint32(hdr[8:], uint32(requestID))
	out, err := marshalOpts.MarshalAppend(dst, msg)
	if err != nil {
		return dst[:start], fmt.Errorf("fluss: encode %s request: %w", key, err)
	}
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start-lengthFieldSize))
	return out, nil
}

// appendRequestHeader appends a frame's length and request header for a
// message of bodySize bytes that the caller sends right after.
func appendRequestHeader(dst []byte, key APIKey, version int16, requestID int32, bodySize int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(requestHeaderSize+bodySize))
	dst = binary.BigEndian.AppendUint16(dst, uint16(key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(version))
	return binary.BigEndian.AppendUint32(dst, uint32(requestID))
}

// readFrame reads one frame's length and then its payload into buf (grown as
// needed) and returns the payload. A length beyond maxSize is rejected
// before anything is allocated for it.
func readFrame(r io.Reader, buf []byte, maxSize int) ([]byte, error) {
	var lenBuf [lengthFieldSize]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return buf, err
	}
	n := int32(binary.BigEndian.Uint32(lenBuf[:]))
	if n < serverFailureHdrSize {
		return buf, fmt.Errorf("%w: frame length %d", ErrProtocol, n)
	}
	if int(n) > maxSize {
		return buf, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, maxSize)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return buf, fmt.Errorf("truncated frame (%d bytes expected): %w", n, err)
	}
	return buf, nil
}

// response is one decoded response header and its message bytes.
type response struct {
	typ       responseType
	requestID int32 // unset for server failures
	body      []byte
}

// parseResponse splits a response payload into header and body.
func parseResponse(payload []byte) (response, error) {
	typ := responseType(payload[0])
	switch typ {
	case respSuccess, respError:
		if len(payload) < responseHeaderSize {
			return response{}, fmt.Errorf("%w: %d-byte response shorter than its header", ErrProtocol, len(payload))
		}
		return response{typ: typ, requestID: int32(binary.BigEndian.Uint32(payload[1:])), body: payload[responseHeaderSize:]}, nil
	case respServerFailure:
		return response{typ: typ, body: payload[serverFailureHdrSize:]}, nil
	default:
		return response{}, fmt.Errorf("%w: unknown response type %d", ErrProtocol, typ)
	}
}

// decodeErrorBody turns an ErrorResponse message into an *Error.
func decodeErrorBody(body []byte) error {
	var er flussrpc.ErrorResponse
	if err := proto.Unmarshal(body, &er); err != nil {
		return fmt.Errorf("%w: undecodable error response: %w", ErrProtocol, err)
	}
	return &Error{Code: ErrorCode(er.GetErrorCode()), Message: er.GetErrorMessage()}
}

// bufPool recycles frame buffers. Only buffers up to pooledBufMax are kept so
// that one huge fetch does not pin memory forever.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const pooledBufMax = 1 << 20

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > pooledBufMax {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}
