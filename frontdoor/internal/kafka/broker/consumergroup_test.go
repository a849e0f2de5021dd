package broker

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/fakebackends"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/groupapi"
)

// consumerJoin sends a ConsumerGroupHeartbeat v1 join of topics.
func consumerJoin(c *rawClient, group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, group, member, 30000
	req.SubscribedTopicNames, req.Topics = topics, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return c.roundTrip(req).(*kmsg.ConsumerGroupHeartbeatResponse)
}

// TestConsumerGroupAPIs: the KIP-848 APIs on the wire: a join gets the
// topic's partitions by topic id, ConsumerGroupDescribe and ListGroups v5
// show the group as a consumer protocol group, and OffsetCommit and
// OffsetFetch v9 check the member epoch.
func TestConsumerGroupAPIs(t *testing.T) {
	h := newHarness(t, harnessOpts{offsets: fakebackends.NewOffsets()})
	c := dialRaw(t, h.addr)
	resp := consumerJoin(c, "cg", "member-1", "orders")
	ordersID := [16]byte{15: 100}
	if resp.ErrorCode != 0 || resp.MemberEpoch != 1 || deref(resp.MemberID) != "member-1" || resp.HeartbeatIntervalMillis != 5000 ||
		resp.Assignment == nil || len(resp.Assignment.Topics) != 1 || resp.Assignment.Topics[0].TopicID != ordersID ||
		!reflect.DeepEqual(resp.Assignment.Topics[0].Partitions, []int32{0, 1, 2, 3}) {
		t.Fatalf("join: %+v", resp)
	}
	// A join without member id at v1 is refused with Kafka's message.
	bad := consumerJoin(c, "cg", "", "orders")
	if bad.ErrorCode != kerr.InvalidRequest.Code || deref(bad.ErrorMessage) != "MemberId can't be empty." || bad.MemberID != nil {
		t.Fatalf("join without member id: %+v", bad)
	}

	desc := kmsg.NewPtrConsumerGroupDescribeRequest()
	desc.Version, desc.Groups = 1, []string{"cg", "nope"}
	dr := c.roundTrip(desc).(*kmsg.ConsumerGroupDescribeResponse)
	if len(dr.Groups) != 2 {
		t.Fatalf("describe: %+v", dr)
	}
	g := dr.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.Epoch != 1 || g.AssignmentEpoch != 1 || g.AssignorName != "uniform" || len(g.Members) != 1 {
		t.Fatalf("describe cg: %+v", g)
	}
	m := g.Members[0]
	if m.MemberID != "member-1" || m.MemberEpoch != 1 || m.MemberType != 1 || m.ClientHost != "/127.0.0.1" || deref(m.SubscribedTopicRegex) != "" || m.SubscribedTopicRegex == nil || !reflect.DeepEqual(m.SubscribedTopics, []string{"orders"}) ||
		len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "orders" || len(m.TargetAssignment.TopicPartitions) != 1 {
		t.Fatalf("describe member: %+v", m)
	}
	if ng := dr.Groups[1]; ng.ErrorCode != kerr.GroupIDNotFound.Code || deref(ng.ErrorMessage) != "Group nope not found." {
		t.Fatalf("describe of no group: %+v", ng)
	}

	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version, lg.TypesFilter = 5, []string{"Consumer"}
	lr := c.roundTrip(lg).(*kmsg.ListGroupsResponse)
	if len(lr.Groups) != 1 || lr.Groups[0].Group != "cg" || lr.Groups[0].GroupType != "consumer" || lr.Groups[0].ProtocolType != "consumer" || lr.Groups[0].GroupState != "Stable" {
		t.Fatalf("list consumer groups: %+v", lr.Groups)
	}
	lg.TypesFilter = []string{"classic"}
	if lr := c.roundTrip(lg).(*kmsg.ListGroupsResponse); len(lr.Groups) != 0 {
		t.Fatalf("list classic groups: %+v", lr.Groups)
	}

	commit := func(epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 9, "cg", "member-1", epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 1, 42
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.roundTrip(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(0); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit with a stale epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit(1); code != 0 {
		t.Fatalf("commit at the member's epoch: %v", kerr.ErrorForCode(code))
	}
	fetch := func(epoch int32) *kmsg.OffsetFetchResponseGroup {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = "cg", kmsg.StringPtr("member-1"), epoch
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "orders", []int32{1}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		return &c.roundTrip(req).(*kmsg.OffsetFetchResponse).Groups[0]
	}
	if fg := fetch(3); fg.ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("offset fetch with a stale epoch: %+v", fg)
	}
	if fg := fetch(1); fg.ErrorCode != 0 || fg.Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("offset fetch of the member: %+v", fg)
	}

	// The same group id through the classic protocol is refused.
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Version, jg.Group, jg.MemberID, jg.ProtocolType = 9, "cg", "x", "consumer"
	jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = 10000, 10000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	if jr := c.roundTrip(jg).(*kmsg.JoinGroupResponse); jr.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join of a consumer protocol group: %v", kerr.ErrorForCode(jr.ErrorCode))
	}
}

// TestConsumerGroupShapes: the request scan counts what kmsg decodes for
// both KIP-848 APIs at every served version.
func TestConsumerGroupShapes(t *testing.T) {
	for v := int16(groupapi.ConsumerGroupHeartbeatMin); v <= groupapi.ConsumerGroupHeartbeatMax; v++ {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version, r.Group, r.MemberID, r.InstanceID, r.ServerAssignor = v, "g", "m", kmsg.StringPtr("i"), kmsg.StringPtr("uniform")
		r.SubscribedTopicNames, r.SubscribedTopicRegex = []string{"a", "b"}, kmsg.StringPtr("a.*")
		for i := range 2 {
			tp := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			tp.TopicID[0], tp.Partitions = byte(i), []int32{0, 1}
			tp.UnknownTags.Set(7, []byte("x"))
			r.Topics = append(r.Topics, tp)
		}
		r.UnknownTags.Set(9, nil)
		checkShapeAgainstKmsg(t, r.Key(), v, r.AppendTo(nil))
		if sh, err := kafka.ShapeOf(r.Key(), v, r.AppendTo(nil)); err != nil || sh.Elems < 8 {
			t.Fatalf("ConsumerGroupHeartbeat v%d shape: %+v %v", v, sh, err)
		}
	}
	for v := int16(groupapi.ConsumerGroupDescribeMin); v <= groupapi.ConsumerGroupDescribeMax; v++ {
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		r.Version, r.Groups, r.IncludeAuthorizedOperations = v, []string{"a", "b"}, true
		checkShapeAgainstKmsg(t, r.Key(), v, r.AppendTo(nil))
	}
}

// deref is *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
