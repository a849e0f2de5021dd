// Package brokers keeps the live frontdoor instances, the Kafka brokers
// clients see, as leases renewed by heartbeats, and spreads partition
// leadership over them.
package brokers

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"
)

// Broker is one frontdoor instance as Kafka clients see it.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   string
}

func (b Broker) addr() string { return fmt.Sprintf("%s:%d", b.Host, b.Port) }

// Validate reports a broker clients could not connect to.
func (b Broker) Validate() error {
	switch {
	case b.NodeID < 0:
		return fmt.Errorf("node id %d: must be >= 0", b.NodeID)
	case b.Host == "":
		return fmt.Errorf("node %d: host is empty", b.NodeID)
	case b.Port < 1 || b.Port > 65535:
		return fmt.Errorf("node %d: port %d out of range 1..65535", b.NodeID, b.Port)
	}
	return nil
}

// ErrNodeIDTaken is returned by Heartbeat when another address holds the
// node id: two frontdoors advertising one id would make clients send one
// broker's partitions to the other.
var ErrNodeIDTaken = errors.New("node id is held by another broker")

// ErrBadLease is returned by Heartbeat for a lease outside the allowed range.
var ErrBadLease = errors.New("lease out of range")

type lease struct {
	broker  Broker
	expires time.Time
}

// Registry holds the brokers whose lease has not expired. Expired leases
// are dropped lazily by every call, so it needs no goroutine.
type Registry struct {
	maxLease time.Duration
	now      func() time.Time

	mu     sync.Mutex
	leases map[int32]lease
}

// NewRegistry returns an empty registry that grants leases of at most
// maxLease; now is the clock (time.Now outside tests).
func NewRegistry(maxLease time.Duration, now func() time.Time) *Registry {
	return &Registry{maxLease: maxLease, now: now, leases: map[int32]lease{}}
}

// Heartbeat registers or renews b for d and reports whether b is new (not
// registered with this address a moment ago). A node id held by a
// different address is refused until that lease expires; the same address
// may change its rack or renew at any time.
func (r *Registry) Heartbeat(b Broker, d time.Duration) (isNew bool, err error) {
	if err := b.Validate(); err != nil {
		return false, err
	}
	if d <= 0 || d > r.maxLease {
		return false, fmt.Errorf("%w: %s, want more than 0 and at most %s", ErrBadLease, d, r.maxLease)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.pruneLocked(now)
	cur, ok := r.leases[b.NodeID]
	if ok && cur.broker.addr() != b.addr() {
		return false, fmt.Errorf("%w: node %d is %s until %s, refusing %s",
			ErrNodeIDTaken, b.NodeID, cur.broker.addr(), cur.expires.UTC().Format(time.RFC3339), b.addr())
	}
	r.leases[b.NodeID] = lease{broker: b, expires: now.Add(d)}
	return !ok, nil
}

func (r *Registry) pruneLocked(now time.Time) {
	for id, l := range r.leases {
		if !now.Before(l.expires) {
			delete(r.leases, id)
		}
	}
}

// Live returns the brokers with a valid lease plus self (when non-nil),
// sorted by node id. Self replaces a registered broker with its node id:
// the instance asking knows its own address best.
func (r *Registry) Live(self *Broker) []Broker {
	r.mu.Lock()
	r.pruneLocked(r.now())
	out := make([]Broker, 0, len(r.leases)+1)
	for id, l := range r.leases {
		if self != nil && id == self.NodeID {
			continue
		}
		out = append(out, l.broker)
	}
	r.mu.Unlock()
	if self != nil {
		out = append(out, *self)
	}
	slices.SortFunc(out, func(a, b Broker) int { return int(a.NodeID) - int(b.NodeID) })
	return out
}

// Controller is the lowest live node id, -1 when there is none.
func Controller(live []Broker) int32 {
	if len(live) == 0 {
		return -1
	}
	return live[0].NodeID
}

// Leader is the node that leads partition p of topic: live must be sorted
// by node id (as Live returns it). Partitions of one topic go round robin
// from a topic-dependent start, so that many topics with few partitions
// still spread over every broker, and every catalog instance with the same
// live set answers the same.
func Leader(topic string, p int32, live []Broker) int32 {
	if len(live) == 0 {
		return -1
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(topic))
	i := (uint64(h.Sum32()) + uint64(p)) % uint64(len(live))
	return live[i].NodeID
}
