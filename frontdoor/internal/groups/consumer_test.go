package groups

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// fakeTopics is a TopicSource over a fixed list.
type fakeTopics map[string]TopicInfo

func (f fakeTopics) Topics(_ context.Context, names []string) (map[string]TopicInfo, error) {
	out := map[string]TopicInfo{}
	for _, n := range names {
		if t, ok := f[n]; ok {
			out[n] = t
		}
	}
	return out, nil
}

func (f fakeTopics) AllTopics(context.Context) ([]TopicInfo, error) {
	var out []TopicInfo
	for _, t := range f {
		out = append(out, t)
	}
	return out, nil
}

func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	return id
}

func testTopics() fakeTopics {
	f := fakeTopics{}
	for _, n := range []string{"orders", "payments", "logs.a", "logs.b"} {
		f[n] = TopicInfo{Name: n, ID: topicID(n), Partitions: 4}
	}
	return f
}

func consumerCoordinator(store OffsetStore, cfg Config) *Coordinator {
	if cfg.Topics == nil {
		cfg.Topics = testTopics()
	}
	return New(cfg, store, nil)
}

// cmember drives one consumer protocol member as a client does: it owns
// what the coordinator last assigned it.
type cmember struct {
	t        *testing.T
	c        *Coordinator
	id       string
	instance *string
	epoch    int32
	owned    []OwnedTopic
}

func newCMember(t *testing.T, c *Coordinator, id string) *cmember {
	return &cmember{t: t, c: c, id: id}
}

func (m *cmember) req(epoch int32) ConsumerHeartbeatRequest {
	return ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: m.id, MemberEpoch: epoch, InstanceID: m.instance,
		RebalanceTimeoutMs: -1, Owned: m.owned, ClientID: "client", ClientHost: "/127.0.0.1"}
}

// join joins with a subscription and an assignor ("" for none).
func (m *cmember) join(topics []string, assignor string) ConsumerHeartbeatResult {
	m.t.Helper()
	r := m.req(0)
	r.RebalanceTimeoutMs, r.SubscribedTopics, r.Owned = 300000, topics, []OwnedTopic{}
	if assignor != "" {
		r.ServerAssignor = &assignor
	}
	return m.send(r)
}

func (m *cmember) heartbeat() ConsumerHeartbeatResult {
	m.t.Helper()
	return m.send(m.req(m.epoch))
}

func (m *cmember) send(r ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	m.t.Helper()
	res := m.c.ConsumerHeartbeat(context.Background(), r)
	if res.Err != nil {
		m.t.Fatalf("member %s heartbeat (epoch %d): %v %s", m.id, r.MemberEpoch, res.Err, res.ErrMessage)
	}
	m.epoch = res.MemberEpoch
	if res.Sent {
		m.owned = []OwnedTopic{}
		for _, a := range res.Assignment {
			m.owned = append(m.owned, OwnedTopic{ID: a.ID, Partitions: a.Partitions})
		}
	}
	return res
}

// parts renders what a member owns, as "topic-p" strings.
func (m *cmember) parts() []string {
	out := []string{}
	for _, o := range m.owned {
		for _, p := range o.Partitions {
			out = append(out, fmt.Sprintf("%s-%d", string(o.ID[:trimZero(o.ID)]), p))
		}
	}
	return out
}

func trimZero(id [16]byte) int {
	for i, b := range id {
		if b == 0 {
			return i
		}
	}
	return 16
}

func wantParts(t *testing.T, m *cmember, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := m.parts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("member %s owns %v, want %v", m.id, got, want)
	}
}

// TestConsumerRevokeBeforeReassign: a second member gets partitions only
// after the first member's heartbeat no longer holds them, and a member
// that leaves hands all of its partitions to the one left.
func TestConsumerRevokeBeforeReassign(t *testing.T) {
	c := consumerCoordinator(&memStore{}, Config{})
	a, b := newCMember(t, c, "a"), newCMember(t, c, "b")
	if res := a.join([]string{"orders"}, ""); res.MemberEpoch != 1 {
		t.Fatalf("first join: epoch %d, want 1", res.MemberEpoch)
	}
	wantParts(t, a, "orders-0", "orders-1", "orders-2", "orders-3")

	// b gets the new group epoch but waits for the partitions a holds.
	res := b.join([]string{"orders"}, "")
	if res.MemberEpoch != 2 || !res.Sent || len(res.Assignment) != 0 {
		t.Fatalf("second join before a revoked: %+v, want epoch 2 and an empty assignment", res)
	}
	if res := a.heartbeat(); res.MemberEpoch != 1 || !res.Sent {
		t.Fatalf("a's heartbeat after b joined: %+v, want epoch 1 with a smaller assignment", res)
	}
	wantParts(t, a, "orders-0", "orders-1")
	b.heartbeat()
	wantParts(t, b) // a has not said it revoked yet
	if res := a.heartbeat(); res.MemberEpoch != 2 {
		t.Fatalf("a after revoking: epoch %d, want 2", res.MemberEpoch)
	}
	b.heartbeat()
	wantParts(t, b, "orders-2", "orders-3")
	if b.epoch != 2 {
		t.Fatalf("b epoch %d, want 2", b.epoch)
	}
	d, e, _ := c.DescribeConsumerGroup("g")
	if e != nil || d.State != Stable || d.Epoch != 2 || d.AssignmentEpoch != 2 || d.Assignor != AssignorUniform || len(d.Members) != 2 {
		t.Fatalf("describe: %+v %v", d, e)
	}

	// a leaves: b takes everything on its next heartbeat.
	leave := a.req(LeaveEpoch)
	if res := c.ConsumerHeartbeat(context.Background(), leave); res.Err != nil || res.MemberEpoch != LeaveEpoch {
		t.Fatalf("leave: %+v", res)
	}
	if res := b.heartbeat(); res.MemberEpoch != 3 {
		t.Fatalf("b after a left: epoch %d, want 3", res.MemberEpoch)
	}
	wantParts(t, b, "orders-0", "orders-1", "orders-2", "orders-3")
}

// TestConsumerFencing: Kafka's epoch and member id checks.
func TestConsumerFencing(t *testing.T) {
	c := consumerCoordinator(&memStore{}, Config{})
	a := newCMember(t, c, "a")
	a.join([]string{"orders"}, "")
	ctx := context.Background()
	r := a.req(5)
	if res := c.ConsumerHeartbeat(ctx, r); res.Err != kerr.FencedMemberEpoch {
		t.Fatalf("greater epoch: %v, want FENCED_MEMBER_EPOCH", res.Err)
	}
	unknown := newCMember(t, c, "nobody").req(1)
	if res := c.ConsumerHeartbeat(ctx, unknown); res.Err != kerr.UnknownMemberID {
		t.Fatalf("unknown member: %v, want UNKNOWN_MEMBER_ID", res.Err)
	}
	other := newCMember(t, c, "other").req(1)
	other.Group = "missing"
	if res := c.ConsumerHeartbeat(ctx, other); res.Err != kerr.GroupIDNotFound || res.ErrMessage != "Consumer group missing not found." {
		t.Fatalf("heartbeat of a missing group: %v %q, want GROUP_ID_NOT_FOUND", res.Err, res.ErrMessage)
	}
	other.MemberEpoch = LeaveEpoch
	if res := c.ConsumerHeartbeat(ctx, other); res.Err != kerr.GroupIDNotFound || res.ErrMessage != "Group missing not found." {
		t.Fatalf("leave of a missing group: %v %q, want GROUP_ID_NOT_FOUND", res.Err, res.ErrMessage)
	}
	// A lost answer: a's epoch moved from 1 to 2; it comes back with 1
	// owning only partitions it is still assigned: taken.
	b := newCMember(t, c, "b")
	b.join([]string{"orders"}, "")
	a.heartbeat()
	a.heartbeat() // a revoked: epoch 2
	if a.epoch != 2 {
		t.Fatalf("a epoch %d, want 2", a.epoch)
	}
	r = a.req(1)
	if res := c.ConsumerHeartbeat(ctx, r); res.Err != nil || res.MemberEpoch != 2 {
		t.Fatalf("previous epoch with owned partitions within the assignment: %+v, want epoch 2", res)
	}
	r = a.req(1)
	r.Owned = []OwnedTopic{{ID: topicID("orders"), Partitions: []int32{3}}} // b's partition
	if res := c.ConsumerHeartbeat(ctx, r); res.Err != kerr.FencedMemberEpoch {
		t.Fatalf("previous epoch owning another member's partition: %v, want FENCED_MEMBER_EPOCH", res.Err)
	}
}

// TestConsumerValidation: bad requests get Kafka's errors before the
// group is looked at.
func TestConsumerValidation(t *testing.T) {
	c := consumerCoordinator(&memStore{}, Config{})
	empty, bad, badRe := "", "roundrobin", "orders("
	base := func() ConsumerHeartbeatRequest {
		return ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "m", RebalanceTimeoutMs: 1000,
			SubscribedTopics: []string{"orders"}, Owned: []OwnedTopic{}}
	}
	for _, tc := range []struct {
		name   string
		change func(*ConsumerHeartbeatRequest)
		want   *kerr.Error
	}{
		{"no member id at v1", func(r *ConsumerHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"no group", func(r *ConsumerHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest},
		{"empty instance id", func(r *ConsumerHeartbeatRequest) { r.InstanceID = &empty }, kerr.InvalidRequest},
		{"join without rebalance timeout", func(r *ConsumerHeartbeatRequest) { r.RebalanceTimeoutMs = -1 }, kerr.InvalidRequest},
		{"join owning partitions", func(r *ConsumerHeartbeatRequest) {
			r.Owned = []OwnedTopic{{ID: topicID("orders"), Partitions: []int32{1}}}
		}, kerr.InvalidRequest},
		{"join without subscription", func(r *ConsumerHeartbeatRequest) { r.SubscribedTopics = nil }, kerr.InvalidRequest},
		{"static leave without instance", func(r *ConsumerHeartbeatRequest) { r.MemberEpoch = StaticLeaveEpoch }, kerr.InvalidRequest},
		{"epoch below -2", func(r *ConsumerHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"unknown assignor", func(r *ConsumerHeartbeatRequest) { r.ServerAssignor = &bad }, kerr.UnsupportedAssignor},
		{"bad regex", func(r *ConsumerHeartbeatRequest) { r.SubscribedTopics, r.SubscribedRegex = nil, &badRe }, kerr.InvalidRegularExpression},
	} {
		r := base()
		tc.change(&r)
		if res := c.ConsumerHeartbeat(context.Background(), r); res.Err != tc.want || res.ErrMessage == "" {
			t.Errorf("%s: %v %q, want %v with a message", tc.name, res.Err, res.ErrMessage, tc.want)
		}
	}
	// v0 lets the coordinator pick the member id.
	r := base()
	r.Version, r.MemberID = 0, ""
	if res := c.ConsumerHeartbeat(context.Background(), r); res.Err != nil || len(res.MemberID) != 22 {
		t.Fatalf("v0 join without member id: %+v, want a generated id", res)
	}
}

// TestConsumerStaticMember: a static member that leaves with epoch -2 and
// comes back under another member id gets its partitions and epoch back
// without a new group epoch; while it is here nobody else may take its
// instance id.
func TestConsumerStaticMember(t *testing.T) {
	c := consumerCoordinator(&memStore{}, Config{})
	inst := "host-1"
	a := newCMember(t, c, "a")
	a.instance = &inst
	a.join([]string{"orders"}, "")
	b := newCMember(t, c, "b")
	b.join([]string{"orders"}, "")
	for range 3 {
		a.heartbeat()
		b.heartbeat()
	}
	wantParts(t, a, "orders-0", "orders-1")
	epochBefore := a.epoch

	dup := newCMember(t, c, "a2")
	dup.instance = &inst
	r := dup.req(0)
	r.RebalanceTimeoutMs, r.SubscribedTopics, r.Owned = 1000, []string{"orders"}, []OwnedTopic{}
	if res := c.ConsumerHeartbeat(context.Background(), r); res.Err != kerr.UnreleasedInstanceID {
		t.Fatalf("second member with a live instance id: %v, want UNRELEASED_INSTANCE_ID", res.Err)
	}
	if res := c.ConsumerHeartbeat(context.Background(), a.req(StaticLeaveEpoch)); res.Err != nil || res.MemberEpoch != StaticLeaveEpoch {
		t.Fatalf("static leave: %+v", res)
	}
	d, _, _ := c.DescribeConsumerGroup("g")
	groupEpoch := d.Epoch
	if res := dup.join([]string{"orders"}, ""); res.MemberEpoch != epochBefore {
		t.Fatalf("static rejoin: epoch %d, want the old member's %d", res.MemberEpoch, epochBefore)
	}
	wantParts(t, dup, "orders-0", "orders-1")
	if d, _, _ := c.DescribeConsumerGroup("g"); d.Epoch != groupEpoch || len(d.Members) != 2 {
		t.Fatalf("after the static rejoin: group epoch %d (was %d), %d members", d.Epoch, groupEpoch, len(d.Members))
	}
	// The old member id is fenced for this instance.
	if res := c.ConsumerHeartbeat(context.Background(), a.req(a.epoch)); res.Err != kerr.FencedInstanceID {
		t.Fatalf("old member id of the instance: %v, want FENCED_INSTANCE_ID", res.Err)
	}
}

// TestConsumerTimeouts: a member whose session ends is removed; one that
// does not revoke within its rebalance timeout is fenced.
func TestConsumerTimeouts(t *testing.T) {
	c := consumerCoordinator(&memStore{}, Config{ConsumerSessionTimeout: 200 * time.Millisecond})
	a := newCMember(t, c, "a")
	a.join([]string{"orders"}, "")
	time.Sleep(400 * time.Millisecond)
	if res := c.ConsumerHeartbeat(context.Background(), a.req(a.epoch)); res.Err != kerr.UnknownMemberID {
		t.Fatalf("after the session timeout: %v, want UNKNOWN_MEMBER_ID", res.Err)
	}

	c = consumerCoordinator(&memStore{}, Config{})
	a, b := newCMember(t, c, "a"), newCMember(t, c, "b")
	r := a.req(0)
	r.RebalanceTimeoutMs, r.SubscribedTopics, r.Owned = 200, []string{"orders"}, []OwnedTopic{}
	a.send(r)
	b.join([]string{"orders"}, "")
	a.heartbeat() // told to revoke two partitions; it never says it did
	time.Sleep(400 * time.Millisecond)
	if res := c.ConsumerHeartbeat(context.Background(), a.req(a.epoch)); res.Err != kerr.UnknownMemberID {
		t.Fatalf("after the rebalance timeout: %v, want UNKNOWN_MEMBER_ID", res.Err)
	}
	b.heartbeat()
	wantParts(t, b, "orders-0", "orders-1", "orders-2", "orders-3")
}

// TestConsumerAssignors: range gives co-partitioned ranges, uniform
// spreads evenly; the members' group.remote.assignor picks.
func TestConsumerAssignors(t *testing.T) {
	c := consumerCoordinator(&memStore{}, Config{})
	a, b := newCMember(t, c, "a"), newCMember(t, c, "b")
	a.join([]string{"orders", "payments"}, AssignorRange)
	b.join([]string{"orders", "payments"}, AssignorRange)
	for range 3 {
		a.heartbeat()
		b.heartbeat()
	}
	wantParts(t, a, "orders-0", "orders-1", "payments-0", "payments-1")
	wantParts(t, b, "orders-2", "orders-3", "payments-2", "payments-3")
	if d, _, _ := c.DescribeConsumerGroup("g"); d.Assignor != AssignorRange {
		t.Fatalf("assignor %q, want range", d.Assignor)
	}

	spec := assignSpec{members: []string{"a", "b", "c"}, partitions: map[string]int32{"t": 7},
		subscribed: map[string][]string{"a": {"t"}, "b": {"t"}, "c": {"t"}}}
	got := assignUniform(spec)
	for _, m := range spec.members {
		if n := len(got[m]); n < 2 || n > 3 {
			t.Fatalf("uniform gave %s %d of 7 partitions over 3 members", m, n)
		}
	}
	// Sticky: a member joining moves only what balance needs.
	spec.previous = got
	spec.members = append(spec.members, "d")
	spec.subscribed["d"] = []string{"t"}
	next := assignUniform(spec)
	moved := 0
	for _, m := range []string{"a", "b", "c"} {
		for tp := range got[m] {
			if !next[m][tp] {
				moved++
			}
		}
	}
	if moved != len(next["d"]) || moved < 1 || moved > 2 {
		t.Fatalf("uniform moved %d partitions for the new member (which got %d)", moved, len(next["d"]))
	}
}

// TestConsumerRegexSubscription: a regex subscribes to every topic it
// matches in full.
func TestConsumerRegexSubscription(t *testing.T) {
	c := consumerCoordinator(&memStore{}, Config{})
	a := newCMember(t, c, "a")
	re := `logs\..*`
	r := a.req(0)
	r.RebalanceTimeoutMs, r.SubscribedRegex, r.Owned = 1000, &re, []OwnedTopic{}
	a.send(r)
	if got := len(a.parts()); got != 8 {
		t.Fatalf("regex member owns %v, want the 8 partitions of logs.a and logs.b", a.parts())
	}
}

// TestConsumerProtocolsExclusive: a group used by one protocol refuses the
// other, as Kafka does without online migration.
func TestConsumerProtocolsExclusive(t *testing.T) {
	c := consumerCoordinator(&memStore{}, Config{InitialRebalanceDelay: 10 * time.Millisecond})
	a := newCMember(t, c, "a")
	a.join([]string{"orders"}, "")
	if res := c.Join(context.Background(), joinReq("")); res.Err != kerr.InconsistentGroupProtocol {
		t.Fatalf("classic join of a consumer protocol group: %v, want INCONSISTENT_GROUP_PROTOCOL", res.Err)
	}
	list, err := c.List(context.Background())
	if err != nil || len(list) != 1 || list[0].Type != "consumer" || list[0].ProtocolType != "consumer" || list[0].State != Stable {
		t.Fatalf("list: %+v %v", list, err)
	}
	if d := describe(c, "g"); d.State != "Dead" || !d.ConsumerProtocol || len(d.Members) != 0 {
		t.Fatalf("DescribeGroups of a consumer protocol group: %+v, want Dead, marked as of the consumer protocol", d)
	}
	if d := describe(c, "none"); d.State != "Dead" || d.ConsumerProtocol {
		t.Fatalf("DescribeGroups of no group: %+v, want Dead, not of the consumer protocol", d)
	}

	c2 := consumerCoordinator(&memStore{}, Config{InitialRebalanceDelay: 10 * time.Millisecond})
	join(t, c2, joinReq(""))
	b := newCMember(t, c2, "b")
	r := b.req(0)
	r.RebalanceTimeoutMs, r.SubscribedTopics, r.Owned = 1000, []string{"orders"}, []OwnedTopic{}
	if res := c2.ConsumerHeartbeat(context.Background(), r); res.Err != kerr.GroupIDNotFound || res.ErrMessage != "Group g is not a consumer group." {
		t.Fatalf("consumer heartbeat of a classic group: %v %q, want GROUP_ID_NOT_FOUND", res.Err, res.ErrMessage)
	}
	if _, e, _ := c2.DescribeConsumerGroup("g"); e != kerr.GroupIDNotFound {
		t.Fatalf("ConsumerGroupDescribe of a classic group: %v", e)
	}
	if _, e, msg := c2.DescribeConsumerGroup("nope"); e != kerr.GroupIDNotFound || msg != "Group nope not found." {
		t.Fatalf("ConsumerGroupDescribe of no group: %v %q", e, msg)
	}
}

// TestConsumerOffsets: commits of a consumer protocol group follow Kafka's
// member epoch rules; an empty group takes admin commits.
func TestConsumerOffsets(t *testing.T) {
	store := &memStore{}
	c := consumerCoordinator(store, Config{})
	a := newCMember(t, c, "a")
	a.join([]string{"orders"}, "")
	ctx := context.Background()
	off := []*fetchv1.CommittedOffset{{Topic: "orders", Partition: 0, Offset: 10}}
	commit := func(member string, epoch int32, version int16) *kerr.Error {
		return c.Commit(ctx, CommitRequest{Group: "g", MemberID: member, Generation: epoch, Version: version, GroupIDNotFound: version >= 9, Offsets: off})
	}
	for _, tc := range []struct {
		name    string
		member  string
		epoch   int32
		version int16
		want    *kerr.Error
	}{
		{"member at its epoch", "a", 1, 9, nil},
		{"stale epoch", "a", 0, 9, kerr.StaleMemberEpoch},
		{"future epoch", "a", 7, 9, kerr.StaleMemberEpoch},
		{"unknown member", "x", 1, 9, kerr.UnknownMemberID},
		{"admin commit to a group with members", "", -1, 9, kerr.UnknownMemberID},
		{"member with OffsetCommit v8", "a", 1, 8, kerr.UnsupportedVersion},
	} {
		if got := commit(tc.member, tc.epoch, tc.version); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if e := c.ValidateOffsetFetch("g", "a", 0); e != kerr.StaleMemberEpoch {
		t.Fatalf("offset fetch with a stale epoch: %v", e)
	}
	if e := c.ValidateOffsetFetch("g", "a", 1); e != nil {
		t.Fatalf("offset fetch of the member: %v", e)
	}
	c.ConsumerHeartbeat(ctx, a.req(LeaveEpoch))
	if got := commit("", -1, 9); got != nil {
		t.Fatalf("admin commit to the empty group: %v", got)
	}
	got, _ := c.Committed(ctx, "g")
	if o := got[TopicPartition{"orders", 0}]; o == nil || o.Offset != 10 {
		t.Fatalf("committed: %+v", got)
	}
	if e := c.DeleteGroup(ctx, "g"); e != nil {
		t.Fatalf("delete the empty consumer protocol group: %v", e)
	}
}
