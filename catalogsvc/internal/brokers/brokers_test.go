package brokers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func ids(bs []Broker) string {
	var s []string
	for _, b := range bs {
		s = append(s, fmt.Sprintf("%d@%s", b.NodeID, b.addr()))
	}
	return strings.Join(s, ",")
}

func TestHeartbeatLeases(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	r := NewRegistry(time.Minute, c.now)
	b1 := Broker{NodeID: 1, Host: "h1", Port: 9092}
	b2 := Broker{NodeID: 2, Host: "h2", Port: 9092}
	if isNew, err := r.Heartbeat(b2, 10*time.Second); err != nil || !isNew {
		t.Fatalf("first heartbeat = %v, %v; want new", isNew, err)
	}
	if _, err := r.Heartbeat(b1, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := ids(r.Live(nil)); got != "1@h1:9092,2@h2:9092" {
		t.Errorf("live = %s", got)
	}
	c.t = c.t.Add(10 * time.Second) // b2's lease ends exactly now
	if got := ids(r.Live(nil)); got != "1@h1:9092" {
		t.Errorf("after b2 expired: %s", got)
	}
	// Renewal extends the lease.
	if isNew, err := r.Heartbeat(b1, 20*time.Second); err != nil || isNew {
		t.Fatalf("renewal = %v, %v; want not new", isNew, err)
	}
	c.t = c.t.Add(15 * time.Second)
	if got := ids(r.Live(nil)); got != "1@h1:9092" {
		t.Errorf("after renewal: %s", got)
	}
	c.t = c.t.Add(5 * time.Second)
	if got := ids(r.Live(nil)); got != "" {
		t.Errorf("after everything expired: %s", got)
	}
}

func TestHeartbeatNodeIDConflict(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	r := NewRegistry(time.Minute, c.now)
	if _, err := r.Heartbeat(Broker{NodeID: 1, Host: "a", Port: 1}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	_, err := r.Heartbeat(Broker{NodeID: 1, Host: "b", Port: 1}, 10*time.Second)
	if !errors.Is(err, ErrNodeIDTaken) || !strings.Contains(err.Error(), "node 1 is a:1") {
		t.Fatalf("conflicting heartbeat = %v, want ErrNodeIDTaken naming the holder", err)
	}
	// Same address, new rack: fine.
	if _, err := r.Heartbeat(Broker{NodeID: 1, Host: "a", Port: 1, Rack: "r1"}, 10*time.Second); err != nil {
		t.Errorf("same address renewal = %v", err)
	}
	if got := r.Live(nil)[0].Rack; got != "r1" {
		t.Errorf("rack = %q, want r1", got)
	}
	// Once the lease ends, the id is free for a new address.
	c.t = c.t.Add(10 * time.Second)
	if _, err := r.Heartbeat(Broker{NodeID: 1, Host: "b", Port: 1}, 10*time.Second); err != nil {
		t.Errorf("after expiry = %v", err)
	}
}

func TestHeartbeatValidation(t *testing.T) {
	r := NewRegistry(time.Minute, time.Now)
	tests := []struct {
		b     Broker
		lease time.Duration
		want  string
	}{
		{Broker{NodeID: -1, Host: "h", Port: 1}, time.Second, "node id -1"},
		{Broker{NodeID: 0, Host: "", Port: 1}, time.Second, "host is empty"},
		{Broker{NodeID: 0, Host: "h", Port: 0}, time.Second, "port 0"},
		{Broker{NodeID: 0, Host: "h", Port: 70000}, time.Second, "port 70000"},
		{Broker{NodeID: 0, Host: "h", Port: 1}, 0, "lease out of range"},
		{Broker{NodeID: 0, Host: "h", Port: 1}, 2 * time.Minute, "at most 1m0s"},
	}
	for _, tt := range tests {
		_, err := r.Heartbeat(tt.b, tt.lease)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Heartbeat(%+v, %s) = %v, want error containing %q", tt.b, tt.lease, err, tt.want)
		}
	}
	if got := r.Live(nil); len(got) != 0 {
		t.Errorf("invalid heartbeats registered %v", got)
	}
}

func TestLiveIncludesSelf(t *testing.T) {
	r := NewRegistry(time.Minute, time.Now)
	_, _ = r.Heartbeat(Broker{NodeID: 3, Host: "old", Port: 1}, time.Minute)
	_, _ = r.Heartbeat(Broker{NodeID: 5, Host: "h5", Port: 1}, time.Minute)
	self := Broker{NodeID: 3, Host: "new", Port: 2}
	if got := ids(r.Live(&self)); got != "3@new:2,5@h5:1" {
		t.Errorf("live with self = %s", got)
	}
	lone := NewRegistry(time.Minute, time.Now)
	if got := ids(lone.Live(&self)); got != "3@new:2" {
		t.Errorf("lone instance = %s", got)
	}
}

func TestControllerAndLeaders(t *testing.T) {
	if Controller(nil) != -1 || Leader("t", 0, nil) != -1 {
		t.Error("no brokers should give -1")
	}
	live := []Broker{{NodeID: 2}, {NodeID: 5}, {NodeID: 9}}
	if got := Controller(live); got != 2 {
		t.Errorf("controller = %d, want 2", got)
	}
	// Consecutive partitions go round robin, so 3 partitions use 3 brokers.
	seen := map[int32]bool{}
	for p := range int32(3) {
		seen[Leader("shop.orders", p, live)] = true
	}
	if len(seen) != 3 {
		t.Errorf("3 partitions on %d brokers, want 3", len(seen))
	}
	// Deterministic, and pinned: FNV-1a("shop.orders") decides the start.
	for p := range int32(6) {
		if Leader("shop.orders", p, live) != Leader("shop.orders", p, live) {
			t.Fatal("Leader is not deterministic")
		}
		if Leader("shop.orders", p, live) != Leader("shop.orders", p+3, live) {
			t.Errorf("partition %d and %d differ with 3 brokers", p, p+3)
		}
	}
	// Single-partition topics spread over brokers by topic name.
	spread := map[int32]int{}
	for i := range 300 {
		spread[Leader(fmt.Sprintf("db.t%d", i), 0, live)]++
	}
	for _, b := range live {
		if spread[b.NodeID] < 50 {
			t.Errorf("broker %d leads %d of 300 single-partition topics", b.NodeID, spread[b.NodeID])
		}
	}
	// A lone broker leads everything.
	for p := range int32(8) {
		if got := Leader("x", p, live[1:2]); got != 5 {
			t.Errorf("lone broker: partition %d led by %d", p, got)
		}
	}
}

func BenchmarkLeader(b *testing.B) {
	live := []Broker{{NodeID: 1}, {NodeID: 2}, {NodeID: 3}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Leader("shop.orders", int32(i%64), live)
	}
}
