package runtime

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"syscall"
)

// Internal gRPC writes what it has queued in one call of up to
// transportBuffer bytes. crypto/tls cuts that into records of at most
// 16 KiB and writes each with its own system call: a 60 KiB job took four
// writes. It also reads about one record per system call. corkConn sits
// under the TLS connection: it collects the records of one TLS write, which
// tlsWriteConn, above it, sends with one system call when the write
// returns, and it reads ahead whatever the socket holds.

// corkConn is the TCP connection under a TLS connection. While corked,
// writes (the records of one TLS write) are kept in buf; uncork sends
// them. mu keeps the socket's writes in order: TLS may write an alert or a
// key update from another goroutine. Reads go through r, which TLS calls
// from one goroutine at a time.
type corkConn struct {
	net.Conn
	r *bufio.Reader

	mu     sync.Mutex
	corked int
	buf    []byte
	err    error // the first failed write; the connection is dead after it
}

// maxKeptCork bounds the buffer a connection keeps between writes; a larger
// write's buffer is dropped after use.
const maxKeptCork = 2 * transportBuffer

// newCorkConn wraps the socket conn.
func newCorkConn(conn net.Conn) *corkConn {
	return &corkConn{Conn: conn, r: bufio.NewReaderSize(conn, transportBuffer)}
}

func (c *corkConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if c.corked > 0 {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	n, err := c.Conn.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked++
	c.mu.Unlock()
}

// uncork ends one cork and sends what is buffered: records are complete
// units, so what an overlapping writer buffered may go out early, in order.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked--
	if c.err != nil || len(c.buf) == 0 {
		return c.err
	}
	if _, err := c.Conn.Write(c.buf); err != nil {
		c.err = err
	}
	if cap(c.buf) > maxKeptCork {
		c.buf = nil
	} else {
		c.buf = c.buf[:0]
	}
	return c.err
}

// tlsWriteConn is a TLS connection over a corkConn: each Write's records
// leave in one system call.
type tlsWriteConn struct {
	net.Conn // the TLS connection
	raw      *corkConn
}

func (c *tlsWriteConn) Write(p []byte) (int, error) {
	c.raw.cork()
	n, err := c.Conn.Write(p)
	if ferr := c.raw.uncork(); err == nil && ferr != nil {
		// TLS counted the buffered records as written; the socket did not
		// take them, so nothing of p is known to have left.
		return 0, ferr
	}
	return n, err
}

// SyscallConn is the socket's, as gRPC's own TLS connection offers it.
func (c *tlsWriteConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.raw.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("runtime: connection has no socket")
}
