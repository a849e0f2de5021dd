package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors of request decoding. Each closes the connection: Kafka brokers
// cannot answer a request they cannot parse, because the answer needs the
// correlation id and the right header version.
var (
	ErrTruncatedHeader = errors.New("kafka: request header truncated")
	ErrUnknownAPIKey   = errors.New("kafka: unknown api key")
	ErrUnsupportedVer  = errors.New("kafka: unsupported api version")
	ErrMalformedBody   = errors.New("kafka: malformed request body")
	ErrBadTaggedFields = errors.New("kafka: malformed header tagged fields")
)

// header is a decoded request header (v1, or v2 for flexible versions).
type header struct {
	Key           int16
	Version       int16
	CorrelationID int32
	// ClientID is nil when the client sent a null string.
	ClientID *string
}

// Request is one decoded request: its header and body. Body is nil when
// the version is not served (only ApiVersions reaches a handler that way,
// to answer UNSUPPORTED_VERSION).
type Request struct {
	Header header
	Body   kmsg.Request
	// Size is the frame length, which the request holds against the
	// connection's and the server's in-flight byte budgets.
	Size int
}

// ReadRequest decodes one frame (without its 4-byte length) against the
// registry. A version outside the registered range is an error except for
// ApiVersions, whose handler must answer it (KIP-511).
func ReadRequest(frame []byte, reg *Registry) (Request, error) {
	r, req, body, err := readHeader(frame, reg)
	if err != nil || body == nil {
		return r, err
	}
	return decodeBody(r, req, body)
}

// readHeader decodes a frame's header and checks the API and version
// against the registry; body is what follows the header, to be decoded
// into req, nil when there is nothing to decode (an ApiVersions version we
// do not know).
func readHeader(frame []byte, reg *Registry) (r Request, req kmsg.Request, body []byte, err error) {
	r.Size = len(frame)
	if len(frame) < 8 {
		return r, nil, nil, fmt.Errorf("%w: %d bytes", ErrTruncatedHeader, len(frame))
	}
	h := &r.Header
	h.Key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]

	// The client id is a non-flexible nullable string in both header
	// versions (KIP-482 kept it so that ApiVersions can always be parsed).
	if len(rest) < 2 {
		return r, nil, nil, fmt.Errorf("%w: client id length missing", ErrTruncatedHeader)
	}
	idLen := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	switch {
	case idLen == -1:
	case idLen < -1:
		return r, nil, nil, fmt.Errorf("%w: client id length %d", ErrTruncatedHeader, idLen)
	default:
		if int(idLen) > len(rest) {
			return r, nil, nil, fmt.Errorf("%w: client id of %d bytes, %d left", ErrTruncatedHeader, idLen, len(rest))
		}
		s := string(rest[:idLen])
		h.ClientID = &s
		rest = rest[idLen:]
	}

	req = kmsg.RequestForKey(h.Key)
	if req == nil {
		return r, nil, nil, fmt.Errorf("%w %d", ErrUnknownAPIKey, h.Key)
	}
	req.SetVersion(h.Version)
	api := reg.Lookup(h.Key)
	if api == nil {
		return r, nil, nil, fmt.Errorf("%w %d (%s) not served", ErrUnknownAPIKey, h.Key, kmsg.NameForKey(h.Key))
	}
	if req.IsFlexible() {
		if rest, err = skipTaggedFields(rest); err != nil {
			return r, nil, nil, err
		}
	}
	if h.Version < api.MinVersion || h.Version > api.MaxVersion {
		if h.Key == ApiVersionsKey {
			// The body of an unknown version cannot be parsed; the
			// handler answers with the ranges encoded as v0.
			return r, nil, nil, nil
		}
		return r, nil, nil, fmt.Errorf("%w: %s v%d (served v%d-v%d)", ErrUnsupportedVer,
			kmsg.NameForKey(h.Key), h.Version, api.MinVersion, api.MaxVersion)
	}
	return r, req, rest, nil
}

// decodeBody decodes what readHeader returned into r.Body.
func decodeBody(r Request, req kmsg.Request, body []byte) (Request, error) {
	h := r.Header
	if err := req.ReadFrom(body); err != nil {
		return r, fmt.Errorf("%w: %s v%d: %v", ErrMalformedBody, kmsg.NameForKey(h.Key), h.Version, err)
	}
	r.Body = req
	return r, nil
}

// skipTaggedFields skips header v2 tagged fields; the header defines none
// that a broker acts on.
func skipTaggedFields(b []byte) ([]byte, error) {
	n, used := binary.Uvarint(b)
	if used <= 0 {
		return nil, fmt.Errorf("%w: count", ErrBadTaggedFields)
	}
	b = b[used:]
	if n > uint64(len(b)) { // every field takes at least two bytes
		return nil, fmt.Errorf("%w: %d fields in %d bytes", ErrBadTaggedFields, n, len(b))
	}
	for i := uint64(0); i < n; i++ {
		if _, used = binary.Uvarint(b); used <= 0 {
			return nil, fmt.Errorf("%w: tag", ErrBadTaggedFields)
		}
		b = b[used:]
		size, used := binary.Uvarint(b)
		if used <= 0 || size > uint64(len(b)-used) {
			return nil, fmt.Errorf("%w: field size", ErrBadTaggedFields)
		}
		b = b[used+int(size):]
	}
	return b, nil
}

// AppendResponse frames resp for correlation id corr: size, header
// (v1 with an empty tag section for flexible versions, except ApiVersions
// whose response header is always v0 so clients can read it before they
// know our versions) and body.
func AppendResponse(dst []byte, corr int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	if resp.IsFlexible() && resp.Key() != ApiVersionsKey {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
