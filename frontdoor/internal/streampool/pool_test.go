package streampool

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// echoServer answers each transcode job with its id. With hold set it
// swallows jobs (a backend that hangs); with gate set it answers once the
// gate is closed.
type echoServer struct {
	transcodev1.UnimplementedTranscodeServiceServer
	hold     atomic.Bool
	gate     chan struct{}
	received atomic.Int64
	answered atomic.Int64
}

func (e *echoServer) Transcode(s grpc.BidiStreamingServer[transcodev1.TranscodeRequest, transcodev1.TranscodeResponse]) error {
	var sendMu sync.Mutex
	for {
		req, err := s.Recv()
		if err != nil {
			return err
		}
		e.received.Add(1)
		if e.hold.Load() {
			continue
		}
		go func() {
			if e.gate != nil {
				select {
				case <-e.gate:
				case <-s.Context().Done():
					return
				}
			}
			sendMu.Lock()
			defer sendMu.Unlock()
			if s.Send(&transcodev1.TranscodeResponse{JobId: req.JobId}) == nil {
				e.answered.Add(1)
			}
		}()
	}
}

func serve(t *testing.T, addr string, e *echoServer) (*grpc.Server, string) {
	t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // re-binding a just-closed port may need a moment
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	transcodev1.RegisterTranscodeServiceServer(s, e)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return s, ln.Addr().String()
}

func dial(t *testing.T, addr string) transcodev1.TranscodeServiceClient {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return transcodev1.NewTranscodeServiceClient(cc)
}

var codec = Codec[transcodev1.TranscodeServiceClient, *transcodev1.TranscodeRequest, *transcodev1.TranscodeResponse]{
	Open: func(ctx context.Context, c transcodev1.TranscodeServiceClient) (Stream[*transcodev1.TranscodeRequest, *transcodev1.TranscodeResponse], error) {
		return c.Transcode(ctx)
	},
	SetID: func(r *transcodev1.TranscodeRequest, id uint64) { r.JobId = id },
	ID:    func(r *transcodev1.TranscodeResponse) uint64 { return r.JobId },
}

func newPool(t *testing.T, pick Picker, addrs ...string) *Pool[transcodev1.TranscodeServiceClient, *transcodev1.TranscodeRequest, *transcodev1.TranscodeResponse] {
	t.Helper()
	var bs []Backend[transcodev1.TranscodeServiceClient]
	for _, a := range addrs {
		bs = append(bs, Backend[transcodev1.TranscodeServiceClient]{Addr: a, Client: dial(t, a)})
	}
	p, err := New(Config{Name: "test", MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}, bs, codec, pick, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFailoverMovesOutstandingJobs: a backend that hangs and then dies
// hands its unanswered jobs to the other one; every job gets an answer.
func TestFailoverMovesOutstandingJobs(t *testing.T) {
	a := &echoServer{}
	a.hold.Store(true)
	b := &echoServer{gate: make(chan struct{})}
	srvA, addrA := serve(t, "127.0.0.1:0", a)
	_, addrB := serve(t, "127.0.0.1:0", b)
	p := newPool(t, LeastOutstanding, addrA, addrB)
	waitFor(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.insts[0].connected && p.insts[1].connected
	})

	const jobs = 40
	var wg sync.WaitGroup
	var failed atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < jobs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Do(ctx, 0, &transcodev1.TranscodeRequest{}); err != nil {
				failed.Add(1)
			}
		}()
	}
	// Both hold their jobs, so least-outstanding spreads them.
	waitFor(t, func() bool { return a.received.Load()+b.received.Load() == jobs })
	if a.received.Load() == 0 {
		t.Fatal("least outstanding sent nothing to A")
	}
	srvA.Stop()
	close(b.gate)
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d jobs failed", failed.Load())
	}
	if b.answered.Load() != jobs {
		t.Fatalf("B answered %d jobs, want all %d (A held %d)", b.answered.Load(), jobs, a.received.Load())
	}
}

// TestReconnectAfterRestart: jobs submitted while the only backend is down
// wait, and go out once it is back.
func TestReconnectAfterRestart(t *testing.T) {
	e := &echoServer{}
	srv, addr := serve(t, "127.0.0.1:0", e)
	p := newPool(t, LeastOutstanding, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.Do(ctx, 0, &transcodev1.TranscodeRequest{}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	waitFor(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return !p.insts[0].connected
	})
	done := make(chan error, 1)
	go func() {
		_, err := p.Do(ctx, 0, &transcodev1.TranscodeRequest{})
		done <- err
	}()
	waitFor(t, func() bool { return p.Outstanding()[""] == 1 })
	serve(t, addr, e)
	if err := <-done; err != nil {
		t.Fatalf("job after restart: %v", err)
	}
}

func TestWaitCancelWithdrawsJob(t *testing.T) {
	e := &echoServer{}
	e.hold.Store(true)
	_, addr := serve(t, "127.0.0.1:0", e)
	p := newPool(t, LeastOutstanding, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Do(ctx, 0, &transcodev1.TranscodeRequest{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if n := p.Outstanding()[addr]; n != 0 {
		t.Fatalf("%d jobs still outstanding after the caller gave up", n)
	}
}

func TestShutdownFailsOpenJobs(t *testing.T) {
	e := &echoServer{}
	e.hold.Store(true)
	_, addr := serve(t, "127.0.0.1:0", e)
	p := newPool(t, LeastOutstanding, addr)
	call := p.Submit(0, &transcodev1.TranscodeRequest{})
	waitFor(t, func() bool { return e.received.Load() == 1 })
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := call.Wait(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	if _, err := p.Submit(0, &transcodev1.TranscodeRequest{}).Wait(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("submit after shutdown: %v", err)
	}
}

func TestPickers(t *testing.T) {
	a := &Instance{addr: "a", outstanding: map[uint64]*job{1: {}, 2: {}}}
	b := &Instance{addr: "b", outstanding: map[uint64]*job{3: {}}}
	if got := LeastOutstanding([]*Instance{a, b}, 0); got != b {
		t.Fatalf("LeastOutstanding picked %s", got.addr)
	}
	for key := uint64(0); key < 10; key++ {
		first := ByKey([]*Instance{a, b}, key)
		if again := ByKey([]*Instance{a, b}, key); again != first {
			t.Fatalf("ByKey not stable for key %d", key)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{MinBackoff: time.Millisecond, MaxBackoff: time.Second},
		{Name: "x", MaxBackoff: time.Second},
		{Name: "x", MinBackoff: time.Second, MaxBackoff: time.Millisecond},
	} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
