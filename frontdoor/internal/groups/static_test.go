package groups

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func staticReq(instance string) JoinRequest {
	r := joinReq("")
	r.InstanceID = instance
	return r
}

// stableStatic returns a coordinator whose group "g" has two static
// members a and b in a Stable generation, each with its assignment, and
// the count of rebalances so far.
func stableStatic(t *testing.T) (*Coordinator, *atomic.Int32, map[string]JoinResult) {
	t.Helper()
	var rebalances atomic.Int32
	c := New(Config{InitialRebalanceDelay: 50 * time.Millisecond, OnRebalance: func(string) { rebalances.Add(1) }}, &memStore{}, nil)
	res := joinAll(t, c, staticReq("a"), staticReq("b"))
	byInstance := map[string]JoinResult{}
	var leader JoinResult
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("static join: %v", r.Err)
		}
		byInstance[[]string{"a", "b"}[i]] = r
		if r.MemberID == r.Leader {
			leader = r
		}
	}
	if len(leader.Members) != 2 || leader.Members[0].InstanceID == "" {
		t.Fatalf("leader's view: %+v", leader)
	}
	assign := map[string][]byte{}
	for inst, r := range byInstance {
		assign[r.MemberID] = []byte("parts-of-" + inst)
	}
	for inst, r := range byInstance {
		if r.MemberID == leader.MemberID {
			continue
		}
		go func() {
			if s := c.Sync(context.Background(), SyncRequest{Group: "g", MemberID: r.MemberID, InstanceID: inst, Generation: r.Generation}); s.Err != nil {
				t.Errorf("follower sync: %v", s.Err)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if s := c.Sync(context.Background(), SyncRequest{Group: "g", MemberID: leader.MemberID, Generation: leader.Generation, Assignments: assign}); s.Err != nil {
		t.Fatal(s.Err)
	}
	if d := describe(c, "g"); d.State != Stable {
		t.Fatalf("state %s", d.State)
	}
	return c, &rebalances, byInstance
}

// TestStaticRejoinKeepsAssignment: a static member that restarts (joins
// with its instance id and no member id) gets a new member id, the current
// generation, a leader id that is not its own, and its old assignment from
// SyncGroup; no rebalance starts, the other member's heartbeats stay fine,
// and the old member id is fenced.
func TestStaticRejoinKeepsAssignment(t *testing.T) {
	c, rebalances, before := stableStatic(t)
	ctx := context.Background()
	for _, inst := range []string{"a", "b"} { // the leader and the follower
		old := before[inst]
		n := rebalances.Load()
		res := c.Join(ctx, staticReq(inst))
		if res.Err != nil || res.MemberID == old.MemberID || res.Generation != old.Generation || res.Leader == res.MemberID || len(res.Members) != 0 {
			t.Fatalf("%s rejoins: %+v (was %+v)", inst, res, old)
		}
		s := c.Sync(ctx, SyncRequest{Group: "g", MemberID: res.MemberID, InstanceID: inst, Generation: res.Generation})
		if s.Err != nil || string(s.Assignment) != "parts-of-"+inst {
			t.Fatalf("%s syncs: %+v", inst, s)
		}
		if rebalances.Load() != n || describe(c, "g").State != Stable {
			t.Fatalf("%s's restart rebalanced the group: %d rebalances, state %s", inst, rebalances.Load()-n, describe(c, "g").State)
		}
		if e := c.Heartbeat("g", old.MemberID, inst, old.Generation); e != kerr.FencedInstanceID {
			t.Errorf("old member of %s heartbeats: %v, want FENCED_INSTANCE_ID", inst, e)
		}
		if e := c.Commit(ctx, CommitRequest{Group: "g", MemberID: old.MemberID, InstanceID: inst, Generation: old.Generation}); e != kerr.FencedInstanceID {
			t.Errorf("old member of %s commits: %v, want FENCED_INSTANCE_ID", inst, e)
		}
		if e := c.Heartbeat("g", res.MemberID, inst, res.Generation); e != nil {
			t.Errorf("new member of %s heartbeats: %v", inst, e)
		}
		before[inst] = res
	}
	// An administrator removes b by its instance id: a rebalance starts.
	n := rebalances.Load()
	if errs := c.Leave("g", []Leaver{{InstanceID: "b"}, {InstanceID: "nobody"}}); errs[0] != nil || errs[1] != kerr.UnknownMemberID {
		t.Fatalf("leave by instance id: %v", errs)
	}
	a := before["a"]
	if e := c.Heartbeat("g", a.MemberID, "a", a.Generation); e != kerr.RebalanceInProgress {
		t.Fatalf("heartbeat after b left: %v", e)
	}
	r := c.Join(ctx, JoinRequest{Group: "g", MemberID: a.MemberID, InstanceID: "a", ClientID: "c", ProtocolType: "consumer",
		Session: 6 * time.Second, Rebalance: 2 * time.Second, Protocols: joinReq("").Protocols})
	if r.Err != nil || r.Generation != a.Generation+1 || len(r.Members) != 1 || rebalances.Load() != n+1 {
		t.Fatalf("rejoin after b left: %+v, %d rebalances", r, rebalances.Load()-n)
	}
}

// TestStaticFencedWhileWaiting: a second process with the same instance id
// takes the member's place while the first waits in JoinGroup; the first
// gets FENCED_INSTANCE_ID.
func TestStaticFencedWhileWaiting(t *testing.T) {
	c, _, before := stableStatic(t)
	ctx := context.Background()
	// a rejoins (as after a change of subscription): it waits for b.
	a := before["a"]
	ra := staticReq("a")
	ra.MemberID = a.MemberID
	waiting := make(chan JoinResult, 1)
	go func() { waiting <- c.Join(ctx, ra) }()
	time.Sleep(50 * time.Millisecond)
	go c.Join(ctx, staticReq("a")) // the second process of a
	select {
	case r := <-waiting:
		if r.Err != kerr.FencedInstanceID {
			t.Fatalf("fenced join: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the fenced member's JoinGroup was not answered")
	}
	// A join with the old id and the instance id is fenced too.
	if r := c.Join(ctx, ra); r.Err != kerr.FencedInstanceID {
		t.Fatalf("join with a fenced id: %v", r.Err)
	}
}

// TestStaticMemberAwayKeepsItsPlace: a static member that does not rejoin
// a rebalance stays a member (its partitions wait for it) until its
// session times out; a dynamic one is removed.
func TestStaticMemberAwayKeepsItsPlace(t *testing.T) {
	c, _, before := stableStatic(t)
	ctx := context.Background()
	// A dynamic member joins; only a rejoins in time.
	go joinAsync(c, joinReq(""))
	a := before["a"]
	ra := staticReq("a")
	ra.MemberID = a.MemberID
	ctxA, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for c.Heartbeat("g", a.MemberID, "a", a.Generation) != kerr.RebalanceInProgress {
		time.Sleep(5 * time.Millisecond)
	}
	r := c.Join(ctxA, ra)
	if r.Err != nil || r.Leader != a.MemberID || len(r.Members) != 3 {
		t.Fatalf("rejoin without b: %+v", r)
	}
	var bSeen bool
	for _, m := range r.Members {
		bSeen = bSeen || m.InstanceID == "b"
	}
	if !bSeen {
		t.Errorf("the leader is not told of b, which is away: %+v", r.Members)
	}
}
