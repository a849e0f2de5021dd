package broker

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/fakebackends"
)

// commitSimple commits offsets of group outside group management
// (generation -1), as kafka-consumer-groups --reset-offsets does.
func commitSimple(t *testing.T, c *rawClient, group string, offsets map[string][]int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, group, -1
	for topic, offs := range offsets {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for p, o := range offs {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = int32(p), o
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := c.roundTrip(req).(*kmsg.OffsetCommitResponse)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("commit %s/%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
}

// fetchOffsets returns group's committed offsets of topic's partitions as
// "p=offset/error" (OffsetFetch v7).
func fetchOffsets(t *testing.T, c *rawClient, group, topic string, parts ...int32) string {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp := c.roundTrip(req).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("offset fetch of %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
	}
	var out []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, fmt.Sprintf("%d=%d/%d", rp.Partition, rp.Offset, rp.ErrorCode))
		}
	}
	return strings.Join(out, " ")
}

// TestOffsetFetchV1GroupError: OffsetFetch v0/v1 have no group error
// field, so a group error is on every partition asked for (Kafka's
// OffsetFetchRequest.getErrorResponse); v2+ carry it at the top.
func TestOffsetFetchV1GroupError(t *testing.T) {
	rules, err := acl.Parse(strings.NewReader("allow User:* READ topic:*\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{authz: rules, offsets: fakebackends.NewOffsets()})
	c := dialRaw(t, h.addr)
	for _, v := range []int16{1, 2} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = v, "denied"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "orders", []int32{0, 2}
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req).(*kmsg.OffsetFetchResponse)
		if v >= 2 {
			if resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
				t.Errorf("v%d top-level error %d", v, resp.ErrorCode)
			}
			continue
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d answer: %+v", v, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.GroupAuthorizationFailed.Code || p.Offset != -1 || p.Metadata == nil || *p.Metadata != "" {
				t.Errorf("v%d partition %d: error %d offset %d metadata %v", v, p.Partition, p.ErrorCode, p.Offset, p.Metadata)
			}
		}
	}
}

// TestDeleteOffsetsAndGroups: OffsetDelete removes one topic's offsets
// (unknown topics get UNKNOWN_TOPIC_OR_PARTITION), DeleteGroups the rest;
// both last over a frontdoor restart, and ListGroups lists a group that
// only has offsets, after a restart, as Empty.
func TestDeleteOffsetsAndGroups(t *testing.T) {
	h := newHarness(t, harnessOpts{offsets: fakebackends.NewOffsets()})
	c := dialRaw(t, h.addr)
	commitSimple(t, c, "g", map[string][]int64{"orders": {10, 11}, "events": {20}})
	commitSimple(t, c, "kept", map[string][]int64{"orders": {5}})

	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "g"
	for _, topic := range []string{"orders", "missing"} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		for _, p := range []int32{0, 1} {
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		del.Topics = append(del.Topics, rt)
	}
	dr := c.roundTrip(del).(*kmsg.OffsetDeleteResponse)
	if dr.ErrorCode != 0 || len(dr.Topics) != 2 || dr.Topics[0].Partitions[0].ErrorCode != 0 ||
		dr.Topics[1].Partitions[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("offset delete: %+v", dr)
	}
	if got := fetchOffsets(t, c, "g", "orders", 0, 1); got != "0=-1/0 1=-1/0" {
		t.Errorf("orders after offset delete: %s", got)
	}
	if got := fetchOffsets(t, c, "g", "events", 0); got != "0=20/0" {
		t.Errorf("events after offset delete of orders: %s", got)
	}

	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Version, dg.Groups = 2, []string{"g", "never"}
	dgr := c.roundTrip(dg).(*kmsg.DeleteGroupsResponse)
	if len(dgr.Groups) != 2 || dgr.Groups[0].ErrorCode != 0 || dgr.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete groups: %+v", dgr.Groups)
	}

	h.restartFrontdoor(t)
	c = dialRaw(t, h.addr)
	if got := fetchOffsets(t, c, "g", "events", 0); got != "0=-1/0" {
		t.Errorf("events after the group's delete and a restart: %s", got)
	}
	// The filters as Kafka's admin client sends them: matched ignoring case.
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version, lg.StatesFilter, lg.TypesFilter = 5, []string{"EMPTY"}, []string{"Classic", "Consumer"}
	lr := c.roundTrip(lg).(*kmsg.ListGroupsResponse)
	if lr.ErrorCode != 0 || len(lr.Groups) != 1 || lr.Groups[0].Group != "kept" || lr.Groups[0].GroupState != "Empty" {
		t.Fatalf("list groups after a restart: %+v", lr)
	}
	dg.Groups = []string{"g"}
	if dgr := c.roundTrip(dg).(*kmsg.DeleteGroupsResponse); dgr.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("second delete after a restart: %+v", dgr.Groups)
	}
}

// TestGroupDeleteACLs: DeleteGroups needs DELETE on the group; OffsetDelete
// needs DELETE on the group and READ on each topic.
func TestGroupDeleteACLs(t *testing.T) {
	rules, err := acl.Parse(strings.NewReader(`
allow User:* READ   topic:orders
allow User:* READ   group:*
allow User:* DELETE group:ops-*
`))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{authz: rules, offsets: fakebackends.NewOffsets()})
	c := dialRaw(t, h.addr)
	commitSimple(t, c, "app", map[string][]int64{"orders": {1}})
	commitSimple(t, c, "ops-1", map[string][]int64{"orders": {1}})

	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"app", "ops-1"}
	dgr := c.roundTrip(dg).(*kmsg.DeleteGroupsResponse)
	if dgr.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code || dgr.Groups[1].ErrorCode != 0 {
		t.Fatalf("delete groups: %+v", dgr.Groups)
	}
	del := func(group string, topics ...string) *kmsg.OffsetDeleteResponse {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		for _, topic := range topics {
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = topic
			rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
			req.Topics = append(req.Topics, rt)
		}
		return c.roundTrip(req).(*kmsg.OffsetDeleteResponse)
	}
	if r := del("app", "orders"); r.ErrorCode != kerr.GroupAuthorizationFailed.Code || len(r.Topics) != 0 {
		t.Errorf("offset delete without DELETE on the group: %+v", r)
	}
	commitSimple(t, c, "ops-2", map[string][]int64{"orders": {1}})
	r := del("ops-2", "orders", "events")
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 || r.Topics[1].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("offset delete with READ on orders only: %+v", r)
	}
	if r := del("ops-nothing", "orders"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("offset delete of a missing group: %+v", r)
	}
}

// TestStaticRejoinCountsNoRebalance: a static member (JoinGroup v5+ with
// group.instance.id) that joins again without its member id, as after a
// restart, is answered at once in the same generation and gets its
// assignment back; ferry.frontdoor.group.rebalances counts only the first
// generation. Its old member id is fenced.
func TestStaticRejoinCountsNoRebalance(t *testing.T) {
	m := newMeters(t)
	h := newHarness(t, harnessOpts{mp: m.mp, offsets: fakebackends.NewOffsets()})
	c := dialRaw(t, h.addr)
	join := func() *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.InstanceID = 7, "static", kmsg.StringPtr("pod-0")
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 10000, 10000, "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
		return c.roundTrip(req).(*kmsg.JoinGroupResponse)
	}
	first := join()
	if first.ErrorCode != 0 || first.Generation != 1 || first.LeaderID != first.MemberID {
		t.Fatalf("first join: %+v", first)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID, sync.Generation = 3, "static", first.MemberID, first.Generation
	sync.InstanceID = kmsg.StringPtr("pod-0")
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: first.MemberID, MemberAssignment: []byte("mine")}}
	if r := c.roundTrip(sync).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "mine" {
		t.Fatalf("leader sync: %+v", r)
	}
	m.waitValue(1, "ferry.frontdoor.group.rebalances", attribute.String("group", "static"))

	again := join()
	if again.ErrorCode != 0 || again.Generation != 1 || again.MemberID == first.MemberID || again.LeaderID == again.MemberID {
		t.Fatalf("join after a restart: %+v", again)
	}
	sync.MemberID, sync.GroupAssignment = again.MemberID, nil
	if r := c.roundTrip(sync).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "mine" {
		t.Fatalf("sync after a restart: %+v", r)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = 3, "static", first.MemberID, 1, kmsg.StringPtr("pod-0")
	if r := c.roundTrip(hb).(*kmsg.HeartbeatResponse); r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Errorf("old member's heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	m.want(1, "ferry.frontdoor.group.rebalances", attribute.String("group", "static"))

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 4, "static"
	leave.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: kmsg.StringPtr("pod-0")}}
	if r := c.roundTrip(leave).(*kmsg.LeaveGroupResponse); r.ErrorCode != 0 || r.Members[0].ErrorCode != 0 {
		t.Fatalf("leave by instance id: %+v", r)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"static"}
	if r := c.roundTrip(dg).(*kmsg.DescribeGroupsResponse); r.Groups[0].State != "Empty" || len(r.Groups[0].Members) != 0 {
		t.Errorf("after leave: %+v", r.Groups[0])
	}
}

// TestDescribeGroupsV6: from v6 a group that does not exist and a consumer
// protocol group are GROUP_ID_NOT_FOUND with Kafka 4.4's messages (below v6
// only Dead); classic groups and a group the principal may not describe
// have a null error message, as the broker sends.
func TestDescribeGroupsV6(t *testing.T) {
	rules, err := acl.Parse(strings.NewReader(`
allow User:* READ topic:orders
allow User:* READ group:g-*
`))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{authz: rules, offsets: fakebackends.NewOffsets()})
	c := dialRaw(t, h.addr)
	if r := consumerJoin(c, "g-consumer", "member-1", "orders"); r.ErrorCode != 0 {
		t.Fatalf("consumer protocol join: %+v", r)
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.MemberID = 7, "g-classic", ""
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = 10000, 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
	jr := c.roundTrip(join).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = jr.MemberID
		jr = c.roundTrip(join).(*kmsg.JoinGroupResponse)
	}
	if jr.ErrorCode != 0 {
		t.Fatalf("classic join: %+v", jr)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID, sync.Generation = 3, "g-classic", jr.MemberID, jr.Generation
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte("mine")}}
	if r := c.roundTrip(sync).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 {
		t.Fatalf("sync: %+v", r)
	}
	commitSimple(t, c, "g-empty", map[string][]int64{"orders": {1}})

	describe := func(v int16) []kmsg.DescribeGroupsResponseGroup {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version, req.Groups = v, []string{"g-classic", "g-empty", "g-none", "g-consumer", "secret"}
		return c.roundTrip(req).(*kmsg.DescribeGroupsResponse).Groups
	}
	type want struct {
		code         int16
		msg          *string
		state, proto string
		members      int
	}
	check := func(v int16, got []kmsg.DescribeGroupsResponseGroup, wants []want) {
		t.Helper()
		if len(got) != len(wants) {
			t.Fatalf("v%d: %d groups, want %d", v, len(got), len(wants))
		}
		for i, w := range wants {
			g := got[i]
			if g.ErrorCode != w.code || !reflect.DeepEqual(g.ErrorMessage, w.msg) || g.State != w.state || g.Protocol != w.proto || len(g.Members) != w.members {
				t.Errorf("v%d %s: code %d message %v state %q protocol %q members %d, want %+v",
					v, g.Group, g.ErrorCode, deref(g.ErrorMessage), g.State, g.Protocol, len(g.Members), w)
			}
		}
	}
	authFailed := want{code: kerr.GroupAuthorizationFailed.Code}
	check(6, describe(6), []want{
		{state: "Stable", proto: "range", members: 1},
		{state: "Empty"},
		{code: kerr.GroupIDNotFound.Code, msg: kmsg.StringPtr("Group g-none not found."), state: "Dead"},
		{code: kerr.GroupIDNotFound.Code, msg: kmsg.StringPtr("Group g-consumer is not a classic group."), state: "Dead"},
		authFailed,
	})
	if m := describe(6)[0].Members[0]; m.ClientHost != "/127.0.0.1" || m.ClientID == "" {
		t.Errorf("classic member: client host %q, want /127.0.0.1 as Kafka shows it; client id %q", m.ClientHost, m.ClientID)
	}
	check(5, describe(5), []want{
		{state: "Stable", proto: "range", members: 1},
		{state: "Empty"},
		{state: "Dead"},
		{state: "Dead"},
		authFailed,
	})

	// A second member starts a rebalance: PreparingRebalance, no protocol,
	// a null message at v6, until the first member joins again.
	second := *join
	second.MemberID = ""
	done := make(chan *kmsg.JoinGroupResponse, 1)
	c2 := dialRaw(t, h.addr)
	go func() {
		r := c2.roundTrip(&second).(*kmsg.JoinGroupResponse)
		if r.ErrorCode == kerr.MemberIDRequired.Code {
			second.MemberID = r.MemberID
			r = c2.roundTrip(&second).(*kmsg.JoinGroupResponse)
		}
		done <- r
	}()
	deadline := time.Now().Add(5 * time.Second)
	for describe(6)[0].State != "PreparingRebalance" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	check(6, describe(6)[:1], []want{{state: "PreparingRebalance", members: 2}})
	join.MemberID = jr.MemberID
	if r := c.roundTrip(join).(*kmsg.JoinGroupResponse); r.ErrorCode != 0 {
		t.Errorf("first member's rejoin: %+v", r)
	}
	if r := <-done; r.ErrorCode != 0 {
		t.Errorf("second member's join: %+v", r)
	}
}
