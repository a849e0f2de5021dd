package runtime

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	goruntime "runtime"
	"time"
)

// Names of the profiling setting.
const (
	FlagPprofAddr = "pprof-addr"
	EnvPprofAddr  = "FERRY_PPROF_ADDR"
)

// validPprofAddr accepts empty (profiling off) or a listen address.
func validPprofAddr(v string) error {
	if v == "" {
		return nil
	}
	return ListenAddr(v)
}

// pprofServer serves net/http/pprof on its own listener and mux, so nothing
// else is exposed and nothing is exposed unless asked for.
type pprofServer struct {
	addr string
	lis  net.Listener
	srv  *http.Server
}

// Block and mutex profiles sample only while profiling is on: one blocking
// event per 100 µs spent blocked, one contended unlock in 10.
const (
	pprofBlockRate     = int(100 * time.Microsecond)
	pprofMutexFraction = 10
)

func newPprofServer(addr string) (*pprofServer, error) {
	lis, err := ListenTCP(addr, EnvPprofAddr, FlagPprofAddr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &pprofServer{addr: addr, lis: lis, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

func (p *pprofServer) Name() string { return "pprof " + p.addr }

func (p *pprofServer) Start(_ context.Context, host Host) error {
	goruntime.SetBlockProfileRate(pprofBlockRate)
	goruntime.SetMutexProfileFraction(pprofMutexFraction)
	go func() {
		if err := p.srv.Serve(p.lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			host.ReportFatal(err)
		}
	}()
	return nil
}

func (p *pprofServer) Shutdown(ctx context.Context) error {
	goruntime.SetBlockProfileRate(0)
	goruntime.SetMutexProfileFraction(0)
	return p.srv.Shutdown(ctx)
}
