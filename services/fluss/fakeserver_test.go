package fluss

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

// fakeServer is a scripted Fluss server on loopback for protocol edge cases
// the real server will not produce on demand. It answers ApiVersions itself
// (unless versions is set to nil) and passes every other request to handle,
// which runs on the connection's goroutine and writes whatever frames the
// test needs.
type fakeServer struct {
	t        testing.TB
	ln       net.Listener
	handle   func(fc *fakeConn, req fakeRequest)
	versions []*flussrpc.ApiVersion

	mu       sync.Mutex
	accepted int
	conns    []net.Conn
	wg       sync.WaitGroup
}

type fakeRequest struct {
	key     APIKey
	version int16
	id      int32
	body    []byte
}

type fakeConn struct {
	nc  net.Conn
	srv *fakeServer
	wmu sync.Mutex
}

func allVersions() []*flussrpc.ApiVersion {
	var out []*flussrpc.ApiVersion
	for k, r := range clientVersions {
		out = append(out, &flussrpc.ApiVersion{ApiKey: proto.Int32(int32(k)), MinVersion: proto.Int32(int32(r.min)), MaxVersion: proto.Int32(int32(r.max))})
	}
	return out
}

// withVersions makes the fake advertise these API versions instead of all.
func withVersions(v []*flussrpc.ApiVersion) func(*fakeServer) {
	return func(s *fakeServer) { s.versions = v }
}

func newFakeServer(t testing.TB, handle func(fc *fakeConn, req fakeRequest), opts ...func(*fakeServer)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, ln: ln, handle: handle, versions: allVersions()}
	for _, o := range opts {
		o(s)
	}
	s.wg.Add(1)
	go s.acceptLoop()
	t.Cleanup(s.close)
	return s
}

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

func (s *fakeServer) acceptLoop() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.accepted++
		s.conns = append(s.conns, nc)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(&fakeConn{nc: nc, srv: s})
		}()
	}
}

func (s *fakeServer) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

func (s *fakeServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *fakeServer) serve(fc *fakeConn) {
	defer fc.nc.Close()
	for {
		var hdr [4 + requestHeaderSize]byte
		if _, err := io.ReadFull(fc.nc, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		body := make([]byte, n-requestHeaderSize)
		if _, err := io.ReadFull(fc.nc, body); err != nil {
			return
		}
		req := fakeRequest{
			key:     APIKey(binary.BigEndian.Uint16(hdr[4:])),
			version: int16(binary.BigEndian.Uint16(hdr[6:])),
			id:      int32(binary.BigEndian.Uint32(hdr[8:])),
			body:    body,
		}
		if req.key == APIVersions && s.versions != nil {
			var in flussrpc.ApiVersionsRequest
			if err := proto.Unmarshal(req.body, &in); err != nil || in.GetClientSoftwareName() == "" {
				s.t.Errorf("bad ApiVersions request: %v %v", err, &in)
			}
			fc.success(req.id, &flussrpc.ApiVersionsResponse{ApiVersions: s.versions, ServerType: proto.Int32(1)})
			continue
		}
		s.handle(fc, req)
	}
}

func (fc *fakeConn) write(b []byte) {
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	_, _ = fc.nc.Write(b)
}

// success writes a SUCCESS_RESPONSE frame.
func (fc *fakeConn) success(id int32, msg proto.Message) {
	body, err := proto.Marshal(msg)
	if err != nil {
		fc.srv.t.Errorf("marshal: %v", err)
		return
	}
	fc.write(responseFrame(respSuccess, id, body))
}

// errorResp writes an ERROR_RESPONSE frame.
func (fc *fakeConn) errorResp(id int32, code ErrorCode, msg string) {
	body, _ := proto.Marshal(&flussrpc.ErrorResponse{ErrorCode: proto.Int32(int32(code)), ErrorMessage: proto.String(msg)})
	fc.write(responseFrame(respError, id, body))
}

// serverFailure writes a SERVER_FAILURE frame (no request id).
func (fc *fakeConn) serverFailure(code ErrorCode, msg string) {
	body, _ := proto.Marshal(&flussrpc.ErrorResponse{ErrorCode: proto.Int32(int32(code)), ErrorMessage: proto.String(msg)})
	b := binary.BigEndian.AppendUint32(nil, uint32(1+len(body)))
	b = append(b, byte(respServerFailure))
	fc.write(append(b, body...))
}

func responseFrame(typ responseType, id int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(responseHeaderSize+len(body)))
	b = append(b, byte(typ))
	b = binary.BigEndian.AppendUint32(b, uint32(id))
	return append(b, body...)
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func dialFake(t *testing.T, s *fakeServer, opts ...Option) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, s.addr(), append([]Option{WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// listDBs answers a ListDatabases request with the given names.
func listDBs(fc *fakeConn, req fakeRequest, names ...string) {
	fc.success(req.id, &flussrpc.ListDatabasesResponse{DatabaseName: names})
}
