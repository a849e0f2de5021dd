package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// serveProc is one long-lived `flusshelper serve` JVM shared by every Helper with the same
// command in this process: tests pay the JVM start once per test binary, not once per call.
// The JVM exits when its stdin closes, i.e. at the latest when this process exits.
type serveProc struct {
	stdin io.WriteCloser

	mu      sync.Mutex // guards nextID, pending and writes to stdin
	nextID  int64
	pending map[int64]chan serveResponse

	dead    chan struct{} // closed by the reader goroutine when the process is gone
	deadErr error         // why; set before dead is closed
	stderr  *tailBuffer
}

type serveRequest struct {
	ID    int64    `json:"id"`
	Args  []string `json:"args"`
	Stdin string   `json:"stdin,omitempty"`
}

type serveResponse struct {
	ID     int64  `json:"id"`
	Code   int    `json:"code"`
	Stdout string `json:"stdout"`
	Error  string `json:"error"`
}

var (
	serveMu    sync.Mutex
	serveProcs = map[string]*serveProc{}
)

// sharedServe returns the running serve process for argv, starting one if there is none or
// the previous one died.
func sharedServe(argv []string) (*serveProc, error) {
	key := strings.Join(argv, "\x00")
	serveMu.Lock()
	defer serveMu.Unlock()
	if p := serveProcs[key]; p != nil {
		select {
		case <-p.dead:
		default:
			return p, nil
		}
	}
	p, err := startServe(argv)
	if err != nil {
		return nil, err
	}
	serveProcs[key] = p
	return p, nil
}

func startServe(argv []string) (*serveProc, error) {
	cmd := exec.Command(argv[0], append(append([]string{}, argv[1:]...), "serve")...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &serveProc{stdin: stdin, pending: map[int64]chan serveResponse{}, dead: make(chan struct{}), stderr: &tailBuffer{max: 8 << 10}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start flusshelper serve: %w", err)
	}
	// The reader owns the process: it ends when stdout closes, which happens when the JVM exits
	// (after our stdin closes at process exit, or on a crash).
	go p.read(cmd, stdout)
	return p, nil
}

func (p *serveProc) read(cmd *exec.Cmd, stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	var readErr error
	for sc.Scan() {
		var r serveResponse
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			readErr = fmt.Errorf("flusshelper serve: undecodable response %.200q: %w", sc.Bytes(), err)
			break
		}
		p.mu.Lock()
		ch := p.pending[r.ID]
		delete(p.pending, r.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- r // buffered: never blocks
		}
	}
	if readErr == nil {
		readErr = sc.Err()
	}
	_ = p.stdin.Close()
	waitErr := cmd.Wait()
	msg := strings.TrimSpace(p.stderr.String())
	switch {
	case readErr != nil:
		p.deadErr = readErr
	case msg != "":
		p.deadErr = fmt.Errorf("flusshelper serve exited (%v): %s", waitErr, lastLine(msg))
	default:
		p.deadErr = fmt.Errorf("flusshelper serve exited (%v)", waitErr)
	}
	close(p.dead)
}

// call runs one command in the serve process.
func (p *serveProc) call(ctx context.Context, args []string, stdin []byte) (serveResponse, error) {
	ch := make(chan serveResponse, 1)
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	b, err := json.Marshal(serveRequest{ID: id, Args: args, Stdin: string(stdin)})
	if err == nil {
		p.pending[id] = ch
		_, err = p.stdin.Write(append(b, '\n'))
		if err != nil {
			delete(p.pending, id)
		}
	}
	p.mu.Unlock()
	if err != nil {
		return serveResponse{}, fmt.Errorf("flusshelper serve: send request: %w", err)
	}
	select {
	case r := <-ch:
		return r, nil
	case <-p.dead:
		return serveResponse{}, p.deadErr
	case <-ctx.Done():
		// The JVM finishes the command on its own; its response is dropped.
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
		return serveResponse{}, ctx.Err()
	}
}

// tailBuffer keeps the last max bytes written to it (the serve process's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
