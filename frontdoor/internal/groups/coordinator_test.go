package groups

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// memStore is the offset store behind fetchsvc's gRPC API, in memory.
type memStore struct {
	mu      sync.Mutex
	offsets map[string][]*fetchv1.CommittedOffset
	lists   int
	fail    error
}

func (s *memStore) CommitOffsets(_ context.Context, group string, offs []*fetchv1.CommittedOffset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if s.offsets == nil {
		s.offsets = map[string][]*fetchv1.CommittedOffset{}
	}
	s.offsets[group] = append(s.offsets[group], offs...)
	return nil
}

func (s *memStore) ListCommittedOffsets(_ context.Context, group string) ([]*fetchv1.CommittedOffset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	if s.fail != nil {
		return nil, s.fail
	}
	// The latest row of each partition, unless it is a deletion.
	latest := map[TopicPartition]*fetchv1.CommittedOffset{}
	for _, o := range s.offsets[group] {
		latest[TopicPartition{o.Topic, o.Partition}] = o
	}
	var out []*fetchv1.CommittedOffset
	for _, o := range latest {
		if o.Offset >= 0 {
			out = append(out, o)
		}
	}
	return out, nil
}

func (s *memStore) DeleteCommittedOffsets(_ context.Context, group string, parts []*fetchv1.OffsetPartition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	for _, p := range parts {
		s.offsets[group] = append(s.offsets[group], &fetchv1.CommittedOffset{Topic: p.Topic, Partition: p.Partition, Offset: -1})
	}
	return nil
}

// ListOffsetGroups names the groups whose latest row of some partition
// is not a deletion, as the offsets table's reader does.
func (s *memStore) ListOffsetGroups(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	var out []string
	for g, offs := range s.offsets {
		latest := map[TopicPartition]int64{}
		for _, o := range offs {
			latest[TopicPartition{o.Topic, o.Partition}] = o.Offset
		}
		for _, o := range latest {
			if o >= 0 {
				out = append(out, g)
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func testCoordinator(store OffsetStore) *Coordinator {
	return New(Config{InitialRebalanceDelay: 50 * time.Millisecond}, store, nil)
}

func joinReq(member string) JoinRequest {
	return JoinRequest{Group: "g", MemberID: member, ClientID: "c", ProtocolType: "consumer", RequireKnownMemberID: true,
		Session: 6 * time.Second, Rebalance: 2 * time.Second,
		Protocols: []Protocol{{Name: "cooperative-sticky", Metadata: []byte("cs")}, {Name: "range", Metadata: []byte("r-" + member)}}}
}

// join runs the KIP-394 handshake: a join without id gets one, then joins
// with it.
func join(t *testing.T, c *Coordinator, r JoinRequest) JoinResult {
	t.Helper()
	res := c.Join(context.Background(), r)
	if res.Err != kerr.MemberIDRequired || res.MemberID == "" {
		t.Fatalf("first join: %+v, want MEMBER_ID_REQUIRED with an id", res)
	}
	r.MemberID = res.MemberID
	return c.Join(context.Background(), r)
}

// joinAsync is join for another goroutine: it reports nothing.
func joinAsync(c *Coordinator, r JoinRequest) {
	if res := c.Join(context.Background(), r); res.Err == kerr.MemberIDRequired {
		r.MemberID = res.MemberID
		c.Join(context.Background(), r)
	}
}

func joinAll(t *testing.T, c *Coordinator, reqs ...JoinRequest) []JoinResult {
	t.Helper()
	out := make([]JoinResult, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.MemberID == "" && r.InstanceID == "" {
				out[i] = join(t, c, r)
			} else {
				out[i] = c.Join(context.Background(), r)
			}
		}()
	}
	wg.Wait()
	return out
}

// TestRebalances: members join, the leader assigns, heartbeats tell the
// others to rejoin when a member joins or leaves, and a member that stops
// heartbeating is removed after its session.
func TestRebalances(t *testing.T) {
	c := testCoordinator(&memStore{})
	res := joinAll(t, c, joinReq(""), joinReq(""))
	if res[0].Err != nil || res[1].Err != nil || res[0].Generation != 1 || res[0].Leader != res[1].Leader {
		t.Fatalf("joins: %+v", res)
	}
	leader, other := res[0], res[1]
	if other.MemberID == other.Leader {
		leader, other = other, leader
	}
	if len(leader.Members) != 2 || len(other.Members) != 0 || leader.Protocol != "cooperative-sticky" {
		t.Fatalf("leader %+v, other %+v", leader, other)
	}
	// The follower waits for the leader's assignment.
	got := make(chan SyncResult, 1)
	go func() {
		got <- c.Sync(context.Background(), SyncRequest{Group: "g", MemberID: other.MemberID, Generation: 1})
	}()
	time.Sleep(20 * time.Millisecond)
	ls := c.Sync(context.Background(), SyncRequest{Group: "g", MemberID: leader.MemberID, Generation: 1,
		Assignments: map[string][]byte{leader.MemberID: []byte("L"), other.MemberID: []byte("O")}})
	if fs := <-got; fs.Err != nil || string(fs.Assignment) != "O" || string(ls.Assignment) != "L" {
		t.Fatalf("syncs: leader %+v follower %+v", ls, fs)
	}
	if e := c.Heartbeat("g", other.MemberID, "", 1); e != nil {
		t.Fatalf("heartbeat when stable: %v", e)
	}
	if e := c.Heartbeat("g", other.MemberID, "", 0); e != kerr.IllegalGeneration {
		t.Fatalf("heartbeat of an old generation: %v", e)
	}
	if d := describe(c, "g"); d.State != Stable || len(d.Members) != 2 || string(d.Members[0].Assignment) == "" {
		t.Fatalf("describe: %+v", d)
	}

	// A third member joins: the others learn it from their heartbeats.
	third := make(chan JoinResult, 1)
	go func() { third <- join(t, c, joinReq("")) }()
	for c.Heartbeat("g", leader.MemberID, "", 1) != kerr.RebalanceInProgress {
		time.Sleep(5 * time.Millisecond)
	}
	// A member's commit before it rejoins is taken while the group
	// prepares the rebalance, as Kafka does.
	if e := c.Commit(context.Background(), CommitRequest{Group: "g", MemberID: leader.MemberID, Generation: 1}); e != nil {
		t.Fatalf("commit while preparing a rebalance: %v", e)
	}
	r2 := joinAll(t, c, joinReq(leader.MemberID), joinReq(other.MemberID))
	r3 := <-third
	if r2[0].Generation != 2 || r3.Generation != 2 || r2[0].Leader != leader.MemberID || len(r2[0].Members) != 3 {
		t.Fatalf("second generation: %+v %+v", r2, r3)
	}

	// The third member leaves; the other two rejoin into generation 3.
	if errs := c.Leave("g", []Leaver{{MemberID: r3.MemberID}, {MemberID: "nobody"}}); errs[0] != nil || errs[1] != kerr.UnknownMemberID {
		t.Fatalf("leave: %v", errs)
	}
	r4 := joinAll(t, c, joinReq(leader.MemberID), joinReq(other.MemberID))
	if r4[0].Generation != 3 || len(r4[0].Members) != 2 {
		t.Fatalf("after leave: %+v", r4)
	}
}

// TestSessionExpiry: a member that stops heartbeating leaves the group
// after its session timeout.
func TestSessionExpiry(t *testing.T) {
	c := New(Config{InitialRebalanceDelay: 10 * time.Millisecond, MinSessionTimeout: time.Millisecond}, &memStore{}, nil)
	r := joinReq("")
	r.Session = 100 * time.Millisecond
	res := join(t, c, r)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for describe(c, "g").State != Empty {
		if time.Now().After(deadline) {
			t.Fatalf("member not expired: %+v", describe(c, "g"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if e := c.Heartbeat("g", res.MemberID, "", res.Generation); e != kerr.UnknownMemberID {
		t.Fatalf("heartbeat of an expired member: %v", e)
	}
}

// TestJoinRefusals: bad session timeouts, unknown member ids and
// protocols no member shares are refused.
func TestJoinRefusals(t *testing.T) {
	c := testCoordinator(&memStore{})
	r := joinReq("")
	r.Session = time.Second
	if res := c.Join(context.Background(), r); res.Err != kerr.InvalidSessionTimeout {
		t.Errorf("short session: %v", res.Err)
	}
	if res := c.Join(context.Background(), joinReq("made-up")); res.Err != kerr.UnknownMemberID {
		t.Errorf("unknown member id: %v", res.Err)
	}
	if res := join(t, c, joinReq("")); res.Err != nil {
		t.Fatal(res.Err)
	}
	other := joinReq("")
	other.Protocols = []Protocol{{Name: "roundrobin"}}
	if res := c.Join(context.Background(), other); res.Err != kerr.InconsistentGroupProtocol {
		t.Errorf("no shared protocol: %v", res.Err)
	}
}

// TestOffsets: commits are checked against membership, stored, and read
// from the store once per group.
func TestOffsets(t *testing.T) {
	store := &memStore{offsets: map[string][]*fetchv1.CommittedOffset{
		"g": {{Topic: "t", Partition: 0, Offset: 5}},
	}}
	c := testCoordinator(store)
	ctx := context.Background()
	offs := []*fetchv1.CommittedOffset{{Topic: "t", Partition: 0, Offset: 9}, {Topic: "t", Partition: 1, Offset: 3}}
	commit := func(member, instance string, gen int32, o []*fetchv1.CommittedOffset) *kerr.Error {
		return c.Commit(ctx, CommitRequest{Group: "g", MemberID: member, InstanceID: instance, Generation: gen, Offsets: o})
	}
	// A consumer outside the group commits while it has no members.
	if e := commit("", "", -1, offs[:1]); e != nil {
		t.Fatalf("simple commit: %v", e)
	}
	res := join(t, c, joinReq(""))
	// Kafka: a commit without generation or member id into a group with
	// members is UNKNOWN_MEMBER_ID.
	if e := commit("", "", -1, offs); e != kerr.UnknownMemberID {
		t.Errorf("simple commit into a group with members: %v", e)
	}
	if e := commit("stranger", "", res.Generation, offs); e != kerr.UnknownMemberID {
		t.Errorf("commit of a stranger: %v", e)
	}
	if e := commit(res.MemberID, "", res.Generation+1, offs); e != kerr.IllegalGeneration {
		t.Errorf("commit of another generation: %v", e)
	}
	// Waiting for the leader's assignment, commits are refused.
	if e := commit(res.MemberID, "", res.Generation, offs[1:]); e != kerr.RebalanceInProgress {
		t.Errorf("commit while completing the rebalance: %v", e)
	}
	if s := c.Sync(ctx, SyncRequest{Group: "g", MemberID: res.MemberID, Generation: res.Generation}); s.Err != nil {
		t.Fatal(s.Err)
	}
	if e := commit(res.MemberID, "", res.Generation, offs[1:]); e != nil {
		t.Fatalf("member commit: %v", e)
	}
	got, e := c.Committed(ctx, "g")
	if e != nil || got[TopicPartition{"t", 0}].GetOffset() != 9 || got[TopicPartition{"t", 1}].GetOffset() != 3 || store.lists != 1 {
		t.Fatalf("committed %v, %v after %d store reads", got, e, store.lists)
	}
	store.fail = errors.New("fluss down")
	if e := commit(res.MemberID, "", res.Generation, offs); e != kerr.CoordinatorNotAvailable {
		t.Errorf("commit with the store down: %v", e)
	}
	if _, e := c.Committed(ctx, "other"); e != kerr.CoordinatorLoadInProgress {
		t.Errorf("offsets of a group the store cannot read: %v", e)
	}
	store.fail = nil
	if l, err := c.List(ctx); err != nil || len(l) != 1 || l[0].Group != "g" || l[0].State != Stable {
		t.Errorf("list: %+v, %v", l, err)
	}
}

// describe is Describe for a store that answers.
func describe(c *Coordinator, group string) Description {
	d, _ := c.Describe(context.Background(), group)
	return d
}
