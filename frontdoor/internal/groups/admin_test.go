package groups

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// TestCommitToMissingGroup: a member commit (generation 0 or above) to a
// group that does not exist is ILLEGAL_GENERATION, GROUP_ID_NOT_FOUND from
// OffsetCommit v9 on; a simple commit (generation -1) with a member id
// into an Empty group is taken, as in Kafka.
func TestCommitToMissingGroup(t *testing.T) {
	c := testCoordinator(&memStore{})
	ctx := context.Background()
	offs := []*fetchv1.CommittedOffset{{Topic: "t", Offset: 1}}
	if e := c.Commit(ctx, CommitRequest{Group: "g", MemberID: "m", Generation: 3, Offsets: offs}); e != kerr.IllegalGeneration {
		t.Errorf("v8 commit to a missing group: %v", e)
	}
	if e := c.Commit(ctx, CommitRequest{Group: "g", MemberID: "m", Generation: 3, GroupIDNotFound: true, Offsets: offs}); e != kerr.GroupIDNotFound {
		t.Errorf("v9 commit to a missing group: %v", e)
	}
	if e := c.Commit(ctx, CommitRequest{Group: "g", MemberID: "m", Generation: -1, Offsets: offs}); e != nil {
		t.Errorf("simple commit with a member id: %v", e)
	}
	// Now the group exists (it has offsets): a member commit is checked
	// against members.
	if e := c.Commit(ctx, CommitRequest{Group: "g", MemberID: "m", Generation: 3, GroupIDNotFound: true, Offsets: offs}); e != kerr.UnknownMemberID {
		t.Errorf("member commit to an Empty group: %v", e)
	}
}

// TestDescribeOutsideStable: while a rebalance runs, DescribeGroups shows
// no protocol and empty member metadata and assignments, as Kafka does.
func TestDescribeOutsideStable(t *testing.T) {
	c := testCoordinator(&memStore{})
	ctx := context.Background()
	res := join(t, c, joinReq(""))
	d := describe(c, "g")
	if d.State != CompletingRebalance || d.Protocol != "" || d.ProtocolType != "consumer" || len(d.Members) != 1 ||
		len(d.Members[0].Metadata) != 0 || len(d.Members[0].Assignment) != 0 || d.Members[0].ClientID != "c" {
		t.Fatalf("describe while completing: %+v", d)
	}
	c.Sync(ctx, SyncRequest{Group: "g", MemberID: res.MemberID, Generation: res.Generation, Assignments: map[string][]byte{res.MemberID: []byte("A")}})
	d = describe(c, "g")
	if d.State != Stable || d.Protocol != "cooperative-sticky" || string(d.Members[0].Metadata) != "cs" || string(d.Members[0].Assignment) != "A" {
		t.Fatalf("describe when stable: %+v", d)
	}
	// A second member joins: the first's old assignment is not shown.
	go joinAsync(c, joinReq(""))
	for describe(c, "g").State == Stable {
		time.Sleep(5 * time.Millisecond)
	}
	d = describe(c, "g")
	if d.State != PreparingRebalance || d.Protocol != "" || len(d.Members[0].Assignment) != 0 || len(d.Members[0].Metadata) != 0 {
		t.Fatalf("describe while preparing: %+v", d)
	}
}

// TestListAfterRestart: a coordinator that just started lists the groups
// the store holds offsets of as Empty, and no longer once they are
// deleted.
func TestListAfterRestart(t *testing.T) {
	store := &memStore{offsets: map[string][]*fetchv1.CommittedOffset{
		"old":  {{Topic: "t", Partition: 0, Offset: 5}},
		"gone": {{Topic: "t", Partition: 0, Offset: 5}, {Topic: "t", Partition: 0, Offset: -1}},
	}}
	c := testCoordinator(store)
	ctx := context.Background()
	l, err := c.List(ctx)
	if err != nil || len(l) != 1 || l[0].Group != "old" || l[0].State != Empty {
		t.Fatalf("list after a restart: %+v, %v", l, err)
	}
	if d := describe(c, "old"); d.State != Empty || len(d.Members) != 0 {
		t.Fatalf("describe of a group with offsets only: %+v", d)
	}
	if e := c.DeleteGroup(ctx, "old"); e != nil {
		t.Fatal(e)
	}
	if l, err := c.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("list after delete: %+v, %v", l, err)
	}
}

// TestDeleteGroup: only an existing Empty group is deleted, with its
// offsets, also for a coordinator started afterwards.
func TestDeleteGroup(t *testing.T) {
	store := &memStore{}
	c := testCoordinator(store)
	ctx := context.Background()
	if e := c.DeleteGroup(ctx, "g"); e != kerr.GroupIDNotFound {
		t.Errorf("delete of a missing group: %v", e)
	}
	res := join(t, c, joinReq(""))
	if e := c.DeleteGroup(ctx, "g"); e != kerr.NonEmptyGroup {
		t.Errorf("delete of a group with members: %v", e)
	}
	c.Sync(ctx, SyncRequest{Group: "g", MemberID: res.MemberID, Generation: res.Generation})
	if e := c.Commit(ctx, CommitRequest{Group: "g", MemberID: res.MemberID, Generation: res.Generation,
		Offsets: []*fetchv1.CommittedOffset{{Topic: "t", Offset: 7}, {Topic: "t", Partition: 1, Offset: 8}}}); e != nil {
		t.Fatal(e)
	}
	c.Leave("g", []Leaver{{MemberID: res.MemberID}})
	if e := c.DeleteGroup(ctx, "g"); e != nil {
		t.Fatalf("delete of an Empty group: %v", e)
	}
	for _, co := range []*Coordinator{c, testCoordinator(store)} {
		if got, e := co.Committed(ctx, "g"); e != nil || len(got) != 0 {
			t.Errorf("offsets after delete: %v, %v", got, e)
		}
		if d := describe(co, "g"); d.State != "Dead" {
			t.Errorf("describe after delete: %+v", d)
		}
	}
	if e := c.DeleteGroup(ctx, "g"); e != kerr.GroupIDNotFound {
		t.Errorf("second delete: %v", e)
	}
}

// TestDeleteOffsets: an Empty group loses the offsets asked for; a
// consumer group with members keeps those of topics it subscribes to
// (GROUP_SUBSCRIBED_TO_TOPIC); a group of another protocol type with
// members refuses (NON_EMPTY_GROUP).
func TestDeleteOffsets(t *testing.T) {
	store := &memStore{offsets: map[string][]*fetchv1.CommittedOffset{
		"g": {{Topic: "t", Partition: 0, Offset: 5}, {Topic: "u", Partition: 0, Offset: 6}, {Topic: "u", Partition: 1, Offset: 7}},
	}}
	c := testCoordinator(store)
	ctx := context.Background()
	if _, e := c.DeleteOffsets(ctx, "nope", []TopicPartition{{"t", 0}}); e != kerr.GroupIDNotFound {
		t.Errorf("missing group: %v", e)
	}
	sub := kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}
	r := joinReq("")
	r.Protocols = []Protocol{{Name: "range", Metadata: sub.AppendTo(nil)}}
	join(t, c, r)
	refused, e := c.DeleteOffsets(ctx, "g", []TopicPartition{{"t", 0}, {"u", 0}})
	if e != nil || len(refused) != 1 || refused[TopicPartition{"t", 0}] != kerr.GroupSubscribedToTopic {
		t.Fatalf("delete with members: %v, %v", refused, e)
	}
	got, _ := c.Committed(ctx, "g")
	if len(got) != 2 || got[TopicPartition{"t", 0}] == nil || got[TopicPartition{"u", 1}] == nil {
		t.Fatalf("offsets left: %v", got)
	}
	if got, _ := testCoordinator(store).Committed(ctx, "g"); len(got) != 2 || got[TopicPartition{"u", 0}] != nil {
		t.Fatalf("offsets left in the store: %v", got)
	}

	other := testCoordinator(&memStore{offsets: map[string][]*fetchv1.CommittedOffset{"g": {{Topic: "t", Offset: 1}}}})
	cr := joinReq("")
	cr.ProtocolType = "connect"
	join(t, other, cr)
	if _, e := other.DeleteOffsets(ctx, "g", []TopicPartition{{"t", 0}}); e != kerr.NonEmptyGroup {
		t.Errorf("non-consumer group with members: %v", e)
	}
}
