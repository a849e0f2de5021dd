// Package streampool spreads jobs over long-lived bidirectional gRPC
// streams to several backend instances (transcodesvc, appendsvc), matching
// answers to jobs by id, and moves a lost instance's unanswered jobs to the
// others while it reconnects with backoff.
package streampool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// ErrClosed is returned for jobs still open when the pool shuts down.
var ErrClosed = errors.New("streampool: closed")

// Stream is the client side of a bidi stream, as generated gRPC code
// returns it.
type Stream[Req, Resp any] interface {
	Send(Req) error
	Recv() (Resp, error)
	CloseSend() error
}

// Codec adapts a pool to one service's client C and its messages.
type Codec[C, Req, Resp any] struct {
	// Open starts a stream with client; ctx ends the stream.
	Open func(ctx context.Context, client C) (Stream[Req, Resp], error)
	// SetID stores the pool's job id in a request before it is queued.
	SetID func(req Req, id uint64)
	// ID reads the job id an answer belongs to.
	ID func(resp Resp) uint64
	// Prepare returns the message to send for req on one stream; state is
	// private to that stream and starts empty on every (re)connect. Nil:
	// send req as it is.
	Prepare func(state map[string]bool, req Req) Req
}

// Picker chooses among connected instances for a job with key. Instances
// are given in configuration order.
type Picker func(connected []*Instance, key uint64) *Instance

// LeastOutstanding picks the instance with the fewest unanswered jobs.
func LeastOutstanding(connected []*Instance, _ uint64) *Instance {
	best := connected[0]
	for _, in := range connected[1:] {
		if len(in.outstanding) < len(best.outstanding) {
			best = in
		}
	}
	return best
}

// ByKey sends every job with the same key to the same instance while the
// set of connected instances does not change, so one stream carries them
// in submission order.
func ByKey(connected []*Instance, key uint64) *Instance {
	return connected[key%uint64(len(connected))]
}

// Backend is one instance's address and client: the generated gRPC
// client over a connection, or an in-process one (single-process mode).
type Backend[C any] struct {
	Addr   string
	Client C
}

// Config tunes reconnection.
type Config struct {
	// Name appears in logs ("transcode", "append").
	Name       string
	MinBackoff time.Duration
	MaxBackoff time.Duration
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Name == "":
		return errors.New("streampool config: Name is empty")
	case c.MinBackoff <= 0:
		return fmt.Errorf("streampool config: MinBackoff %s must be positive", c.MinBackoff)
	case c.MaxBackoff < c.MinBackoff:
		return fmt.Errorf("streampool config: MaxBackoff %s is below MinBackoff %s", c.MaxBackoff, c.MinBackoff)
	}
	return nil
}

// Instance is one backend and the jobs it owes answers for. Its fields are
// guarded by the pool's mutex.
type Instance struct {
	addr        string
	client      any // the Backend's client, of the pool's type C
	connected   bool
	outstanding map[uint64]*job
	queue       []*job
	wake        chan struct{}
	// ctx ends the instance's connection loop: when the pool closes, or
	// when SetBackends drops the instance.
	ctx    context.Context
	cancel context.CancelFunc
}

func newInstance[C any](b Backend[C]) *Instance {
	return &Instance{addr: b.Addr, client: b.Client, outstanding: map[uint64]*job{}, wake: make(chan struct{}, 1)}
}

// Addr is the instance's address.
func (in *Instance) Addr() string { return in.addr }

type result[Resp any] struct {
	resp Resp
	err  error
}

type job struct {
	id       uint64
	key      uint64
	req      any
	res      chan any // result[Resp], buffered 1
	inst     *Instance
	canceled bool
}

// Pool runs one stream per backend and routes jobs over them.
type Pool[C, Req, Resp any] struct {
	cfg   Config
	codec Codec[C, Req, Resp]
	pick  Picker
	log   *slog.Logger

	mu     sync.Mutex
	insts  []*Instance
	parked []*job // no instance connected
	nextID uint64
	closed bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds a pool; Start connects it.
func New[C, Req, Resp any](cfg Config, backends []Backend[C], codec Codec[C, Req, Resp], pick Picker, log *slog.Logger) (*Pool[C, Req, Resp], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(backends) == 0 {
		return nil, fmt.Errorf("streampool %s: no backends", cfg.Name)
	}
	if codec.Open == nil || codec.SetID == nil || codec.ID == nil {
		return nil, fmt.Errorf("streampool %s: codec needs Open, SetID and ID", cfg.Name)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pool[C, Req, Resp]{cfg: cfg, codec: codec, pick: pick, log: log.With("pool", cfg.Name)}
	for _, b := range backends {
		p.insts = append(p.insts, newInstance(b))
	}
	return p, nil
}

// Start launches one connection loop per backend. It does not wait for
// them to connect: jobs submitted meanwhile wait for the first stream.
func (p *Pool[C, Req, Resp]) Start(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for _, in := range p.insts {
		p.startLocked(in)
	}
	return nil
}

// startLocked launches in's connection loop. p.mu is held.
func (p *Pool[C, Req, Resp]) startLocked(in *Instance) {
	in.ctx, in.cancel = context.WithCancel(p.ctx)
	p.wg.Add(1)
	go p.run(in)
}

// Shutdown closes every stream and fails the jobs still open.
func (p *Pool[C, Req, Resp]) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	var open []*job
	for _, in := range p.insts {
		for _, j := range in.outstanding {
			open = append(open, j)
		}
		clear(in.outstanding)
		in.queue = nil
	}
	open = append(open, p.parked...)
	p.parked = nil
	p.mu.Unlock()
	for _, j := range open {
		p.finish(j, *new(Resp), ErrClosed)
	}
	if p.cancel != nil {
		p.cancel()
	}
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Call is a submitted job.
type Call[Resp any] struct {
	j    *job
	stop func(*job)
}

// Submit queues req. Jobs with the same key submitted one after the other
// are sent in that order when ByKey picks (the append path relies on it).
func (p *Pool[C, Req, Resp]) Submit(key uint64, req Req) *Call[Resp] {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	j := &job{id: p.nextID, key: key, req: req, res: make(chan any, 1)}
	p.codec.SetID(req, j.id)
	if p.closed {
		j.res <- result[Resp]{err: ErrClosed}
	} else {
		p.place(j)
	}
	return &Call[Resp]{j: j, stop: p.forget}
}

// Do submits req and waits for its answer.
func (p *Pool[C, Req, Resp]) Do(ctx context.Context, key uint64, req Req) (Resp, error) {
	return p.Submit(key, req).Wait(ctx)
}

// Wait blocks until the answer arrives or ctx ends; in the latter case the
// job is withdrawn if it was not sent yet.
func (c *Call[Resp]) Wait(ctx context.Context) (Resp, error) {
	select {
	case r := <-c.j.res:
		rr := r.(result[Resp])
		return rr.resp, rr.err
	case <-ctx.Done():
		c.stop(c.j)
		var zero Resp
		return zero, ctx.Err()
	}
}

// place assigns j to a connected instance, or parks it. p.mu is held.
func (p *Pool[C, Req, Resp]) place(j *job) {
	connected := make([]*Instance, 0, len(p.insts))
	for _, in := range p.insts {
		if in.connected {
			connected = append(connected, in)
		}
	}
	if len(connected) == 0 {
		j.inst = nil
		p.parked = append(p.parked, j)
		return
	}
	in := p.pick(connected, j.key)
	j.inst = in
	in.outstanding[j.id] = j
	in.queue = append(in.queue, j)
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (p *Pool[C, Req, Resp]) forget(j *job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j.canceled = true
	if j.inst != nil {
		delete(j.inst.outstanding, j.id)
		return
	}
	if i := slices.Index(p.parked, j); i >= 0 {
		p.parked = slices.Delete(p.parked, i, i+1)
	}
}

func (p *Pool[C, Req, Resp]) finish(j *job, resp Resp, err error) {
	select {
	case j.res <- result[Resp]{resp: resp, err: err}:
	default: // already answered (shutdown raced with an answer)
	}
}

// Outstanding reports unanswered jobs per instance address, for tests and
// diagnostics.
func (p *Pool[C, Req, Resp]) Outstanding() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[string]int{}
	for _, in := range p.insts {
		m[in.addr] = len(in.outstanding)
	}
	m[""] = len(p.parked)
	return m
}

// run keeps one stream to in open until the pool closes.
func (p *Pool[C, Req, Resp]) run(in *Instance) {
	defer p.wg.Done()
	log := p.log.With("backend", in.addr)
	backoff := p.cfg.MinBackoff
	for in.ctx.Err() == nil {
		sctx, scancel := context.WithCancel(in.ctx)
		stream, err := p.codec.Open(sctx, in.client.(C))
		if err != nil {
			scancel()
			log.Warn("backend stream open failed; retrying", "err", err, "backoff", backoff)
			if !sleep(in.ctx, backoff) {
				return
			}
			backoff = min(2*backoff, p.cfg.MaxBackoff)
			continue
		}
		p.mu.Lock()
		in.connected = true
		// Jobs that waited for any instance go out now, in order.
		parked := p.parked
		p.parked = nil
		for _, j := range parked {
			p.place(j)
		}
		p.mu.Unlock()
		log.Info("backend stream open", "moved_in_jobs", len(parked))
		start := time.Now()

		err = p.session(sctx, scancel, in, stream)

		p.mu.Lock()
		in.connected = false
		lost := make([]*job, 0, len(in.outstanding))
		for _, j := range in.outstanding {
			lost = append(lost, j)
		}
		clear(in.outstanding)
		in.queue = nil
		// Resend in submission order, so ByKey keeps per-key order on the
		// instance that takes them over.
		slices.SortFunc(lost, func(a, b *job) int { return cmp.Compare(a.id, b.id) })
		for _, j := range lost {
			if !p.closed {
				p.place(j)
			}
		}
		p.mu.Unlock()
		if p.ctx.Err() != nil {
			return
		}
		if in.ctx.Err() != nil {
			log.Info("backend removed; unanswered jobs moved", "moved_jobs", len(lost))
			return
		}
		log.Warn("backend stream lost; unanswered jobs moved", "err", err, "moved_jobs", len(lost), "backoff", backoff)
		if time.Since(start) > p.cfg.MaxBackoff {
			backoff = p.cfg.MinBackoff // it had been healthy for a while
		}
		if !sleep(in.ctx, backoff) {
			return
		}
		backoff = min(2*backoff, p.cfg.MaxBackoff)
	}
}

// session serves one open stream until it fails.
func (p *Pool[C, Req, Resp]) session(ctx context.Context, cancel context.CancelFunc, in *Instance, stream Stream[Req, Resp]) error {
	sendDone := make(chan error, 1)
	go func() {
		err := p.sendLoop(ctx, in, stream)
		if err != nil {
			cancel() // make Recv return so the session ends
		}
		sendDone <- err
	}()
	var err error
	for {
		var resp Resp
		resp, err = stream.Recv()
		if err != nil {
			break
		}
		id := p.codec.ID(resp)
		p.mu.Lock()
		j := in.outstanding[id]
		delete(in.outstanding, id)
		p.mu.Unlock()
		if j == nil {
			continue // withdrawn by its caller, or a stray id
		}
		p.finish(j, resp, nil)
	}
	// Stop the sender before the jobs move elsewhere: a request must not
	// be on two streams at once.
	cancel()
	sendErr := <-sendDone
	if sendErr != nil && !errors.Is(sendErr, context.Canceled) {
		return fmt.Errorf("%w (send: %v)", err, sendErr)
	}
	return err
}

func (p *Pool[C, Req, Resp]) sendLoop(ctx context.Context, in *Instance, stream Stream[Req, Resp]) error {
	state := map[string]bool{}
	defer func() { _ = stream.CloseSend() }()
	for {
		p.mu.Lock()
		batch := in.queue
		in.queue = nil
		connected := in.connected
		p.mu.Unlock()
		if !connected {
			return nil
		}
		for _, j := range batch {
			p.mu.Lock()
			skip := j.canceled || j.inst != in
			p.mu.Unlock()
			if skip {
				continue
			}
			msg := j.req.(Req)
			if p.codec.Prepare != nil {
				msg = p.codec.Prepare(state, msg)
			}
			if err := stream.Send(msg); err != nil {
				// The unsent rest stays outstanding and moves with the
				// other unanswered jobs when the session ends.
				return err
			}
		}
		select {
		case <-in.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
