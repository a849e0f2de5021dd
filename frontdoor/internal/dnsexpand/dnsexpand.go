// Package dnsexpand turns configured backend addresses into one address per
// instance: a host name that resolves to several IPs (Docker Compose's
// `--scale`, a Kubernetes headless service) stands for that many
// instances, each of which frontdoor must stream to on its own so it can
// balance over them and see each fail alone.
package dnsexpand

import (
	"context"
	"net"
	"net/netip"
	"slices"
)

// Resolver is the part of net.Resolver used here.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Expander resolves a fixed list of host:port entries. It remembers each
// name's last good answer, so a failing DNS lookup keeps the instances
// known so far instead of dropping them.
type Expander struct {
	entries []string
	res     Resolver
	last    map[string][]string // entry -> its addresses from the last good lookup
}

// New returns an Expander over entries (host:port each, as validated by the
// settings). A nil res means net.DefaultResolver.
func New(entries []string, res Resolver) *Expander {
	if res == nil {
		res = net.DefaultResolver
	}
	return &Expander{entries: entries, res: res, last: map[string][]string{}}
}

// Expand returns every instance address, in entry order and sorted within
// an entry, without repeats. An IP entry stands for itself. A name that
// resolves gives one ip:port per address; one that fails to resolve gives
// its last good answer, or the name itself before any (gRPC then resolves
// it when dialing, as without expansion). errs are the lookup failures.
func (e *Expander) Expand(ctx context.Context) (addrs []string, errs []error) {
	seen := map[string]bool{}
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	for _, entry := range e.entries {
		for _, a := range e.expandOne(ctx, entry, &errs) {
			add(a)
		}
	}
	return addrs, errs
}

func (e *Expander) expandOne(ctx context.Context, entry string, errs *[]error) []string {
	host, port, err := net.SplitHostPort(entry)
	if err != nil {
		return []string{entry} // validated earlier; let the dialer report it
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return []string{entry}
	}
	ips, err := e.res.LookupNetIP(ctx, "ip", host)
	if err == nil && len(ips) == 0 {
		err = &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	if err != nil {
		*errs = append(*errs, err)
		if last, ok := e.last[entry]; ok {
			return last
		}
		return []string{entry}
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, net.JoinHostPort(ip.Unmap().String(), port))
	}
	slices.Sort(out)
	out = slices.Compact(out)
	e.last[entry] = out
	return out
}
