package kafka

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"
)

// Session is the per-connection state handlers see. It is only changed on
// the connection's read loop (by inline Serve calls), so handlers read it
// without locks.
type Session struct {
	Remote   string
	ClientID string
	Log      *slog.Logger

	authenticated bool
	// User is the authenticated SASL user, "" without SASL.
	User string
	// allowTopic, when set, limits which topics the user may use (the
	// topic list of the SASL/PLAIN users file).
	allowTopic func(topic string) bool
	// authz, when set, is the server's ACLs; denied counts refusals.
	Authz  Authorizer
	Denied func(ctx context.Context, op acl.Operation)
	// SASL progress: the mechanism chosen by SaslHandshake and whether
	// the next frame is a raw token (handshake v0).
	mechanism   string
	rawSASLNext bool
	// pending: a SaslHandshake awaits its SaslAuthenticate.
	pending bool
	// expires ends an authenticated session whose credential runs out
	// (an OAUTHBEARER token); zero: never.
	expires time.Time
	// scram is the SCRAM conversation between its first and final message.
	scram ScramExchange
}

// MayDo returns whether the session's principal may do op to a topic,
// under the users file's topic list and the ACLs. It reads the session once,
// so handlers that finish off the read loop can keep it.
func (s *Session) MayDo(op acl.Operation) func(topic string) bool {
	allowTopic, authz, principal := s.allowTopic, s.Authz, acl.Principal(s.User)
	return func(topic string) bool {
		return (allowTopic == nil || allowTopic(topic)) && (authz == nil || authz.Allowed(principal, op, topic))
	}
}

// MayDoGroup is mayDo for consumer groups: only the ACLs decide (the users
// file's allow-list names topics).
func (s *Session) MayDoGroup(op acl.Operation) func(group string) bool {
	authz, principal := s.Authz, acl.Principal(s.User)
	return func(group string) bool { return authz == nil || authz.AllowedGroup(principal, op, group) }
}

// Refused logs and counts a topic refused to the session's principal.
func (s *Session) Refused(ctx context.Context, op acl.Operation, topic string) {
	s.Log.Warn("not authorized", "principal", acl.Principal(s.User), "operation", op.String(), "topic", topic)
	if s.Denied != nil {
		s.Denied(ctx, op)
	}
}

// AuthorizeTopics sorts the topics a request names (name gives each
// entry's) into those the session may do op to and those it may not,
// logging and counting each refused topic once.
func AuthorizeTopics[T any](ctx context.Context, s *Session, op acl.Operation, topics []T, name func(T) string) (allowed []string, denied map[string]bool) {
	may := s.MayDo(op)
	denied = map[string]bool{}
	allowed = make([]string, 0, len(topics))
	for _, t := range topics {
		n := name(t)
		if denied[n] {
			continue
		}
		if !may(n) {
			s.Refused(ctx, op, n)
			denied[n] = true
			continue
		}
		allowed = append(allowed, n)
	}
	return allowed, denied
}

// RefusedGroup logs and counts a consumer group refused to the session's
// principal.
func (s *Session) RefusedGroup(ctx context.Context, op acl.Operation, group string) {
	s.Log.Warn("not authorized", "principal", acl.Principal(s.User), "operation", op.String(), "group", group)
	if s.Denied != nil {
		s.Denied(ctx, op)
	}
}

// AuthorizeTransactionalID checks the principal's permission for a
// transactional id, logging and counting a refusal. It reads the session:
// call it from Serve.
func AuthorizeTransactionalID(ctx context.Context, s *Session, op acl.Operation, id string) *kerr.Error {
	if s.Authz == nil || s.Authz.AllowedTransactionalID(acl.Principal(s.User), op, id) {
		return nil
	}
	s.Log.Warn("not authorized", "principal", acl.Principal(s.User), "operation", op.String(), "transactional_id", id)
	if s.Denied != nil {
		s.Denied(ctx, op)
	}
	return kerr.TransactionalIDAuthorizationFailed
}

// pending is one read request awaiting its response slot.
type pending struct {
	corr  int32
	key   int16
	ver   int16
	done  chan struct{}
	resp  kmsg.Response
	raw   []byte
	skip  bool // nothing to write
	err   error
	ready bool // resp/raw set at enqueue time; done is not used
	close bool // close the connection after writing
}

type conn struct {
	srv  *Server
	nc   net.Conn
	log  *slog.Logger
	sess *Session

	ctx    context.Context
	cancel context.CancelFunc

	queue      chan *pending
	budget     *semaphore.Weighted // request bytes
	workBudget *semaphore.Weighted // their decoded cost (requestShape)
	inflight   atomic.Int64        // requests read and not yet finished
	work       sync.WaitGroup

	closeOnce sync.Once
	draining  atomic.Bool
	// clientID mirrors sess.ClientID for goroutines other than the read
	// loop (the writer and handlers close connections too).
	clientID atomic.Pointer[string]
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	remote := nc.RemoteAddr().String()
	log := s.log.With("remote", remote)
	return &conn{
		srv: s,
		nc:  nc,
		log: log,
		sess: &Session{Remote: remote, Log: log, authenticated: !s.authRequired,
			Authz: s.authz, Denied: s.metrics.authorizationDenied},
		ctx:    ctx,
		cancel: cancel,
		queue:  make(chan *pending, s.cfg.MaxInFlightRequests),
		budget: semaphore.NewWeighted(s.cfg.ConnInFlightBytes),
		// Work and bytes are budgeted alike (see requestShape).
		workBudget: semaphore.NewWeighted(WorkBudgetSize(s.cfg.ConnInFlightBytes)),
	}
}

// closeWith closes the socket once, logging why at info level: the
// server ended the connection (bad input, idle, failure).
func (c *conn) closeWith(reason string, attrs ...any) {
	c.closeAt(slog.LevelInfo, reason, attrs...)
}

// closeAt closes the socket once, logging at level; ordinary ends (the
// client hung up, a drained connection) are debug so that short-lived
// clients do not flood the log.
func (c *conn) closeAt(level slog.Level, reason string, attrs ...any) {
	c.closeOnce.Do(func() {
		id := ""
		if p := c.clientID.Load(); p != nil {
			id = *p
		}
		c.log.Log(context.Background(), level, "kafka connection closed",
			append([]any{"reason", reason, "client_id", id}, attrs...)...)
		c.cancel()
		_ = c.nc.Close()
	})
}

// drain asks the connection to stop reading and close once every request
// it read has been answered.
func (c *conn) drain() {
	c.draining.Store(true)
	// Wake a reader blocked on the socket; it then sees draining.
	_ = c.nc.SetReadDeadline(time.Now())
}

func (c *conn) serve() {
	defer c.srv.removeConn(c)
	c.log.Debug("kafka connection opened")
	if tc, ok := c.nc.(*tls.Conn); ok && !c.handshake(tc) {
		c.cancel()
		return
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	close(c.queue)
	<-writerDone
	// Handlers own request resources (budget, sequencer tickets) and run
	// to completion even after the client left; the connection counts as
	// open until they are done, so a drain waits for them.
	c.work.Wait()
	c.closeAt(slog.LevelDebug, "done")
	c.cancel()
}

// handshake completes TLS before the first request, so that a client
// certificate authenticates the connection from its start. A failed
// handshake (an untrusted or missing client certificate with mTLS, a
// plaintext client) closes the connection with a log line and a count.
func (c *conn) handshake(tc *tls.Conn) bool {
	ctx, cancel := context.WithTimeout(c.ctx, c.srv.cfg.IdleTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.srv.metrics.tlsFailed(c.ctx)
		c.closeAt(slog.LevelWarn, "tls handshake failed", "err", err)
		return false
	}
	certs := tc.ConnectionState().PeerCertificates
	if c.srv.certPrincipal == nil || len(certs) == 0 {
		return true
	}
	name, err := c.srv.certPrincipal(certs[0])
	if err != nil {
		c.srv.metrics.tlsFailed(c.ctx)
		c.closeAt(slog.LevelWarn, "client certificate names no principal", "err", err)
		return false
	}
	c.sess.User = name
	c.sess.Log = c.sess.Log.With("user", name)
	c.sess.Log.Info("authenticated by client certificate", "subject", certs[0].Subject.String())
	return true
}

// readLoop reads, decodes and dispatches requests until the connection
// fails, is closed, or drains.
func (c *conn) readLoop() {
	var sizeBuf [4]byte
	got := 0
	for {
		if c.draining.Load() || c.ctx.Err() != nil {
			return
		}
		if got == 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
			// drain may have set its wake-up deadline just before ours.
			if c.draining.Load() {
				return
			}
		}
		n, err := c.nc.Read(sizeBuf[got:])
		got += n
		if err != nil {
			if c.draining.Load() {
				return
			}
			if isTimeout(err) {
				switch {
				case got > 0:
					c.closeWith("request stalled inside its size field", "idle_timeout", c.srv.cfg.IdleTimeout)
					return
				case c.inflight.Load() > 0:
					continue // busy, not idle: wait again with a fresh deadline
				}
				c.closeWith("idle timeout", "idle_timeout", c.srv.cfg.IdleTimeout)
				return
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.closeWith("read failed", "err", err)
			} else {
				c.closeAt(slog.LevelDebug, "closed by client")
			}
			return
		}
		if got < 4 {
			continue
		}
		got = 0
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size < 0 || size > c.srv.cfg.MaxRequestBytes {
			c.closeWith("request size out of range", "size", size, "max_request_bytes", c.srv.cfg.MaxRequestBytes)
			return
		}
		// Hold the bytes against both budgets before reading them: while
		// a budget is spent we stop reading and TCP pushes back.
		if err := c.budget.Acquire(c.ctx, int64(size)); err != nil {
			return
		}
		if err := c.srv.inflight.Acquire(c.ctx, int64(size)); err != nil {
			c.budget.Release(int64(size))
			return
		}
		release := func() {
			c.srv.inflight.Release(int64(size))
			c.budget.Release(int64(size))
		}
		if c.draining.Load() {
			// Shutdown began while we waited for budget: take no more.
			release()
			return
		}
		frame := make([]byte, size)
		_ = c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
		if _, err := io.ReadFull(c.nc, frame); err != nil {
			release()
			if !c.draining.Load() {
				c.closeWith("request truncated", "size", size, "err", err)
			}
			return
		}
		if !c.dispatch(frame, release) {
			return
		}
	}
}

// dispatch decodes one frame and hands it to its handler. It returns false
// when the connection must stop.
func (c *conn) dispatch(frame []byte, release func()) bool {
	start := time.Now()
	if c.sess.rawSASLNext {
		// Handshake v0: the frame is a bare SASL token, not a request.
		c.sess.rawSASLNext = false
		raw, err := authenticateRaw(c.srv, c.sess, frame)
		release()
		if err != nil {
			c.srv.metrics.saslFailed(c.ctx)
			c.closeWith("sasl authentication failed", "err", err)
			return false
		}
		return c.enqueue(&pending{raw: raw, ready: true, key: -1})
	}

	req, release, ok := c.admit(frame, release)
	if !ok {
		return false
	}
	h := req.Header
	if h.ClientID != nil && c.sess.ClientID != *h.ClientID {
		// Clients send the same id on every request; log it once known.
		c.sess.ClientID = *h.ClientID
		c.sess.Log = c.log.With("client_id", c.sess.ClientID)
		if c.sess.User != "" {
			c.sess.Log = c.sess.Log.With("user", c.sess.User)
		}
		c.clientID.Store(h.ClientID)
	}
	api := c.srv.Reg.Lookup(h.Key)
	if !c.sess.authenticated && !api.PreAuth {
		// As Kafka does: anything but the SASL exchange before
		// authentication ends the connection.
		release()
		c.srv.metrics.requestDone(c.ctx, h.Key, start, nil, errNotAuthenticated)
		c.closeWith("request before SASL authentication", "api", kmsg.NameForKey(h.Key))
		return false
	}
	if !api.PreAuth && c.sess.expired(time.Now()) {
		// KIP-368: a client that did not re-authenticate in time loses
		// the connection, and authenticates anew on the next one.
		release()
		c.srv.metrics.requestDone(c.ctx, h.Key, start, nil, errSessionExpired)
		c.closeWith("sasl session expired", "api", kmsg.NameForKey(h.Key), "expired", c.sess.expires)
		return false
	}

	ctx, span := c.srv.tracer.Start(c.ctx, api.spanName, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("messaging.system", "kafka"),
			attribute.Int("kafka.api_version", int(h.Version)),
			attribute.Int("kafka.correlation_id", int(h.CorrelationID)),
			attribute.String("messaging.client.id", c.sess.ClientID),
			attribute.String("network.peer.address", c.sess.Remote),
		))
	reply, err := api.Serve(ctx, c.sess, req)
	if err != nil {
		release()
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.End()
		c.srv.metrics.requestDone(ctx, h.Key, start, nil, err)
		c.closeWith("request refused", "api", kmsg.NameForKey(h.Key), "err", err)
		return false
	}
	p := &pending{corr: h.CorrelationID, key: h.Key, ver: h.Version}
	if reply.Later == nil {
		p.resp, p.raw, p.skip, p.ready, p.close = reply.Resp, reply.Raw, reply.NoResponse, true, reply.CloseAfter
		release()
		span.End()
		c.srv.metrics.requestDone(ctx, h.Key, start, reply.Resp, nil)
		return c.enqueue(p)
	}
	p.done = make(chan struct{})
	p.skip = reply.NoResponse
	c.inflight.Add(1)
	c.work.Add(1)
	// The work of a request outlives its connection, as on a Kafka broker:
	// a producer that sends with acks=0 and disconnects at once still has
	// its batch written. Handlers bound themselves with the request's own
	// timeout; only a shutdown past its deadline cuts them short.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	stopLink := context.AfterFunc(c.srv.hardStop, hcancel)
	go func() {
		defer c.work.Done()
		defer c.inflight.Add(-1)
		defer span.End()
		defer release()
		defer hcancel()
		defer stopLink()
		resp, err := reply.Later(hctx)
		c.srv.metrics.requestDone(hctx, h.Key, start, resp, err)
		p.resp, p.err = resp, err
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		close(p.done)
		if p.skip && err != nil {
			c.closeWith("request failed without response", "api", kmsg.NameForKey(h.Key), "err", err)
		}
	}()
	if !c.enqueue(p) {
		return false
	}
	return true
}

// admit decodes a request frame once its work cost is held. The cost is
// read from the frame's shape before kmsg decodes it, so a request that
// would expand far beyond its bytes (a million partition entries in 8 MB)
// waits for budget like a large one, and one that could never fit the
// connection's budget is refused without being decoded. The release it
// returns gives back the bytes and the work.
func (c *conn) admit(frame []byte, releaseBytes func()) (Request, func(), bool) {
	r, req, body, err := readHeader(frame, c.srv.Reg)
	var shape requestShape
	if err == nil && body != nil {
		shape, err = ShapeOf(r.Header.Key, r.Header.Version, body)
	}
	if err != nil {
		releaseBytes()
		c.closeWith("bad request", "err", err, "api_key", r.Header.Key, "api_version", r.Header.Version,
			"correlation_id", r.Header.CorrelationID)
		return r, nil, false
	}
	cost, limit := shape.cost(), WorkBudgetSize(c.srv.cfg.ConnInFlightBytes)
	if shape.elemsCost() > limit {
		// Kafka closes a connection whose request exceeds
		// socket.request.max.bytes; this is the same limit on what the
		// request expands to.
		releaseBytes()
		c.closeAt(slog.LevelWarn, "request refused: serving it would exceed the connection's in-flight budget",
			"api", kmsg.NameForKey(r.Header.Key), "size", len(frame), "elements", shape.Elems,
			"cost", shape.elemsCost(), "work_budget", limit, "correlation_id", r.Header.CorrelationID)
		return r, nil, false
	}
	// The fixed part of the cost (bookkeeping, workers) is capped at the
	// budget: a request within the limit must always be admissible.
	cost = min(cost, limit)
	// While the work budgets are spent the read loop waits here, as it
	// waits for byte budget: TCP pushes back on the client. Holders of
	// work budget are admitted requests, which never wait for anything a
	// reader holds, so waiting while holding bytes cannot deadlock.
	if err := c.workBudget.Acquire(c.ctx, cost); err != nil {
		releaseBytes()
		return r, nil, false
	}
	if err := c.srv.work.Acquire(c.ctx, cost); err != nil {
		c.workBudget.Release(cost)
		releaseBytes()
		return r, nil, false
	}
	release := func() {
		c.srv.work.Release(cost)
		c.workBudget.Release(cost)
		releaseBytes()
	}
	if body != nil {
		if r, err = decodeBody(r, req, body); err != nil {
			release()
			c.closeWith("bad request", "err", err, "api_key", r.Header.Key, "api_version", r.Header.Version,
				"correlation_id", r.Header.CorrelationID)
			return r, nil, false
		}
	}
	return r, release, true
}

// enqueue puts p in the response order; it blocks while the connection
// has MaxInFlightRequests outstanding, which stops reading.
func (c *conn) enqueue(p *pending) bool {
	select {
	case c.queue <- p:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// writeLoop writes responses in request order.
func (c *conn) writeLoop() {
	var buf []byte
	for p := range c.queue {
		if !p.ready {
			if p.skip {
				continue // acks=0: answered by nothing, in order
			}
			select {
			case <-p.done:
			case <-c.ctx.Done():
				continue // drain the queue so serve can finish
			}
			if p.err != nil {
				c.closeWith("request failed", "api", kmsg.NameForKey(p.key), "err", p.err)
				continue
			}
		}
		if p.skip || c.ctx.Err() != nil {
			continue
		}
		buf = buf[:0]
		switch {
		case p.raw != nil:
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(p.raw)))
			buf = append(buf, p.raw...)
		case p.resp != nil:
			buf = AppendResponse(buf, p.corr, p.resp)
		default:
			c.closeWith("handler returned no response", "api", kmsg.NameForKey(p.key))
			continue
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
		if _, err := c.nc.Write(buf); err != nil {
			c.closeWith("write failed", "err", err)
			continue
		}
		if p.close {
			c.closeWith("closed after response", "api", kmsg.NameForKey(p.key))
			continue
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not pin a rare huge response buffer
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
