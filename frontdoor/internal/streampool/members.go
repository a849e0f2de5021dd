package streampool

import "slices"

// SetBackends makes backends the pool's instances: an address not yet in
// the pool gets a new instance (connected at once if the pool runs), and an
// instance whose address is missing is dropped: its stream ends and its
// unanswered jobs move to the others, as when an instance is lost. It
// returns the addresses added and removed; the caller closes the removed
// instances' connections. Jobs keyed with ByKey keep their order only while
// the set is stable, so change it for pools whose order does not depend on
// the instance (LeastOutstanding).
func (p *Pool[C, Req, Resp]) SetBackends(backends []Backend[C]) (added, removed []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil
	}
	want := make(map[string]Backend[C], len(backends))
	for _, b := range backends {
		want[b.Addr] = b
	}
	kept := p.insts[:0:0]
	for _, in := range p.insts {
		if _, ok := want[in.addr]; ok {
			kept = append(kept, in)
			delete(want, in.addr)
			continue
		}
		removed = append(removed, in.addr)
		if in.cancel != nil {
			in.cancel() // its run loop moves the unanswered jobs
		}
	}
	p.insts = kept
	for _, b := range backends {
		if _, ok := want[b.Addr]; !ok {
			continue // kept, or listed twice
		}
		delete(want, b.Addr)
		in := newInstance(b)
		p.insts = append(p.insts, in)
		added = append(added, b.Addr)
		if p.ctx != nil {
			p.startLocked(in)
		}
	}
	return added, removed
}

// Addrs lists the instances' addresses in order.
func (p *Pool[C, Req, Resp]) Addrs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.insts))
	for _, in := range p.insts {
		out = append(out, in.addr)
	}
	return slices.Clip(out)
}
