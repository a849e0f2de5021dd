package fluss

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

func TestAppendRequestFrameLayout(t *testing.T) {
	req := &flussrpc.ListTablesRequest{DatabaseName: proto.String("db1")}
	frame, err := appendRequestFrame([]byte("prefix"), APIListTables, 3, 0x01020304, req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := proto.Marshal(req)
	want := []byte("prefix")
	want = binary.BigEndian.AppendUint32(want, uint32(8+len(body)))
	want = append(want, 0x03, 0xF0) // 1008
	want = append(want, 0x00, 0x03)
	want = append(want, 0x01, 0x02, 0x03, 0x04)
	want = append(want, body...)
	if !bytes.Equal(frame, want) {
		t.Errorf("frame\n got %x\nwant %x", frame, want)
	}
	// The body is the standard protobuf encoding: field 1, wire type 2.
	if !bytes.Equal(body, []byte{0x0a, 0x03, 'd', 'b', '1'}) {
		t.Errorf("body %x", body)
	}
	// proto2 required fields are enforced before anything is sent.
	if _, err := appendRequestFrame(nil, APIListTables, 0, 1, &flussrpc.ListTablesRequest{}); err == nil ||
		!strings.Contains(err.Error(), "required field") {
		t.Errorf("missing required field: err = %v", err)
	}
}

func TestReadFrameErrors(t *testing.T) {
	frame := func(n uint32, payload []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, n), payload...)
	}
	tests := []struct {
		name    string
		in      []byte
		max     int
		wantErr error
		wantMsg string
	}{
		{"ok", frame(3, []byte{0, 1, 2}), 100, nil, ""},
		{"eof before length", nil, 100, io.EOF, ""},
		{"short length", []byte{0, 0}, 100, io.ErrUnexpectedEOF, ""},
		{"truncated payload", frame(10, []byte{0, 1, 2}), 100, io.ErrUnexpectedEOF, "truncated frame (10 bytes expected)"},
		{"zero length", frame(0, nil), 100, ErrProtocol, "frame length 0"},
		{"negative length", frame(0xFFFFFFF0, nil), 100, ErrProtocol, "frame length -16"},
		{"oversize", frame(101, nil), 100, ErrFrameTooLarge, "101 bytes, limit 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readFrame(bytes.NewReader(tt.in), nil, tt.max)
			if tt.wantErr == nil {
				if err != nil || !bytes.Equal(got, []byte{0, 1, 2}) {
					t.Fatalf("got %x, %v", got, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.wantErr, tt.wantMsg)
			}
		})
	}
}

func TestParseResponse(t *testing.T) {
	r, err := parseResponse([]byte{0, 0, 0, 0, 7, 0xAA})
	if err != nil || r.typ != respSuccess || r.requestID != 7 || !bytes.Equal(r.body, []byte{0xAA}) {
		t.Errorf("success: %+v %v", r, err)
	}
	r, err = parseResponse([]byte{2, 0x08, 0x19})
	if err != nil || r.typ != respServerFailure || !bytes.Equal(r.body, []byte{0x08, 0x19}) {
		t.Errorf("server failure: %+v %v", r, err)
	}
	if _, err := parseResponse([]byte{1, 0, 0}); !errors.Is(err, ErrProtocol) {
		t.Errorf("short error header: %v", err)
	}
	if _, err := parseResponse([]byte{9, 0, 0, 0, 0}); !errors.Is(err, ErrProtocol) {
		t.Errorf("unknown type: %v", err)
	}
}

func TestNegotiate(t *testing.T) {
	client := map[APIKey]versionRange{APIProduceLog: {0, 2}, APIFetchLog: {0, 0}, APIListTables: {1, 3}, APIInitWriter: {0, 0}}
	server := map[APIKey]versionRange{APIProduceLog: {0, 1}, APIFetchLog: {0, 5}, APIListTables: {4, 6}}
	got := negotiate(client, server)
	want := map[APIKey]int16{APIProduceLog: 1, APIFetchLog: 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("negotiate = %v, want %v", got, want)
	}
}

func TestRequestHeaderAndResponse(t *testing.T) {
	var mu sync.Mutex
	var seen []fakeRequest
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		var in flussrpc.ListTablesRequest
		if err := proto.Unmarshal(req.body, &in); err != nil {
			t.Errorf("unmarshal: %v", err)
		}
		fc.success(req.id, &flussrpc.ListTablesResponse{TableName: []string{in.GetDatabaseName() + "_t1", "t2"}})
	})
	c := dialFake(t, s)
	for i := 0; i < 3; i++ {
		got, err := c.ListTables(shortCtx(t), "db")
		if err != nil || strings.Join(got, ",") != "db_t1,t2" {
			t.Fatalf("ListTables = %v, %v", got, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, r := range seen {
		if r.key != APIListTables || r.version != 0 {
			t.Errorf("request %d: key %v version %d", i, r.key, r.version)
		}
		// ApiVersions took id 0; ids then count up on the connection.
		if r.id != int32(i+1) {
			t.Errorf("request %d: id %d, want %d", i, r.id, i+1)
		}
	}
}

func TestPipelinedOutOfOrderResponses(t *testing.T) {
	const n = 8
	var mu sync.Mutex
	var held []fakeRequest
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		mu.Lock()
		held = append(held, req)
		all := len(held) == n
		mu.Unlock()
		if !all {
			return
		}
		// Answer in reverse order of arrival, each with its own name.
		for i := n - 1; i >= 0; i-- {
			var in flussrpc.ListTablesRequest
			_ = proto.Unmarshal(held[i].body, &in)
			fc.success(held[i].id, &flussrpc.ListTablesResponse{TableName: []string{in.GetDatabaseName()}})
		}
	})
	c := dialFake(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := fmt.Sprintf("db%d", i)
			got, err := c.ListTables(shortCtx(t), db)
			if err != nil || len(got) != 1 || got[0] != db {
				errs <- fmt.Errorf("ListTables(%s) = %v, %v", db, got, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s.connections() != 1 {
		t.Errorf("%d connections, want 1 (pipelined)", s.connections())
	}
}

func TestErrorResponse(t *testing.T) {
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		fc.errorResp(req.id, CodeDatabaseNotExist, "Database db does not exist.")
	})
	c := dialFake(t, s)
	_, err := c.ListTables(shortCtx(t), "db")
	var fe *Error
	if !errors.As(err, &fe) || fe.Code != CodeDatabaseNotExist || fe.Message != "Database db does not exist." || fe.Retriable() {
		t.Fatalf("err = %#v", err)
	}
	if !errors.Is(err, &Error{Code: CodeDatabaseNotExist}) || errors.Is(err, &Error{Code: CodeTableNotExist}) {
		t.Errorf("errors.Is by code does not work: %v", err)
	}
	// An error response is per request: the connection stays.
	_, _ = c.ListTables(shortCtx(t), "db")
	if s.connections() != 1 {
		t.Errorf("%d connections after error responses, want 1", s.connections())
	}
}

func TestServerFailureFailsConnection(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			fc.serverFailure(CodeUnknownServerError, "boom")
			return
		}
		listDBs(fc, req, "ok")
	})
	c := dialFake(t, s)
	cn, _, _ := c.coordinatorConn(shortCtx(t))
	// CreateDatabase is not read-only, so it is not retried.
	err := c.CreateDatabase(shortCtx(t), "x", DatabaseDescriptor{}, false)
	if !errors.Is(err, ErrConnectionBroken) || CodeOf(err) != CodeUnknownServerError || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
	if !IsRetriable(err) {
		t.Errorf("a broken connection should be retriable: %v", err)
	}
	if !cn.broken() {
		t.Error("connection still in use after SERVER_FAILURE")
	}
	got, err := c.ListDatabases(shortCtx(t))
	if err != nil || len(got) != 1 {
		t.Fatalf("after reconnect: %v, %v", got, err)
	}
	if s.connections() != 2 {
		t.Errorf("%d connections, want 2 (reconnected)", s.connections())
	}
}

func TestTruncatedFrameBreaksConnection(t *testing.T) {
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		// Announce 100 bytes, send 5, hang up.
		fc.write(append(binary.BigEndian.AppendUint32(nil, 100), 0, 0, 0, 0, 1))
		_ = fc.nc.Close()
	})
	c := dialFake(t, s)
	err := c.CreateDatabase(shortCtx(t), "x", DatabaseDescriptor{}, false)
	if !errors.Is(err, ErrConnectionBroken) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
}

func TestOversizeFrameRejected(t *testing.T) {
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		fc.write(append(binary.BigEndian.AppendUint32(nil, 1<<30), 0, 0, 0, 0, 1))
	})
	c := dialFake(t, s, WithMaxFrameSize(4096))
	err := c.CreateDatabase(shortCtx(t), "x", DatabaseDescriptor{}, false)
	if !errors.Is(err, ErrFrameTooLarge) || !errors.Is(err, ErrConnectionBroken) {
		t.Fatalf("err = %v", err)
	}
}

func TestUnknownRequestIDIsDropped(t *testing.T) {
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		fc.success(req.id+1000, &flussrpc.ListDatabasesResponse{DatabaseName: []string{"stray"}})
		listDBs(fc, req, "mine")
	})
	c := dialFake(t, s)
	got, err := c.ListDatabases(shortCtx(t))
	if err != nil || len(got) != 1 || got[0] != "mine" {
		t.Fatalf("ListDatabases = %v, %v", got, err)
	}
	cn, _, _ := c.coordinatorConn(shortCtx(t))
	if cn.broken() || s.connections() != 1 {
		t.Errorf("stray response broke the connection")
	}
}

func TestTimeoutKeepsConnectionUsable(t *testing.T) {
	var mu sync.Mutex
	var stalled []fakeRequest
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		var in flussrpc.ListTablesRequest
		_ = proto.Unmarshal(req.body, &in)
		if in.GetDatabaseName() == "slow" {
			mu.Lock()
			stalled = append(stalled, req)
			mu.Unlock()
			return
		}
		// Answer the stalled request late, then this one.
		mu.Lock()
		for _, r := range stalled {
			fc.success(r.id, &flussrpc.ListTablesResponse{TableName: []string{"late"}})
		}
		stalled = nil
		mu.Unlock()
		fc.success(req.id, &flussrpc.ListTablesResponse{TableName: []string{"fast"}})
	})
	c := dialFake(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.ListTables(ctx, "slow")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if IsRetriable(err) {
		t.Errorf("the caller's own deadline is not retriable: %v", err)
	}
	got, err := c.ListTables(shortCtx(t), "fast")
	if err != nil || len(got) != 1 || got[0] != "fast" {
		t.Fatalf("after timeout: %v, %v", got, err)
	}
	if s.connections() != 1 {
		t.Errorf("%d connections, want 1", s.connections())
	}
}

func TestNoRequestTimeoutFallsBackToDefault(t *testing.T) {
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {}) // never answers
	c := dialFake(t, s, WithRequestTimeout(50*time.Millisecond))
	_, err := c.ListDatabases(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded from the default timeout", err)
	}
}

func TestUnsupportedAPINotSent(t *testing.T) {
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		t.Errorf("server got %v, which it never advertised", req.key)
	}, withVersions([]*flussrpc.ApiVersion{
		{ApiKey: proto.Int32(int32(APIListDatabases)), MinVersion: proto.Int32(1), MaxVersion: proto.Int32(2)},
	}))
	c := dialFake(t, s)
	if _, err := c.ListDatabases(shortCtx(t)); !errors.Is(err, ErrUnsupportedAPI) {
		t.Errorf("no common version: err = %v", err)
	}
	if _, err := c.ListTables(shortCtx(t), "db"); !errors.Is(err, ErrUnsupportedAPI) {
		t.Errorf("api not advertised: err = %v", err)
	}
}

func TestReadOnlyCallRetriedOnBrokenConnection(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			_ = fc.nc.Close() // as a server closing an idle connection would
			return
		}
		listDBs(fc, req, "a")
	})
	c := dialFake(t, s)
	got, err := c.ListDatabases(shortCtx(t))
	if err != nil || len(got) != 1 {
		t.Fatalf("ListDatabases = %v, %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 || s.connections() != 2 {
		t.Errorf("calls %d connections %d, want 2 and 2", calls, s.connections())
	}
}

func TestCloseFailsPendingAndLaterCalls(t *testing.T) {
	got := make(chan struct{})
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) { close(got) }) // never answers
	c := dialFake(t, s)
	done := make(chan error, 1)
	go func() {
		_, err := c.ListDatabases(shortCtx(t))
		done <- err
	}()
	<-got
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("pending call err = %v, want ErrClosed", err)
	}
	if _, err := c.ListDatabases(shortCtx(t)); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Close err = %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestPing(t *testing.T) {
	s := newFakeServer(t, nil) // ApiVersions is all Ping sends
	c := dialFake(t, s)
	if err := c.Ping(shortCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.close()
	if err := c.Ping(shortCtx(t)); err == nil || !IsRetriable(err) {
		t.Errorf("Ping with the server gone: %v, want a retriable error", err)
	}
}

func TestCloseStopsReaderGoroutines(t *testing.T) {
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) { listDBs(fc, req, "a") })
	c := dialFake(t, s)
	cn, _, err := c.coordinatorConn(shortCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListDatabases(shortCtx(t)); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	select {
	case <-cn.readerDone:
	default:
		t.Fatal("Close returned while the connection's reader goroutine still runs")
	}
}

func TestDialFailures(t *testing.T) {
	if _, err := Dial(shortCtx(t), " , "); err == nil || !strings.Contains(err.Error(), "no address") {
		t.Errorf("empty bootstrap: %v", err)
	}
	if _, err := Dial(shortCtx(t), "127.0.0.1:1", WithRequestTimeout(0)); err == nil || !strings.Contains(err.Error(), "request timeout") {
		t.Errorf("bad option: %v", err)
	}
	// A listener that is closed: connection refused on every address.
	s := newFakeServer(t, nil)
	addr := s.addr()
	s.close()
	_, err := Dial(shortCtx(t), addr+","+addr, WithLogger(quietLogger()))
	if err == nil || !strings.Contains(err.Error(), "no coordinator reachable") || !errors.Is(err, ErrUnreachable) || !IsRetriable(err) {
		t.Errorf("refused: %v", err)
	}
	// A second bootstrap address is used when the first is down.
	good := newFakeServer(t, func(fc *fakeConn, req fakeRequest) { listDBs(fc, req, "x") })
	c, err := Dial(shortCtx(t), addr+","+good.addr(), WithLogger(quietLogger()))
	if err != nil {
		t.Fatalf("Dial with one good address: %v", err)
	}
	defer c.Close()
	if _, err := c.ListDatabases(shortCtx(t)); err != nil {
		t.Error(err)
	}
}

func TestErrorCodeTable(t *testing.T) {
	tests := []struct {
		code            ErrorCode
		name            string
		retriable, meta bool
	}{
		{CodeNetwork, "NETWORK_EXCEPTION", true, true},
		{CodeCorruptMessage, "CORRUPT_MESSAGE", true, false},
		{CodeTableNotExist, "TABLE_NOT_EXIST", false, false},
		{CodeNotLeaderOrFollower, "NOT_LEADER_OR_FOLLOWER", true, true},
		{CodeUnknownTableOrBucket, "UNKNOWN_TABLE_OR_BUCKET_EXCEPTION", true, true},
		{CodeLeaderNotAvailable, "LEADER_NOT_AVAILABLE_EXCEPTION", true, true},
		{CodeRequestTimeOut, "REQUEST_TIME_OUT", true, false},
		{CodeNotEnoughReplicas, "NOT_ENOUGH_REPLICAS_EXCEPTION", true, false},
		{CodeRecordTooLarge, "RECORD_TOO_LARGE_EXCEPTION", false, false},
		{CodeOutOfOrderSequence, "OUT_OF_ORDER_SEQUENCE_EXCEPTION", false, false},
		{CodeInvalidProducerId, "INVALID_PRODUCER_ID_EXCEPTION", false, false},
		{ErrorCode(999), "ErrorCode(999)", false, false},
	}
	for _, tt := range tests {
		e := &Error{Code: tt.code}
		if tt.code.String() != tt.name || e.Retriable() != tt.retriable || e.StaleMetadata() != tt.meta {
			t.Errorf("%d: %s retriable=%v stale=%v; want %s %v %v", tt.code, tt.code, e.Retriable(), e.StaleMetadata(), tt.name, tt.retriable, tt.meta)
		}
	}
	if len(codeInfo) != 65 { // -1..63
		t.Errorf("%d codes known, want 65 (Errors.java at 0.9.1)", len(codeInfo))
	}
	if newError(0, "x") != nil {
		t.Error("code 0 is not an error")
	}
	if CodeOf(nil) != CodeNone || CodeOf(errors.New("x")) != CodeUnknownServerError {
		t.Error("CodeOf")
	}
	wrapped := fmt.Errorf("ctx: %w", &Error{Code: CodeTableNotExist, Message: "m"})
	if CodeOf(wrapped) != CodeTableNotExist || IsRetriable(wrapped) {
		t.Error("wrapped")
	}
}

func TestStaleRoute(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&Error{Code: CodeNotLeaderOrFollower}, true},
		{fmt.Errorf("x: %w", &Error{Code: CodeLeaderNotAvailable}), true},
		{&Error{Code: CodeCorruptRecord}, false},
		{fmt.Errorf("%w: read: EOF", ErrConnectionBroken), true},
		{fmt.Errorf("%w: dial", ErrUnreachable), true},
		{fmt.Errorf("%w: bucket 2", ErrNoLeader), true},
		{context.DeadlineExceeded, false},
		{ErrInvalidRecords, false},
	}
	for _, tt := range tests {
		if got := staleRoute(tt.err); got != tt.want {
			t.Errorf("staleRoute(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
