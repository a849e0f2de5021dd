package suite

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestWireMatchesKafkaBroker sends the same raw requests, at the versions real clients use, to a
// real Kafka 4.4 broker and to frontdoor, over a topic of the same shape on each (3 partitions;
// partition 1 holds 3 records, 0 and 2 none), and compares the decoded answers field by field:
// null against empty included (a nullable array that one side sends empty and the other null is
// caught by re-encoding, see compareWire). Only what must differ is ignored, each entry of
// wireAllowed saying why. Cases: an empty partition, a partition at its end, an offset out of
// range, an unknown topic (Fetch, ListOffsets); a group that does not exist (OffsetFetch,
// DescribeGroups, Heartbeat and JoinGroup of an unknown member), ListGroups, FindCoordinator;
// DescribeGroups of a classic group, Stable and then Empty.
func TestWireMatchesKafkaBroker(t *testing.T) {
	e, f := need(t)
	if !clients.BrokerInstalled() {
		t.Fatal(clients.ErrBrokerNotInstalled)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	broker, err := clients.StartBroker(ctx, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Stop() })

	db := dbName(t, f, "wire")
	topic := topicTable(t, f, db, "shape", 3, []testenv.Column{{Name: "id", Type: "INT"}}, nil)
	if err := clients.CreateTopic(ctx, broker.Bootstrap, topic, 3); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{broker.Bootstrap, e.kafka} {
		var recs []*kgo.Record
		for i := range 3 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: 1, Value: fmt.Appendf(nil, `{"id": %d}`, i)})
		}
		kgoProduce(t, newKgo(t, addr), recs, len(recs))
	}
	group := "wire-nosuch-" + db
	for _, addr := range []string{broker.Bootstrap, e.kafka} {
		waitCoordinator(t, ctx, addr, group)
	}

	for _, tc := range wireCases(topic, db+".nosuch", group) {
		t.Run(tc.name, func(t *testing.T) {
			want, wantRaw := wireRoundTrip(t, broker.Bootstrap, tc.req())
			got, gotRaw := wireRoundTrip(t, e.kafka, tc.req())
			compareWire(t, want, got, wantRaw, gotRaw)
		})
	}
	classicGroupWire(t, ctx, broker.Bootstrap, e.kafka, "wire-classic-"+db)
}

// classicGroupWire compares DescribeGroups v5 and v6 of a classic group with one member, Stable
// (after JoinGroup and SyncGroup) and Empty (after it leaves). Member ids are each server's own
// and are not compared.
func classicGroupWire(t *testing.T, ctx context.Context, brokerAddr, ferryAddr, group string) {
	addrs := [2]string{brokerAddr, ferryAddr}
	var members [2]string
	for side, addr := range addrs {
		waitCoordinator(t, ctx, addr, group)
		join := kmsg.NewPtrJoinGroupRequest()
		join.SetVersion(7)
		join.Group, join.ProtocolType = group, "consumer"
		join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 30000
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}}}
		resp, _ := wireRoundTrip(t, addr, join)
		jr := resp.(*kmsg.JoinGroupResponse)
		if jr.ErrorCode == kerr.MemberIDRequired.Code {
			join.MemberID = jr.MemberID
			resp, _ = wireRoundTrip(t, addr, join)
			jr = resp.(*kmsg.JoinGroupResponse)
		}
		if jr.ErrorCode != 0 {
			t.Fatalf("%s: join: %v", addr, kerr.ErrorForCode(jr.ErrorCode))
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.SetVersion(5)
		sync.Group, sync.MemberID, sync.Generation = group, jr.MemberID, jr.Generation
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte{0, 1, 0, 0, 0, 0, 0, 0}}}
		resp, _ = wireRoundTrip(t, addr, sync)
		if sr := resp.(*kmsg.SyncGroupResponse); sr.ErrorCode != 0 {
			t.Fatalf("%s: sync: %v", addr, kerr.ErrorForCode(sr.ErrorCode))
		}
		members[side] = jr.MemberID
	}
	describe := func(state string) {
		for _, v := range []int16{5, 6} {
			t.Run(fmt.Sprintf("DescribeGroups v%d of a classic %s group", v, state), func(t *testing.T) {
				var resps [2]kmsg.Response
				var canon [2]bool
				for side, addr := range addrs {
					r := kmsg.NewPtrDescribeGroupsRequest()
					r.SetVersion(v)
					r.Groups = []string{group}
					var raw []byte
					resps[side], raw = wireRoundTrip(t, addr, r)
					canon[side] = bytes.Equal(resps[side].AppendTo(nil), raw)
					for i := range resps[side].(*kmsg.DescribeGroupsResponse).Groups {
						for j := range resps[side].(*kmsg.DescribeGroupsResponse).Groups[i].Members {
							resps[side].(*kmsg.DescribeGroupsResponse).Groups[i].Members[j].MemberID = "masked"
						}
					}
				}
				if canon[0] != canon[1] {
					t.Errorf("null/empty encoding differs: the broker's answer re-encodes to its bytes: %v, frontdoor's: %v", canon[0], canon[1])
				}
				compareWire(t, resps[0], resps[1], resps[0].AppendTo(nil), resps[1].AppendTo(nil))
				if g := resps[1].(*kmsg.DescribeGroupsResponse).Groups; len(g) != 1 || g[0].State != state {
					t.Errorf("frontdoor: %+v, want one group %s", g, state)
				}
			})
		}
	}
	describe("Stable")
	for side, addr := range addrs {
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.SetVersion(4)
		leave.Group = group
		leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: members[side]}}
		resp, _ := wireRoundTrip(t, addr, leave)
		if lr := resp.(*kmsg.LeaveGroupResponse); lr.ErrorCode != 0 {
			t.Fatalf("%s: leave: %v", addr, kerr.ErrorForCode(lr.ErrorCode))
		}
	}
	describe("Empty")
}

type wireCase struct {
	name string
	req  func() kmsg.Request
}

func wireCases(topic, unknown, group string) []wireCase {
	var cs []wireCase
	// Fetch: partition 0 empty (from 0), partition 1 at its end (3), partition 2 out of range;
	// and a topic that does not exist: every version served, v4 to v12 (v11: kcat, kafkajs; v12:
	// sarama, kafka-python; flexible).
	for v := int16(4); v <= 12; v++ {
		for _, isolation := range []int8{0, 1} {
			cs = append(cs, wireCase{fmt.Sprintf("Fetch v%d isolation %d", v, isolation), func() kmsg.Request {
				r := kmsg.NewPtrFetchRequest()
				r.SetVersion(v)
				r.ReplicaID, r.MaxWaitMillis, r.MinBytes, r.MaxBytes = -1, 200, 1, 1<<20
				r.IsolationLevel, r.SessionEpoch = isolation, -1
				for _, name := range []string{topic, unknown} {
					rt := kmsg.NewFetchRequestTopic()
					rt.Topic = name
					for p, off := range []int64{0, 3, 100} {
						rp := kmsg.NewFetchRequestTopicPartition()
						rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), off, 1<<20
						rt.Partitions = append(rt.Partitions, rp)
					}
					r.Topics = append(r.Topics, rt)
				}
				return r
			}})
		}
	}
	// ListOffsets earliest and latest of every partition, and of an unknown topic: every version
	// served, v1 to v6 (v1: kafka-go, v2: kcat, v6: sarama); v7 and later are not served.
	for v := int16(1); v <= 6; v++ {
		for _, ts := range []int64{-2, -1} {
			cs = append(cs, wireCase{fmt.Sprintf("ListOffsets v%d timestamp %d", v, ts), func() kmsg.Request {
				r := kmsg.NewPtrListOffsetsRequest()
				r.SetVersion(v)
				r.ReplicaID = -1
				for _, name := range []string{topic, unknown} {
					rt := kmsg.NewListOffsetsRequestTopic()
					rt.Topic = name
					for p := range int32(3) {
						rp := kmsg.NewListOffsetsRequestTopicPartition()
						rp.Partition, rp.Timestamp = p, ts
						rt.Partitions = append(rt.Partitions, rp)
					}
					r.Topics = append(r.Topics, rt)
				}
				return r
			}})
		}
	}
	// A group that does not exist: its committed offsets (v1 kafka-go, v7 kcat and sarama, v8
	// kafka-python with groups), its description, a heartbeat of a member it does not have.
	for _, v := range []int16{1, 7} {
		cs = append(cs, wireCase{fmt.Sprintf("OffsetFetch v%d", v), func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.SetVersion(v)
			r.Group = group
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{0, 1, 2}
			r.Topics = append(r.Topics, rt)
			return r
		}})
	}
	cs = append(cs, wireCase{"OffsetFetch v8", func() kmsg.Request {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.SetVersion(8)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, []int32{0, 1, 2}
		g.Topics = append(g.Topics, gt)
		r.Groups = append(r.Groups, g)
		return r
	}})
	// v6: GROUP_ID_NOT_FOUND with Kafka's message (KIP-1043); below, Dead without an error.
	for _, v := range []int16{0, 5, 6} {
		cs = append(cs, wireCase{fmt.Sprintf("DescribeGroups v%d", v), func() kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.SetVersion(v)
			r.Groups = []string{group}
			return r
		}})
	}
	for _, v := range []int16{3, 4} {
		cs = append(cs, wireCase{fmt.Sprintf("Heartbeat v%d unknown member", v), func() kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.SetVersion(v)
			r.Group, r.Generation, r.MemberID = group, 1, "nosuch-member"
			return r
		}})
	}
	for _, v := range []int16{5, 7} {
		cs = append(cs, wireCase{fmt.Sprintf("JoinGroup v%d unknown member", v), func() kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.SetVersion(v)
			r.Group, r.MemberID, r.ProtocolType = group, "nosuch-member", "consumer"
			r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 10000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0}
			r.Protocols = append(r.Protocols, p)
			return r
		}})
	}
	// No group is Dead on either side (frontdoor has other tests' groups, so no filter would
	// compare equal).
	cs = append(cs, wireCase{"ListGroups v4 states Dead", func() kmsg.Request {
		r := kmsg.NewPtrListGroupsRequest()
		r.SetVersion(4)
		r.StatesFilter = []string{"Dead"}
		return r
	}})
	for _, v := range []int16{2, 3, 4, 6} {
		cs = append(cs, wireCase{fmt.Sprintf("FindCoordinator v%d", v), func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.SetVersion(v)
			r.CoordinatorKey, r.CoordinatorKeys = group, []string{group}
			return r
		}})
	}
	return cs
}

// wireAllowed lists the fields that must differ between a Kafka broker and frontdoor (paths
// without indexes), and why. Everything else is compared.
var wireAllowed = map[string]string{
	// Throttling is each server's own business.
	"ThrottleMillis": "throttle time",
	// The coordinator is each cluster's own node.
	"NodeID":              "node id of the coordinator",
	"Host":                "host of the coordinator",
	"Port":                "port of the coordinator",
	"Coordinators.NodeID": "node id of the coordinator",
	"Coordinators.Host":   "host of the coordinator",
	"Coordinators.Port":   "port of the coordinator",
	// Fluss has no Kafka leader epochs: frontdoor answers -1 (unknown), so clients skip epoch
	// validation (OffsetForLeaderEpoch is not served), where the broker names its epoch (0).
	"Topics.Partitions.LeaderEpoch": "leader epoch: Fluss has none, -1 (unknown) is sent",
}

// waitCoordinator waits until addr coordinates group (a fresh broker creates its offsets topic
// at the first FindCoordinator).
func waitCoordinator(t *testing.T, ctx context.Context, addr, group string) {
	t.Helper()
	for {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.SetVersion(3)
		r.CoordinatorKey = group
		resp, _ := wireRoundTrip(t, addr, r)
		if resp.(*kmsg.FindCoordinatorResponse).ErrorCode == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: no coordinator for %s", addr, group)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// wireRoundTrip sends req on a connection of its own and returns the decoded answer and its raw
// body (without the response header).
func wireRoundTrip(t *testing.T, addr string, req kmsg.Request) (kmsg.Response, []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	const corr = 7
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, corr)
	b = binary.BigEndian.AppendUint16(b, uint16(len("ferry-wire")))
	b = append(b, "ferry-wire"...)
	if req.IsFlexible() {
		b = append(b, 0) // no header tags
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint32(body) != corr {
		t.Fatalf("%s: correlation id %d", addr, binary.BigEndian.Uint32(body))
	}
	body = body[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() {
		body = body[1:] // response header tags (none are sent)
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s: decode %T v%d: %v", addr, resp, req.GetVersion(), err)
	}
	return resp, body
}

// compareWire reports every field where got (frontdoor) differs from want (the broker), after
// putting topics and partitions in name and index order (servers may answer them in any order).
// kmsg decodes a null and an empty nullable array both as nil, so each answer is also encoded
// again: a side whose bytes are not its decoded answer's encoding sent an empty array where null
// is usual (or the other way round), and the two sides must agree on that.
func compareWire(t *testing.T, want, got kmsg.Response, wantRaw, gotRaw []byte) {
	t.Helper()
	wantCanon := bytes.Equal(want.AppendTo(nil), wantRaw)
	gotCanon := bytes.Equal(got.AppendTo(nil), gotRaw)
	if wantCanon != gotCanon {
		t.Errorf("null/empty encoding differs: the broker's answer re-encodes to its bytes: %v, frontdoor's: %v", wantCanon, gotCanon)
	}
	sortWire(reflect.ValueOf(want))
	sortWire(reflect.ValueOf(got))
	var diffs []string
	diffWire("", reflect.ValueOf(want), reflect.ValueOf(got), &diffs)
	for _, d := range diffs {
		t.Error(d)
	}
	if len(diffs) > 0 {
		t.Logf("broker:    %+v", want)
		t.Logf("frontdoor: %+v", got)
	}
}

var indexes = regexp.MustCompile(`\[\d+\]`)

func diffWire(path string, a, b reflect.Value, diffs *[]string) {
	if why, ok := wireAllowed[strings.TrimPrefix(indexes.ReplaceAllString(path, ""), ".")]; ok {
		_ = why
		return
	}
	if !ok(a) {
		return
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() != b.IsNil() {
			*diffs = append(*diffs, fmt.Sprintf("%s: broker %s, frontdoor %s", path, show(a), show(b)))
			return
		}
		if !a.IsNil() {
			diffWire(path, a.Elem(), b.Elem(), diffs)
		}
	case reflect.Struct:
		for i := range a.NumField() {
			fld := a.Type().Field(i)
			if !fld.IsExported() || fld.Name == "UnknownTags" {
				continue
			}
			diffWire(path+"."+fld.Name, a.Field(i), b.Field(i), diffs)
		}
	case reflect.Slice:
		if a.Type().Elem().Kind() == reflect.Uint8 {
			if a.IsNil() != b.IsNil() || !bytes.Equal(a.Bytes(), b.Bytes()) {
				*diffs = append(*diffs, fmt.Sprintf("%s: broker %s, frontdoor %s", path, show(a), show(b)))
			}
			return
		}
		if a.Len() != b.Len() {
			*diffs = append(*diffs, fmt.Sprintf("%s: broker %d entries, frontdoor %d", path, a.Len(), b.Len()))
			return
		}
		for i := range a.Len() {
			diffWire(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), diffs)
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*diffs = append(*diffs, fmt.Sprintf("%s: broker %v, frontdoor %v", path, a.Interface(), b.Interface()))
		}
	}
}

func ok(v reflect.Value) bool { return v.IsValid() && v.CanInterface() }

func show(v reflect.Value) string {
	switch {
	case v.Kind() == reflect.Pointer && v.IsNil(), v.Kind() == reflect.Slice && v.IsNil():
		return "null"
	case v.Kind() == reflect.Pointer:
		return fmt.Sprintf("%q", fmt.Sprint(v.Elem().Interface()))
	}
	return fmt.Sprintf("%v (%d bytes)", v.Interface(), v.Len())
}

// sortWire orders every slice of structs with a Topic (or Group) and a Partition field by them.
func sortWire(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			sortWire(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				sortWire(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return
		}
		for i := range v.Len() {
			sortWire(v.Index(i))
		}
		key := func(e reflect.Value) string {
			var k []string
			for _, name := range []string{"Group", "Topic", "Partition"} {
				if f := e.FieldByName(name); f.IsValid() {
					k = append(k, fmt.Sprintf("%020v", f.Interface()))
				}
			}
			return strings.Join(k, "/")
		}
		elems := make([]reflect.Value, v.Len())
		for i := range elems {
			elems[i] = reflect.New(v.Type().Elem()).Elem()
			elems[i].Set(v.Index(i))
		}
		slices.SortStableFunc(elems, func(a, b reflect.Value) int { return strings.Compare(key(a), key(b)) })
		for i, e := range elems {
			v.Index(i).Set(e)
		}
	}
}
