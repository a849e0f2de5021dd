// Package capture is a recording Kafka proxy for tests and investigations: it sits between a client
// and one broker, forwards every byte, and records the API key and version of each request plus, for
// Produce, what the batches carry (acks, codec, magic, producer id). Metadata, FindCoordinator and
// DescribeCluster responses are rewritten so the broker's address becomes the proxy's and the client
// keeps talking through it. It is how the harness learns what each real client sends by default.
//
// It handles one upstream broker only (every advertised broker is mapped to the proxy), which is
// what the harness's single-node reference broker needs.
package capture

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one recorded client request.
type Request struct {
	Conn     int          `json:"conn"`    // connection number, in accept order
	APIKey   int16        `json:"api_key"` // -1 for a raw SASL token (after SaslHandshake v0)
	API      string       `json:"api"`     // kmsg name, e.g. "Produce"
	Version  int16        `json:"version"`
	ClientID string       `json:"client_id"`
	Produce  *ProduceInfo `json:"produce,omitempty"` // set for Produce requests
}

// ProduceInfo summarizes a Produce request.
type ProduceInfo struct {
	Acks          int16       `json:"acks"`
	Transactional bool        `json:"transactional"`
	Batches       []BatchInfo `json:"batches"`
}

// BatchInfo summarizes one record batch of a Produce request.
type BatchInfo struct {
	Topic      string `json:"topic"` // name, or "id:<hex>" for Produce v13+
	Partition  int32  `json:"partition"`
	Magic      int8   `json:"magic"`
	Codec      string `json:"codec"`
	ProducerID int64  `json:"producer_id"`
	Records    int32  `json:"records"`
}

// Proxy is a running capture proxy. Stop it with Close.
type Proxy struct {
	ln       net.Listener
	upstream string
	host     string
	port     int32
	log      *slog.Logger

	mu    sync.Mutex
	reqs  []Request
	conns map[net.Conn]struct{}
	next  int

	wg     sync.WaitGroup
	closed chan struct{}
}

// Start listens on listen (e.g. "127.0.0.1:0") and proxies to upstream (host:port).
func Start(listen, upstream string, log *slog.Logger) (*Proxy, error) {
	if log == nil {
		log = slog.Default()
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("capture: listen: %w", err)
	}
	host, portStr, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(portStr)
	p := &Proxy{ln: ln, upstream: upstream, host: host, port: int32(port), log: log.With("component", "capture"),
		conns: map[net.Conn]struct{}{}, closed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address for clients' bootstrap.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Requests returns a copy of everything recorded so far.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.reqs...)
}

// WaitIdle waits until no client connection is open (every proxied client has hung up and its last
// frames were recorded), or ctx ends. A client process that exited may still have frames in flight
// to the proxy, acks=0 Produce requests in particular.
func (p *Proxy) WaitIdle(ctx context.Context) error {
	for {
		p.mu.Lock()
		n := len(p.conns)
		p.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("capture: %d connections still open: %w", n/2, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Reset forgets the recorded requests.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.reqs = nil
	p.mu.Unlock()
}

// Close stops accepting, closes every proxied connection and waits for the goroutines.
func (p *Proxy) Close() error {
	select {
	case <-p.closed:
		return nil
	default:
	}
	close(p.closed)
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		select {
		case <-p.closed:
			return false
		default:
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			select {
			case <-p.closed:
			default:
				p.log.Error("accept failed", "err", err)
			}
			return
		}
		p.mu.Lock()
		p.next++
		n := p.next
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(n, c)
		}()
	}
}

// pendingResp is what the response side needs to know about each request that gets a response,
// in order (Kafka answers requests on one connection in order).
type pendingResp struct {
	key     int16 // -1: raw SASL token
	version int16
}

func (p *Proxy) serve(n int, client net.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	upstream, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.upstream)
	cancel()
	if err != nil {
		p.log.Error("dial upstream failed", "upstream", p.upstream, "err", err)
		_ = client.Close()
		return
	}
	if !p.track(client, true) || !p.track(upstream, true) {
		_ = client.Close()
		_ = upstream.Close()
		return
	}
	defer func() {
		p.track(client, false)
		p.track(upstream, false)
	}()
	pend := make(chan pendingResp, 4096)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer upstream.Close()
		defer close(pend)
		if err := p.requests(n, client, upstream, pend); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			p.log.Warn("request side ended", "conn", n, "err", err)
		}
	}()
	go func() {
		defer wg.Done()
		defer client.Close()
		if err := p.responses(upstream, client, pend); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			p.log.Warn("response side ended", "conn", n, "err", err)
		}
	}()
	wg.Wait()
}

const maxFrame = 256 << 20

func readFrame(r io.Reader) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || n > maxFrame {
		return nil, fmt.Errorf("frame size %d out of range", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

func writeFrame(w io.Writer, b []byte) error {
	out := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(out, uint32(len(b)))
	_, err := w.Write(append(out, b...))
	return err
}

func (p *Proxy) requests(n int, client, upstream net.Conn, pend chan<- pendingResp) error {
	rawNext := false
	for {
		frame, err := readFrame(client)
		if err != nil {
			return err
		}
		if rawNext {
			// The SASL token after SaslHandshake v0 travels without a request header.
			rawNext = false
			p.record(Request{Conn: n, APIKey: -1, API: "raw SASL token", Version: -1})
			pend <- pendingResp{key: -1}
			if err := writeFrame(upstream, frame); err != nil {
				return err
			}
			continue
		}
		req, err := parseRequest(frame)
		if err != nil {
			return err
		}
		req.Conn = n
		p.record(req)
		if !(req.APIKey == 0 && req.Produce != nil && req.Produce.Acks == 0) { // acks=0: no response
			pend <- pendingResp{key: req.APIKey, version: req.Version}
		}
		if req.APIKey == 17 && req.Version == 0 { // SaslHandshake v0
			rawNext = true
		}
		if err := writeFrame(upstream, frame); err != nil {
			return err
		}
	}
}

func (p *Proxy) record(r Request) {
	p.mu.Lock()
	p.reqs = append(p.reqs, r)
	p.mu.Unlock()
}

// parseRequest reads the request header (v1 or v2) and, for Produce, the body.
func parseRequest(frame []byte) (Request, error) {
	if len(frame) < 10 {
		return Request{}, fmt.Errorf("request of %d bytes is shorter than a header", len(frame))
	}
	r := Request{APIKey: int16(binary.BigEndian.Uint16(frame)), Version: int16(binary.BigEndian.Uint16(frame[2:]))}
	r.API = kmsg.NameForKey(r.APIKey)
	off := 8
	idLen := int(int16(binary.BigEndian.Uint16(frame[off:])))
	off += 2
	if idLen > 0 {
		if off+idLen > len(frame) {
			return r, errors.New("client id overruns the request")
		}
		r.ClientID = string(frame[off : off+idLen])
		off += idLen
	}
	body := kmsg.RequestForKey(r.APIKey)
	if body == nil {
		return r, nil // unknown API: forwarded, recorded by key only
	}
	body.SetVersion(r.Version)
	// ApiVersions requests keep the flexible header v2 only from v3; every flexible request has a
	// tagged-field section after the client id.
	if body.IsFlexible() {
		var err error
		if off, err = skipTags(frame, off); err != nil {
			return r, err
		}
	}
	if r.APIKey != 0 {
		return r, nil
	}
	pr := body.(*kmsg.ProduceRequest)
	if err := pr.ReadFrom(frame[off:]); err != nil {
		return r, fmt.Errorf("produce v%d body: %w", r.Version, err)
	}
	info := &ProduceInfo{Acks: pr.Acks, Transactional: pr.TransactionID != nil}
	for _, t := range pr.Topics {
		topic := t.Topic
		if r.Version >= 13 { // KIP-516: Produce v13+ names topics by id only
			topic = fmt.Sprintf("id:%x", t.TopicID)
		}
		for _, part := range t.Partitions {
			b := part.Records
			for len(b) >= 61 {
				l := int(int32(binary.BigEndian.Uint32(b[8:])))
				if l < 49 || 12+l > len(b) {
					break
				}
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(b[:12+l]); err != nil {
					break
				}
				info.Batches = append(info.Batches, BatchInfo{Topic: topic, Partition: part.Partition, Magic: rb.Magic,
					Codec: codecName(rb.Attributes & 7), ProducerID: rb.ProducerID, Records: rb.NumRecords})
				b = b[12+l:]
			}
		}
	}
	r.Produce = info
	return r, nil
}

func codecName(c int16) string {
	switch c {
	case 0:
		return "none"
	case 1:
		return "gzip"
	case 2:
		return "snappy"
	case 3:
		return "lz4"
	case 4:
		return "zstd"
	}
	return "codec(" + strconv.Itoa(int(c)) + ")"
}

// skipTags skips a tagged-field section starting at off.
func skipTags(b []byte, off int) (int, error) {
	n, k := binary.Uvarint(b[off:])
	if k <= 0 {
		return off, errors.New("bad tagged field count")
	}
	off += k
	for range n {
		_, k = binary.Uvarint(b[off:])
		if k <= 0 {
			return off, errors.New("bad tag")
		}
		off += k
		sz, k := binary.Uvarint(b[off:])
		if k <= 0 || off+k+int(sz) > len(b) {
			return off, errors.New("bad tag size")
		}
		off += k + int(sz)
	}
	return off, nil
}

func (p *Proxy) responses(upstream, client net.Conn, pend <-chan pendingResp) error {
	for {
		frame, err := readFrame(upstream)
		if err != nil {
			return err
		}
		pr, ok := <-pend
		if !ok {
			return errors.New("response without a request")
		}
		switch pr.key {
		case 3, 10, 60: // Metadata, FindCoordinator, DescribeCluster carry broker addresses
			if frame, err = p.rewrite(frame, pr); err != nil {
				return err
			}
		}
		if err := writeFrame(client, frame); err != nil {
			return err
		}
	}
}

// rewrite points every broker address in a response at the proxy.
func (p *Proxy) rewrite(frame []byte, pr pendingResp) ([]byte, error) {
	resp := kmsg.ResponseForKey(pr.key)
	resp.SetVersion(pr.version)
	hdr := 4 // correlation id
	if resp.IsFlexible() {
		var err error
		if hdr, err = skipTags(frame, hdr); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(frame[hdr:]); err != nil {
		return nil, fmt.Errorf("%s v%d response: %w", kmsg.NameForKey(pr.key), pr.version, err)
	}
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			r.Brokers[i].Host, r.Brokers[i].Port = p.host, p.port
		}
	case *kmsg.FindCoordinatorResponse:
		if r.Host != "" {
			r.Host, r.Port = p.host, p.port
		}
		for i := range r.Coordinators {
			r.Coordinators[i].Host, r.Coordinators[i].Port = p.host, p.port
		}
	case *kmsg.DescribeClusterResponse:
		for i := range r.Brokers {
			r.Brokers[i].Host, r.Brokers[i].Port = p.host, p.port
		}
	}
	return resp.AppendTo(append([]byte(nil), frame[:hdr]...)), nil
}
