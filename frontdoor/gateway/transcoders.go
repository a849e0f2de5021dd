package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/dnsexpand"
	"github.com/ferrygw/ferry/frontdoor/internal/streampool"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/runtime"
)

// transcoderSet keeps the transcode pool's instances in step with DNS: each
// configured name stands for every address it resolves to, re-resolved
// every interval, so scaling transcodesvc out or in needs no frontdoor
// restart. It owns the instances' connections.
type transcoderSet struct {
	exp      *dnsexpand.Expander
	dial     func(addr string) (*grpc.ClientConn, error)
	interval time.Duration
	log      *slog.Logger

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
	pool  *backends.Transcoder

	stop chan struct{}
	done chan struct{}
}

func newTranscoderSet(entries []string, interval time.Duration, tel *runtime.Telemetry, sec *runtime.TransportSecurity, log *slog.Logger) *transcoderSet {
	return &transcoderSet{
		exp: dnsexpand.New(entries, nil),
		// Dialled by IP after expansion: mTLS checks the certificate names
		// transcodesvc, not the address.
		dial:     func(addr string) (*grpc.ClientConn, error) { return runtime.Dial(addr, "transcodesvc", tel, sec) },
		interval: interval,
		log:      log,
		conns:    map[string]*grpc.ClientConn{},
	}
}

// backends resolves the configured entries and dials the instances not
// connected yet.
func (s *transcoderSet) backends(ctx context.Context) ([]streampool.Backend[transcodev1.TranscodeServiceClient], error) {
	addrs, errs := s.exp.Expand(ctx)
	for _, err := range errs {
		s.log.Warn("transcodesvc address lookup failed; keeping the instances known so far", "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]streampool.Backend[transcodev1.TranscodeServiceClient], 0, len(addrs))
	for _, a := range addrs {
		cc := s.conns[a]
		if cc == nil {
			var err error
			if cc, err = s.dial(a); err != nil {
				return nil, err
			}
			s.conns[a] = cc
		}
		out = append(out, streampool.Backend[transcodev1.TranscodeServiceClient]{Addr: a, Client: transcodev1.NewTranscodeServiceClient(cc)})
	}
	return out, nil
}

// refresh applies the current DNS answer to the pool and closes the
// connections of instances that are gone.
func (s *transcoderSet) refresh(ctx context.Context) {
	bs, err := s.backends(ctx)
	if err != nil {
		s.log.Warn("transcodesvc instance not dialable", "err", err)
		return
	}
	added, removed := s.pool.SetBackends(bs)
	s.mu.Lock()
	for _, a := range removed {
		if cc := s.conns[a]; cc != nil {
			_ = cc.Close()
			delete(s.conns, a)
		}
	}
	s.mu.Unlock()
	if len(added)+len(removed) > 0 {
		s.log.Info("transcodesvc instances changed", "added", added, "removed", removed, "instances", len(bs))
	}
}

// Start re-resolves every interval until Shutdown (never with interval 0).
func (s *transcoderSet) Start(context.Context, runtime.Host) error {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	if s.interval <= 0 {
		close(s.done)
		return nil
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), s.interval)
				s.refresh(ctx)
				cancel()
			}
		}
	}()
	return nil
}

// Shutdown stops re-resolving and closes every connection; it runs after
// the pool's shutdown (components stop in reverse order).
func (s *transcoderSet) Shutdown(ctx context.Context) error {
	if s.stop != nil {
		close(s.stop)
		select {
		case <-s.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for a, cc := range s.conns {
		_ = cc.Close()
		delete(s.conns, a)
	}
	return nil
}

func (s *transcoderSet) Name() string { return "transcode-instances" }
