package runtime

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// countingConn counts the reads and writes that reach the socket.
type countingConn struct {
	net.Conn
	reads, writes atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// mtlsPair is an internal gRPC TLS connection over loopback TCP: the
// server's side through ServerCredentials with its socket writes counted,
// and the client's side through ClientCredentials.
func mtlsPair(t testing.TB) (server net.Conn, counted *countingConn, client net.Conn) {
	t.Helper()
	dir, _ := testPKI(t)
	logger := slog.New(slog.DiscardHandler)
	srvSec := mustSecurity(t, tlsFiles(dir, "appendsvc"), logger, nil)
	cliSec := mustSecurity(t, tlsFiles(dir, "frontdoor"), logger, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	counted = &countingConn{}
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		counted.Conn = raw
		c, _, err := srvSec.ServerCredentials().ServerHandshake(counted)
		done <- result{c, err}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client, _, err = cliSec.ClientCredentials("appendsvc").ClientHandshake(context.Background(), "appendsvc", raw)
	if err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.conn.Close(); client.Close() })
	return r.conn, counted, client
}

// TestTLSWriteLeavesInOneSyscall: a 100 KiB write (seven or more TLS records) is
// one write on the socket, and arrives whole.
func TestTLSWriteLeavesInOneSyscall(t *testing.T) {
	server, counted, client := mtlsPair(t)
	msg := payload(100 << 10)
	before := counted.writes.Load()
	if n, err := server.Write(msg); err != nil || n != len(msg) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(msg))
	}
	if got := counted.writes.Load() - before; got != 1 {
		t.Errorf("%d socket writes for one 100 KiB write, want 1", got)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("the client read other bytes than were written")
	}
}

// TestCorkConnReadsAhead: what the socket holds comes in one read however
// TLS asks for it, record by record.
func TestCorkConnReadsAhead(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	msg := payload(100 << 10)
	go func() {
		_, _ = b.Write(msg) // net.Pipe hands it over in one piece
		b.Close()
	}()
	counted := &countingConn{Conn: a}
	c := newCorkConn(counted)
	got := make([]byte, 0, len(msg))
	rec := make([]byte, 16<<10+5)
	for len(got) < len(msg) {
		n, err := c.Read(rec)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec[:n]...)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("read other bytes than were written")
	}
	if r := counted.reads.Load(); r != 1 {
		t.Errorf("%d socket reads for 100 KiB that were there at once, want 1", r)
	}
}

// TestTLSWritesInOrderFromManyWriters: writes from several goroutines each
// arrive whole and the stream holds all of them, with the client writing
// back at the same time (run under -race).
func TestTLSWritesInOrderFromManyWriters(t *testing.T) {
	server, _, client := mtlsPair(t)
	const writers, each, size = 4, 20, 30 << 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				msg := bytes.Repeat([]byte{byte(w*each + i)}, size)
				if _, err := server.Write(msg); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		if _, err := client.Write(payload(64 << 10)); err != nil {
			t.Errorf("client write: %v", err)
		}
	})
	back := make([]byte, 64<<10)
	if _, err := io.ReadFull(server, back); err != nil {
		t.Fatal(err)
	}
	seen := map[byte]bool{}
	buf := make([]byte, size)
	for range writers * each {
		if _, err := io.ReadFull(client, buf); err != nil {
			t.Fatal(err)
		}
		if bytes.Count(buf, buf[:1]) != size {
			t.Fatalf("a write of %d bytes arrived mixed with another", size)
		}
		if seen[buf[0]] {
			t.Fatalf("write %d arrived twice", buf[0])
		}
		seen[buf[0]] = true
	}
	wg.Wait()
}

// TestTLSWriteFailure: when the socket is gone a write reports an error
// and no bytes, and so does every write after it.
func TestTLSWriteFailure(t *testing.T) {
	server, counted, _ := mtlsPair(t)
	counted.Conn.Close()
	for i := range 2 {
		if n, err := server.Write(payload(40 << 10)); err == nil || n != 0 {
			t.Fatalf("write %d on a closed socket = %d, %v; want 0 and an error", i, n, err)
		}
	}
}

// BenchmarkTLSWrite is one 64 KiB write of internal gRPC's TLS, with the
// client draining the socket.
func BenchmarkTLSWrite(b *testing.B) {
	server, _, client := mtlsPair(b)
	go func() { _, _ = io.Copy(io.Discard, client) }()
	msg := payload(64 << 10)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := server.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
}
