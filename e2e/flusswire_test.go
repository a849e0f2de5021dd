package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// A deliberately independent, minimal Fluss RPC client for the foundation test: the frame
// layout comes straight from MessageCodec at v0.9.1-incubating, so the test does not depend on
// (and can cross-check) services/fluss.
//
// Request frame:  int32 length | int16 api key | int16 api version | int32 request id | protobuf
// Response frame: int32 length | int8 type (0 ok, 1 error, 2 server failure) | int32 request id
// (absent for server failure) | protobuf (ErrorResponse unless ok).

const (
	apiVersions = 1000
	createTable = 1005
	listTables  = 1008
	getMetadata = 1012
	produceLog  = 1014
	fetchLog    = 1015
	listOffsets = 1021
	initWriter  = 1026
)

type wireConn struct {
	conn  net.Conn
	reqID int32
}

func dialWire(ctx context.Context, addr string) (*wireConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	}
	return &wireConn{conn: c}, nil
}

func (w *wireConn) Close() error { return w.conn.Close() }

// wireError is an ERROR_RESPONSE or SERVER_FAILURE frame.
type wireError struct {
	Code    int32
	Message string
}

func (e *wireError) Error() string { return fmt.Sprintf("fluss error %d: %s", e.Code, e.Message) }

// call sends one request and returns the response body of a success frame.
func (w *wireConn) call(apiKey, version int16, body []byte) ([]byte, error) {
	w.reqID++
	frame := make([]byte, 4+8, 4+8+len(body))
	binary.BigEndian.PutUint32(frame[0:], uint32(8+len(body)))
	binary.BigEndian.PutUint16(frame[4:], uint16(apiKey))
	binary.BigEndian.PutUint16(frame[6:], uint16(version))
	binary.BigEndian.PutUint32(frame[8:], uint32(w.reqID))
	frame = append(frame, body...)
	if _, err := w.conn.Write(frame); err != nil {
		return nil, err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(w.conn, hdr[:]); err != nil {
		return nil, fmt.Errorf("read frame length: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 1 || n > 64<<20 {
		return nil, fmt.Errorf("implausible frame length %d", n)
	}
	resp := make([]byte, n)
	if _, err := io.ReadFull(w.conn, resp); err != nil {
		return nil, fmt.Errorf("read frame: %w", err)
	}
	switch resp[0] {
	case 0, 1:
		if len(resp) < 5 {
			return nil, fmt.Errorf("short response frame (%d bytes)", len(resp))
		}
		if id := int32(binary.BigEndian.Uint32(resp[1:5])); id != w.reqID {
			return nil, fmt.Errorf("response for request %d, want %d", id, w.reqID)
		}
		if resp[0] == 1 {
			return nil, decodeWireError(resp[5:])
		}
		return resp[5:], nil
	case 2:
		return nil, decodeWireError(resp[1:])
	default:
		return nil, fmt.Errorf("unknown response type %d", resp[0])
	}
}

func decodeWireError(b []byte) error {
	e := &wireError{}
	err := walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			e.Code = int32(x)
		case num == 2 && typ == protowire.BytesType:
			e.Message = string(v)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("undecodable error response: %w", err)
	}
	return e
}

// walkFields calls fn for every top-level field of a protobuf message: v for length-delimited
// fields, x for varints.
func walkFields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

type apiRange struct{ Min, Max int32 }

// apiVersionsCall sends ApiVersionsRequest{client_software_name=1, client_software_version=2}
// and returns the advertised key -> version range, and the server_type field.
func (w *wireConn) apiVersionsCall() (map[int32]apiRange, int32, error) {
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendString(req, "ferry-e2e")
	req = protowire.AppendTag(req, 2, protowire.BytesType)
	req = protowire.AppendString(req, "0.0.1")
	resp, err := w.call(apiVersions, 0, req)
	if err != nil {
		return nil, 0, err
	}
	out := map[int32]apiRange{}
	serverType := int32(-1)
	err = walkFields(resp, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			var key int32 = -1
			var r apiRange
			if err := walkFields(v, func(n protowire.Number, t protowire.Type, _ []byte, x uint64) error {
				switch n {
				case 1:
					key = int32(x)
				case 2:
					r.Min = int32(x)
				case 3:
					r.Max = int32(x)
				}
				return nil
			}); err != nil {
				return err
			}
			if key < 0 {
				return errors.New("PbApiVersion without api_key")
			}
			out[key] = r
		case num == 2 && typ == protowire.VarintType:
			serverType = int32(x)
		}
		return nil
	})
	return out, serverType, err
}

// listTablesCall sends ListTablesRequest{database_name=1} and returns table_name (1) values.
func (w *wireConn) listTablesCall(database string) ([]string, error) {
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendString(req, database)
	resp, err := w.call(listTables, 0, req)
	if err != nil {
		return nil, err
	}
	var names []string
	err = walkFields(resp, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num == 1 && typ == protowire.BytesType {
			names = append(names, string(v))
		}
		return nil
	})
	return names, err
}
