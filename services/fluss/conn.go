package fluss

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

// conn is one TCP connection to a Fluss server. Requests are pipelined: any
// number of goroutines may call roundTrip at once; each request gets an id,
// and a single reader goroutine (owned by the conn, stopped by close) hands
// each response to the caller waiting for that id.
type conn struct {
	addr     string
	nc       net.Conn
	log      *slog.Logger
	maxFrame int

	// versions is set once by the handshake, before the conn is shared.
	versions map[APIKey]int16

	wmu sync.Mutex // one frame on the wire at a time

	mu      sync.Mutex
	nextID  int32
	pending map[int32]chan callResult
	err     error // set once, when the conn fails or is closed

	readerDone chan struct{}
}

type callResult struct {
	buf  *[]byte // pooled frame buffer that body points into; nil on error
	body []byte
	err  error
}

// dialConn connects to addr and negotiates API versions. The context bounds
// both the TCP connect and the handshake.
func dialConn(ctx context.Context, addr string, o *options) (*conn, error) {
	d := net.Dialer{Timeout: o.dialTimeout, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %w", ErrUnreachable, addr, err)
	}
	c := newConn(nc, addr, o)
	if err := c.handshake(ctx, o); err != nil {
		c.close(err)
		return nil, err
	}
	return c, nil
}

func newConn(nc net.Conn, addr string, o *options) *conn {
	c := &conn{
		addr:       addr,
		nc:         nc,
		log:        o.logger.With("fluss_server", addr),
		maxFrame:   o.maxFrameSize,
		pending:    make(map[int32]chan callResult),
		readerDone: make(chan struct{}),
	}
	go c.readLoop()
	return c
}

// handshake sends ApiVersions and keeps, per API, the highest version both
// sides support. Fluss's own client does the same before any other request.
func (c *conn) handshake(ctx context.Context, o *options) error {
	req := &flussrpc.ApiVersionsRequest{
		ClientSoftwareName:    proto.String(o.clientName),
		ClientSoftwareVersion: proto.String(o.clientVersion),
	}
	var resp flussrpc.ApiVersionsResponse
	if err := c.roundTripVersion(ctx, APIVersions, 0, req, &resp); err != nil {
		return fmt.Errorf("fluss: api versions handshake with %s: %w", c.addr, err)
	}
	server := make(map[APIKey]versionRange, len(resp.GetApiVersions()))
	for _, v := range resp.GetApiVersions() {
		server[APIKey(v.GetApiKey())] = versionRange{int16(v.GetMinVersion()), int16(v.GetMaxVersion())}
	}
	c.versions = negotiate(clientVersions, server)
	if o.sasl != nil {
		if err := c.authenticate(ctx, o.sasl); err != nil {
			return err
		}
	}
	c.log.Debug("fluss connection ready", "server_type", resp.GetServerType(), "apis", len(c.versions))
	return nil
}

// authenticate runs SASL/PLAIN (RFC 4616) as Fluss's SASL listeners expect
// it: one AUTHENTICATE request with the initial response, answered with an
// empty challenge (Fluss 0.9.1) or none on success. PLAIN is complete after
// its first message, so a challenge with data means the server is not
// speaking PLAIN.
func (c *conn) authenticate(ctx context.Context, creds *saslPlain) error {
	token := make([]byte, 0, 2+len(creds.username)+len(creds.password))
	token = append(token, 0)
	token = append(token, creds.username...)
	token = append(token, 0)
	token = append(token, creds.password...)
	req := &flussrpc.AuthenticateRequest{Protocol: proto.String("PLAIN"), Token: token}
	var resp flussrpc.AuthenticateResponse
	if err := c.roundTrip(ctx, APIAuthenticate, req, &resp); err != nil {
		return fmt.Errorf("fluss: SASL/PLAIN authentication of user %q at %s: %w", creds.username, c.addr, err)
	}
	if len(resp.Challenge) > 0 {
		return fmt.Errorf("fluss: SASL/PLAIN authentication at %s: unexpected challenge of %d bytes", c.addr, len(resp.Challenge))
	}
	return nil
}

// roundTrip sends req with the negotiated version of key and decodes the
// response into resp.
func (c *conn) roundTrip(ctx context.Context, key APIKey, req, resp proto.Message) error {
	v, ok := c.versions[key]
	if !ok {
		return fmt.Errorf("%w: %s on %s", ErrUnsupportedAPI, key, c.addr)
	}
	return c.roundTripVersion(ctx, key, v, req, resp)
}

func (c *conn) roundTripVersion(ctx context.Context, key APIKey, version int16, req, resp proto.Message) error {
	return c.exchange(ctx, key, resp, func(id int32, scratch []byte) (net.Buffers, []byte, error) {
		frame, err := appendRequestFrame(scratch, key, version, id, req)
		return net.Buffers{frame}, frame, err
	})
}

// roundTripParts sends a request whose encoded message is the concatenation
// of parts, without joining them: large byte fields (log records) go to the
// socket from the caller's memory in one vectored write.
func (c *conn) roundTripParts(ctx context.Context, key APIKey, parts [][]byte, resp proto.Message) error {
	v, ok := c.versions[key]
	if !ok {
		return fmt.Errorf("%w: %s on %s", ErrUnsupportedAPI, key, c.addr)
	}
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	return c.exchange(ctx, key, resp, func(id int32, scratch []byte) (net.Buffers, []byte, error) {
		hdr := appendRequestHeader(scratch, key, v, id, size)
		bufs := make(net.Buffers, 0, 1+len(parts))
		bufs = append(bufs, hdr)
		return append(bufs, parts...), hdr, nil
	})
}

// exchange registers a request id, has encode build the frame for it (into
// a pooled scratch buffer it may grow and returns), sends it and waits for
// the response, which it decodes into resp.
func (c *conn) exchange(ctx context.Context, key APIKey, resp proto.Message,
	encode func(id int32, scratch []byte) (net.Buffers, []byte, error)) error {
	ch := make(chan callResult, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	id := c.nextID
	// Ids wrap around after 2^31 requests; by then the old id is long done.
	c.nextID++
	if c.nextID < 0 {
		c.nextID = 0
	}
	c.pending[id] = ch
	c.mu.Unlock()

	bp := getBuf()
	bufs, scratch, err := encode(id, *bp)
	*bp = scratch
	if err != nil {
		putBuf(bp)
		c.forget(id)
		return err
	}
	err = c.write(ctx, bufs)
	putBuf(bp)
	if err != nil {
		c.forget(id)
		return fmt.Errorf("fluss: send %s to %s: %w", key, c.addr, err)
	}

	select {
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("fluss: %s on %s: %w", key, c.addr, r.err)
		}
		err := proto.Unmarshal(r.body, resp)
		putBuf(r.buf)
		if err != nil {
			return fmt.Errorf("%w: decode %s response from %s: %w", ErrProtocol, key, c.addr, err)
		}
		return nil
	case <-ctx.Done():
		// The response may still come; the reader drops it as unknown.
		// The connection itself stays usable.
		c.forget(id)
		return fmt.Errorf("fluss: %s on %s: %w", key, c.addr, ctx.Err())
	}
}

// write puts one frame on the wire. A deadline or cancellation that stops a
// write half-way leaves the stream unparseable for the server, so the conn
// is failed; one that stops it before any byte went out leaves it usable.
func (c *conn) write(ctx context.Context, bufs net.Buffers) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	dl, _ := ctx.Deadline()
	if err := c.nc.SetWriteDeadline(dl); err != nil {
		return err
	}
	// Cancellation without a deadline interrupts the write by moving the
	// deadline into the past. If that callback has started, wait for it, so
	// that it cannot hit the next writer's deadline.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.nc.SetWriteDeadline(time.Unix(1, 0))
		close(fired)
	})
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	n, err := bufs.WriteTo(c.nc) // writev on TCP connections
	if !stop() {
		<-fired
	}
	if err == nil {
		return nil
	}
	if n > 0 {
		c.close(fmt.Errorf("%w: write failed after %d of %d bytes: %w", ErrConnectionBroken, n, total, err))
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return fmt.Errorf("%w: %w", ErrConnectionBroken, err)
}

func (c *conn) forget(id int32) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// readLoop reads frames until the connection fails, then fails every
// request still waiting.
func (c *conn) readLoop() {
	defer close(c.readerDone)
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		bp := getBuf()
		payload, err := readFrame(br, *bp, c.maxFrame)
		*bp = payload[:0]
		if err != nil {
			putBuf(bp)
			c.close(fmt.Errorf("%w: read: %w", ErrConnectionBroken, err))
			return
		}
		resp, err := parseResponse(payload)
		if err != nil {
			putBuf(bp)
			c.log.Warn("fluss: bad response frame, closing connection", "err", err)
			c.close(fmt.Errorf("%w: %w", ErrConnectionBroken, err))
			return
		}
		if resp.typ == respServerFailure {
			// Not tied to a request: Fluss's client fails the whole
			// connection, and so do we.
			ferr := decodeErrorBody(resp.body)
			putBuf(bp)
			c.log.Warn("fluss: server failure, closing connection", "err", ferr)
			c.close(fmt.Errorf("%w: server failure: %w", ErrConnectionBroken, ferr))
			return
		}
		c.mu.Lock()
		ch, ok := c.pending[resp.requestID]
		delete(c.pending, resp.requestID)
		c.mu.Unlock()
		if !ok {
			// Its caller gave up (deadline) or the id was never ours.
			// Frames are length-delimited, so the stream stays in sync.
			putBuf(bp)
			c.log.Debug("fluss: dropping response for unknown request id", "request_id", resp.requestID)
			continue
		}
		if resp.typ == respError {
			ch <- callResult{err: decodeErrorBody(resp.body)}
			putBuf(bp)
			continue
		}
		ch <- callResult{buf: bp, body: resp.body}
	}
}

// close fails the conn with cause (once) and closes the socket. The reader
// goroutine then ends on its own.
func (c *conn) close(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = cause
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	_ = c.nc.Close()
	for _, ch := range pending {
		ch <- callResult{err: cause}
	}
	if !errors.Is(cause, ErrClosed) {
		c.log.Debug("fluss connection closed", "cause", cause)
	}
}

// broken reports whether the conn can no longer be used.
func (c *conn) broken() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

// shutdown closes the conn and waits for its reader goroutine to end.
func (c *conn) shutdown() {
	c.close(ErrClosed)
	<-c.readerDone
}
