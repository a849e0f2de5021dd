package broker

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/consume"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/groupapi"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/produce"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/fakebackends"
)

// TestDuplicatePartitionEntriesServedAsKafka: Apache Kafka 4.4.0 answers
// a Produce request with duplicate entries once per partition, appending
// the last entry sent for each (checked against a real broker: topics
// dup[0,1,0], dup2[2], dup[1,5] were answered dup[0], dup[1], dup[5],
// dup2[2], and dup-0 held the third entry's record). Ferry must do the
// same, not append every entry.
func TestDuplicatePartitionEntriesServedAsKafka(t *testing.T) {
	for _, ver := range []int16{3, 9, 12} {
		h := newHarness(t, harnessOpts{})
		c := dialRaw(t, h.addr)
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = ver, -1, 10_000
		entry := func(p int32, v string) kmsg.ProduceRequestTopicPartition {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, batchOf(t, v)
			return rp
		}
		topic := func(name string, ps ...kmsg.ProduceRequestTopicPartition) kmsg.ProduceRequestTopic {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic, rt.Partitions = name, ps
			return rt
		}
		req.Topics = []kmsg.ProduceRequestTopic{
			topic("orders", entry(0, "a"), entry(1, "b"), entry(0, "c")),
			topic("events", entry(1, "e")),
			topic("orders", entry(1, "d"), entry(9, "x")),
		}
		resp := c.roundTrip(req).(*kmsg.ProduceResponse)
		got := map[string][]int32{}
		codes := map[int32]int16{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				got[rt.Topic] = append(got[rt.Topic], rp.Partition)
				if rt.Topic == "orders" {
					codes[rp.Partition] = rp.ErrorCode
				}
			}
		}
		if len(resp.Topics) != 2 || len(got["orders"]) != 3 || len(got["events"]) != 1 {
			t.Fatalf("v%d: answered %v in %d topics; want orders 0, 1, 9 and events 1 in two topics", ver, got, len(resp.Topics))
		}
		if codes[0] != 0 || codes[1] != 0 || codes[9] != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("v%d: orders codes %v; want 0, 0 and UNKNOWN_TOPIC_OR_PARTITION for 9", ver, codes)
		}
		for p, want := range map[int32]string{0: "c", 1: "d"} {
			if log := h.ap.Log(100, p); len(log) != 1 || log[0] != want {
				t.Errorf("v%d: orders[%d] holds %q, want only the last entry %q", ver, p, log, want)
			}
		}
		if log := h.ap.Log(200, 1); len(log) != 1 || log[0] != "e" {
			t.Errorf("v%d: events[1] holds %q", ver, log)
		}
	}
}

// nullEntries is a Produce v3 request of n null record sets spread over
// partitions 0..spread-1 of topic.
func nullEntries(topic string, n, spread int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 3, -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rt.Partitions = make([]kmsg.ProduceRequestTopicPartition, n)
	for i := range rt.Partitions {
		rt.Partitions[i].Partition = int32(i % spread)
	}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return req
}

// TestRequestExpandingBeyondBudgetClosesConnection: a request is refused
// by its shape, before it is decoded, when its elements alone would cost
// more than the connection's in-flight budget: the connection is closed,
// as Kafka closes it for a frame over socket.request.max.bytes. One under
// the limit is served.
func TestRequestExpandingBeyondBudgetClosesConnection(t *testing.T) {
	const budget = 1 << 20
	if kafka.WorkBudgetSize(budget)/kafka.ElemCost*8 > budget {
		t.Fatal("the refused request below would not fit the byte budget")
	}
	h := newHarness(t, harnessOpts{cfg: func(c *kafka.Config) {
		c.MaxRequestBytes = budget
		c.ConnInFlightBytes = budget
		c.ServerInFlightBytes = budget
	}})
	limit := int(kafka.WorkBudgetSize(budget) / kafka.ElemCost) // elements a request may have
	// One topic element plus the partition entries.
	ok := nullEntries("orders", limit-1, 3)
	c := dialRaw(t, h.addr)
	resp := c.roundTrip(ok).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
		t.Fatalf("%d entries over 3 partitions answered with %+v; want 3 partitions", limit-1, resp.Topics)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode == 0 {
			t.Errorf("null record set for partition %d accepted", p.Partition)
		}
	}

	c = dialRaw(t, h.addr)
	c.write(frame(nullEntries("orders", limit, 3), 1, nil))
	c.expectClosed()
	// The refusal cost nothing lasting: the server still serves.
	c = dialRaw(t, h.addr)
	if resp := c.roundTrip(produceReq(12, -1, "orders", 0, batchOf(t, "after"))).(*kmsg.ProduceResponse); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce after the refusal: %v", kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
}

// TestProduceFanOutIsBounded: a request with many more partitions than
// produceWorkers is served by at most produceWorkers goroutines.
func TestProduceFanOutIsBounded(t *testing.T) {
	hold := make(chan struct{})
	h := newHarness(t, harnessOpts{hold: hold})
	h.cat.AddTopic("wide", 1000, 300)
	c := dialRaw(t, h.addr)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 12, -1, 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "wide"
	for p := range int32(1000) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batchOf(t, "v")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	corr := c.send(req)
	// The transcoder holds every job: the workers are all busy.
	waitFor(t, func() bool { return h.tcs[0].Jobs.Load() == kafka.ProduceWorkers })
	time.Sleep(50 * time.Millisecond) // a worker too many would start a job now
	if n := h.tcs[0].Jobs.Load(); n != kafka.ProduceWorkers {
		t.Fatalf("%d partitions transcoding at once, want produceWorkers = %d", n, kafka.ProduceWorkers)
	}
	close(hold)
	resp := c.recv(req, corr).(*kmsg.ProduceResponse)
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	if h.tcs[0].Jobs.Load() != 1000 {
		t.Fatalf("%d transcode jobs, want 1000", h.tcs[0].Jobs.Load())
	}
}

// TestShapeCostCoversAllocations measures what worst-shape requests
// allocate in frontdoor per element, and holds elemCost above it: Produce
// with every entry a distinct partition answered with an error, and
// Metadata naming distinct unknown topics (through catalogsvc).
func TestShapeCostCoversAllocations(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	const n = 50_000
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	for i := range n {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(fmt.Sprintf("t%d", i))
		md.Topics = append(md.Topics, mt)
	}
	for _, tc := range []struct {
		name string
		req  kmsg.Request
	}{
		{"produce", nullEntries("orders", n, n)},
		{"metadata", md},
	} {
		wire := frame(tc.req, 1, nil)
		body := wire[4+8+2:]
		if tc.req.IsFlexible() {
			body = body[1:]
		}
		sh, err := kafka.ShapeOf(tc.req.Key(), tc.req.GetVersion(), body)
		if err != nil || sh.Elems < n {
			t.Fatalf("%s: shape %+v, %v; want at least %d elements", tc.name, sh, err, n)
		}
		c := dialRaw(t, h.addr)
		c.roundTrip(nullEntries("orders", 10, 10)) // warm the connection and caches
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		c.write(wire)
		fr, err := c.readFrame()
		runtime.ReadMemStats(&m1)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// The frame and the read buffer are held against the byte budget,
		// not the work budget.
		perElem := float64(int64(m1.TotalAlloc-m0.TotalAlloc)-2*int64(len(wire))-int64(len(fr))) / float64(sh.Elems)
		t.Logf("%s: %.0f bytes allocated per element (elemCost %d); request %d bytes, response %d bytes", tc.name, perElem, kafka.ElemCost, len(wire), len(fr))
		if perElem > kafka.ElemCost {
			t.Errorf("%s: a worst-shape element allocates %.0f bytes; elemCost (%d) must cover it", tc.name, perElem, kafka.ElemCost)
		}
	}
}

// decodedElems counts what kmsg decoded: array elements and unknown tags.
func decodedElems(req kmsg.Request) (elems, entries int) {
	if r, ok := req.(*kmsg.ProduceRequest); ok {
		for _, t := range r.Topics {
			entries += len(t.Partitions)
		}
	}
	return countElems(reflect.ValueOf(req)), entries
}

// countElems counts what the scan counts in a decoded request: the
// elements of every array (not byte strings) and every unknown tag, at
// every level.
func countElems(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return countElems(v.Elem())
	case reflect.Struct:
		if tags, ok := v.Addr().Interface().(*kmsg.Tags); ok {
			return tags.Len()
		}
		n := 0
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n += countElems(v.Field(i))
			}
		}
		return n
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return 0
		}
		n := v.Len()
		for i := range v.Len() {
			n += countElems(v.Index(i))
		}
		return n
	}
	return 0
}

// checkShapeAgainstKmsg: whatever kmsg decodes, the scan accepts and
// counts at least what kmsg allocated for.
func checkShapeAgainstKmsg(t *testing.T, key, version int16, body []byte) {
	t.Helper()
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if err := req.ReadFrom(body); err != nil {
		return
	}
	sh, err := kafka.ShapeOf(key, version, body)
	if err != nil {
		t.Fatalf("%s v%d: kmsg decodes %x but the scan fails: %v", kmsg.NameForKey(key), version, body, err)
	}
	elems, entries := decodedElems(req)
	if sh.Elems < elems || sh.ProduceEntries != entries {
		t.Fatalf("%s v%d: scan counted %d elements, %d entries; kmsg decoded %d, %d", kmsg.NameForKey(key), version, sh.Elems, sh.ProduceEntries, elems, entries)
	}
}

// shapeSeeds are requests real clients send, one per served API and
// version, with tags and nulls where versions allow them.
func shapeSeeds() []kmsg.Request {
	var out []kmsg.Request
	withTags := func(t *kmsg.Tags) { t.Set(7, []byte("x")); t.Set(300, nil) }
	for v := int16(produce.ProduceMin); v <= produce.ProduceMax; v++ {
		r := produceReq(v, -1, "orders", 2, batchWith([]string{"a"}, -1, 0))
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = 1
		withTags(&rp.UnknownTags)
		r.Topics[0].Partitions = append(r.Topics[0].Partitions, rp)
		withTags(&r.UnknownTags)
		out = append(out, r)
	}
	for v := int16(kafka.MetadataMin); v <= kafka.MetadataMax; v++ {
		r := kmsg.NewPtrMetadataRequest()
		r.Version = v
		for _, n := range []string{"orders", "events", "orders"} {
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(n)
			withTags(&mt.UnknownTags)
			r.Topics = append(r.Topics, mt)
		}
		out = append(out, r)
	}
	for v := int16(kafka.ApiVersionsMin); v <= kafka.ApiVersionsMax; v++ {
		r := kmsg.NewPtrApiVersionsRequest()
		r.Version, r.ClientSoftwareName, r.ClientSoftwareVersion = v, "ferry", "1.0"
		withTags(&r.UnknownTags)
		out = append(out, r)
	}
	for v := int16(produce.InitProducerIDMin); v <= produce.InitProducerIDMax; v++ {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.Version = v
		withTags(&r.UnknownTags)
		out = append(out, r)
	}
	for v := int16(consume.FetchMin); v <= consume.FetchMax; v++ {
		r := kmsg.NewPtrFetchRequest()
		r.Version = v
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "orders"
		ft.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition(), kmsg.NewFetchRequestTopicPartition()}
		r.Topics = append(r.Topics, ft)
		fg := kmsg.NewFetchRequestForgottenTopic()
		fg.Topic, fg.Partitions = "events", []int32{1, 2, 3}
		r.ForgottenTopics = append(r.ForgottenTopics, fg)
		out = append(out, r)
	}
	for v := int16(consume.ListOffsetsMin); v <= consume.ListOffsetsMax; v++ {
		r := kmsg.NewPtrListOffsetsRequest()
		r.Version = v
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "orders"
		lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{kmsg.NewListOffsetsRequestTopicPartition(), kmsg.NewListOffsetsRequestTopicPartition()}
		withTags(&lt.UnknownTags)
		r.Topics = append(r.Topics, lt)
		out = append(out, r)
	}
	out = append(out, groupShapeSeeds(withTags)...)
	for v := int16(consume.OffsetForLeaderEpochMin); v <= consume.OffsetForLeaderEpochMax; v++ {
		r := kmsg.NewPtrOffsetForLeaderEpochRequest()
		r.Version, r.ReplicaID = v, -1
		ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
		ot.Topic = "orders"
		ot.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{kmsg.NewOffsetForLeaderEpochRequestTopicPartition(), kmsg.NewOffsetForLeaderEpochRequestTopicPartition()}
		withTags(&ot.Partitions[0].UnknownTags)
		withTags(&ot.UnknownTags)
		withTags(&r.UnknownTags)
		r.Topics = append(r.Topics, ot, ot)
		out = append(out, r)
	}
	out = append(out, adminShapeSeeds()...)
	out = append(out, txnShapeSeeds()...)
	for v := int16(groupapi.FindCoordinatorMin); v <= groupapi.FindCoordinatorMax; v++ {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version, r.CoordinatorKey, r.CoordinatorKeys = v, "g", []string{"a", "b"}
		out = append(out, r)
	}
	for v := int16(kafka.SASLHandshakeMin); v <= kafka.SASLAuthenticateMax; v++ {
		a := kmsg.NewPtrSASLAuthenticateRequest()
		a.Version, a.SASLAuthBytes = v, []byte("\x00u\x00p")
		out = append(out, a)
		if v <= kafka.SASLHandshakeMax {
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Version, hs.Mechanism = v, "PLAIN"
			out = append(out, hs)
		}
	}
	return out
}

// groupShapeSeeds are requests of every consumer group API at every served
// version, with arrays of two elements and unknown tags where flexible.
func groupShapeSeeds(withTags func(*kmsg.Tags)) []kmsg.Request {
	var out []kmsg.Request
	for v := int16(groupapi.JoinGroupMin); v <= groupapi.JoinGroupMax; v++ {
		r := kmsg.NewPtrJoinGroupRequest()
		r.Version, r.Group, r.ProtocolType, r.InstanceID, r.Reason = v, "g", "consumer", kmsg.StringPtr("i"), kmsg.StringPtr("why")
		for _, n := range []string{"range", "cooperative-sticky"} {
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = n, []byte{1, 2}
			withTags(&p.UnknownTags)
			r.Protocols = append(r.Protocols, p)
		}
		out = append(out, r)
	}
	for v := int16(groupapi.SyncGroupMin); v <= groupapi.SyncGroupMax; v++ {
		r := kmsg.NewPtrSyncGroupRequest()
		r.Version, r.Group, r.MemberID, r.ProtocolType, r.Protocol = v, "g", "m", kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		for _, m := range []string{"a", "b"} {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = m, []byte{3}
			r.GroupAssignment = append(r.GroupAssignment, a)
		}
		withTags(&r.UnknownTags)
		out = append(out, r)
	}
	for v := int16(groupapi.HeartbeatMin); v <= groupapi.HeartbeatMax; v++ {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Version, r.Group, r.MemberID, r.InstanceID = v, "g", "m", kmsg.StringPtr("i")
		out = append(out, r)
	}
	for v := int16(groupapi.LeaveGroupMin); v <= groupapi.LeaveGroupMax; v++ {
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Version, r.Group, r.MemberID = v, "g", "m"
		r.Members = []kmsg.LeaveGroupRequestMember{kmsg.NewLeaveGroupRequestMember(), kmsg.NewLeaveGroupRequestMember()}
		out = append(out, r)
	}
	for v := int16(groupapi.OffsetCommitMin); v <= groupapi.OffsetCommitMax; v++ {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.MemberID = v, "g", "m"
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = "orders"
		t.Partitions = []kmsg.OffsetCommitRequestTopicPartition{kmsg.NewOffsetCommitRequestTopicPartition(), kmsg.NewOffsetCommitRequestTopicPartition()}
		t.Partitions[1].Metadata = kmsg.StringPtr("meta")
		withTags(&t.UnknownTags)
		r.Topics = append(r.Topics, t)
		out = append(out, r)
	}
	for v := int16(groupapi.OffsetFetchMin); v <= groupapi.OffsetFetchMax; v++ {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version, r.Group = v, "g"
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = "orders", []int32{0, 1}
		r.Topics = append(r.Topics, t)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID = "g", kmsg.StringPtr("m")
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = "orders", []int32{0, 1}
		g.Topics = append(g.Topics, gt)
		r.Groups = append(r.Groups, g, kmsg.NewOffsetFetchRequestGroup())
		out = append(out, r)
	}
	for v := int16(groupapi.ListGroupsMin); v <= groupapi.ListGroupsMax; v++ {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version, r.StatesFilter, r.TypesFilter = v, []string{"Stable", "Empty"}, []string{"classic"}
		out = append(out, r)
	}
	for v := int16(groupapi.DescribeGroupsMin); v <= groupapi.DescribeGroupsMax; v++ {
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Version, r.Groups = v, []string{"a", "b"}
		out = append(out, r)
	}
	for v := int16(groupapi.DeleteGroupsMin); v <= groupapi.DeleteGroupsMax; v++ {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Version, r.Groups = v, []string{"a", "b"}
		out = append(out, r)
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	for _, topic := range []string{"orders", "events"} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 1}}
		od.Topics = append(od.Topics, rt)
	}
	out = append(out, od)
	return out
}

func TestShapeMatchesKmsg(t *testing.T) {
	for _, r := range shapeSeeds() {
		body := r.AppendTo(nil)
		sh, err := kafka.ShapeOf(r.Key(), r.GetVersion(), body)
		if err != nil {
			t.Fatalf("%s v%d: %v", kmsg.NameForKey(r.Key()), r.GetVersion(), err)
		}
		decoded := kmsg.RequestForKey(r.Key())
		decoded.SetVersion(r.GetVersion())
		if err := decoded.ReadFrom(body); err != nil {
			t.Fatalf("%s v%d: kmsg cannot decode its own encoding: %v", kmsg.NameForKey(r.Key()), r.GetVersion(), err)
		}
		elems, entries := decodedElems(decoded)
		if sh.Elems != elems || sh.ProduceEntries != entries {
			t.Errorf("%s v%d: scan counted %d elements, %d entries; the request has %d, %d",
				kmsg.NameForKey(r.Key()), r.GetVersion(), sh.Elems, sh.ProduceEntries, elems, entries)
		}
		checkShapeAgainstKmsg(t, r.Key(), r.GetVersion(), body)
		// Every truncation either fails both or passes the check.
		for cut := range body {
			checkShapeAgainstKmsg(t, r.Key(), r.GetVersion(), body[:cut])
		}
	}
}

// FuzzShapeMatchesKmsg: for any body kmsg decodes, the shape scan must
// succeed and count at least the elements kmsg allocated (else a request
// could expand beyond what it was charged).
func FuzzShapeMatchesKmsg(f *testing.F) {
	for _, r := range shapeSeeds() {
		var seed []byte
		seed = binary.BigEndian.AppendUint16(seed, uint16(r.Key()))
		seed = binary.BigEndian.AppendUint16(seed, uint16(r.GetVersion()))
		f.Add(r.AppendTo(seed))
	}
	// The served ranges: readHeader refuses other versions before the scan.
	served := []struct{ key, min, max int16 }{
		{kafka.ProduceKey, produce.ProduceMin, produce.ProduceMax}, {kafka.MetadataKey, kafka.MetadataMin, kafka.MetadataMax},
		{kafka.ApiVersionsKey, kafka.ApiVersionsMin, kafka.ApiVersionsMax}, {produce.InitProducerIDKey, produce.InitProducerIDMin, produce.InitProducerIDMax},
		{groupapi.FindCoordinatorKey, groupapi.FindCoordinatorMin, groupapi.FindCoordinatorMax}, {kafka.SASLHandshakeKey, kafka.SASLHandshakeMin, kafka.SASLHandshakeMax},
		{kafka.SASLAuthenticateKey, kafka.SASLAuthenticateMin, kafka.SASLAuthenticateMax}, {consume.FetchKey, consume.FetchMin, consume.FetchMax},
		{consume.ListOffsetsKey, consume.ListOffsetsMin, consume.ListOffsetsMax}, {groupapi.JoinGroupKey, groupapi.JoinGroupMin, groupapi.JoinGroupMax},
		{groupapi.SyncGroupKey, groupapi.SyncGroupMin, groupapi.SyncGroupMax}, {groupapi.HeartbeatKey, groupapi.HeartbeatMin, groupapi.HeartbeatMax},
		{groupapi.LeaveGroupKey, groupapi.LeaveGroupMin, groupapi.LeaveGroupMax}, {groupapi.OffsetCommitKey, groupapi.OffsetCommitMin, groupapi.OffsetCommitMax},
		{groupapi.OffsetFetchKey, groupapi.OffsetFetchMin, groupapi.OffsetFetchMax}, {groupapi.ListGroupsKey, groupapi.ListGroupsMin, groupapi.ListGroupsMax},
		{groupapi.DescribeGroupsKey, groupapi.DescribeGroupsMin, groupapi.DescribeGroupsMax}, {groupapi.DeleteGroupsKey, groupapi.DeleteGroupsMin, groupapi.DeleteGroupsMax},
		{groupapi.OffsetDeleteKey, groupapi.OffsetDeleteMin, groupapi.OffsetDeleteMax},
	}
	served = append(served, adminServed...)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 {
			return
		}
		api := served[int(binary.BigEndian.Uint16(in))%len(served)]
		key := api.key
		version := api.min + int16(binary.BigEndian.Uint16(in[2:])%uint16(api.max-api.min+1))
		checkShapeAgainstKmsg(t, key, version, in[4:])
	})
}

// TestMetadataDuplicatesAndLongLists: a topic named several times is
// answered once, as Kafka answers it, and a list longer than
// metadataTopicsPerCall reaches catalogsvc in calls of bounded size.
func TestMetadataDuplicatesAndLongLists(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	resp := c.roundTrip(mdReq(12, "orders", "nope", "orders", "events", "nope")).(*kmsg.MetadataResponse)
	codes := map[string]int16{}
	for _, tp := range resp.Topics {
		if _, dup := codes[*tp.Topic]; dup {
			t.Fatalf("topic %s answered twice", *tp.Topic)
		}
		codes[*tp.Topic] = tp.ErrorCode
	}
	if len(codes) != 3 || codes["orders"] != 0 || codes["events"] != 0 || codes["nope"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("answered %v; want orders and events, and nope UNKNOWN_TOPIC_OR_PARTITION, once each", codes)
	}

	names := make([]string, 2*kafka.MetadataTopicsPerCall+1)
	for i := range names {
		names[i] = fmt.Sprintf("missing-%d", i)
	}
	names = append(names, "orders")
	before := h.cat.MetadataCalls.Load()
	resp = c.roundTrip(mdReq(12, names...)).(*kmsg.MetadataResponse)
	if len(resp.Topics) != len(names) {
		t.Fatalf("%d topics answered, want %d", len(resp.Topics), len(names))
	}
	if last := resp.Topics[len(resp.Topics)-1]; *last.Topic != "orders" || last.ErrorCode != 0 || len(last.Partitions) != 4 {
		t.Fatalf("the last topic, from the last catalog call: %s %v with %d partitions", *last.Topic, kerr.ErrorForCode(last.ErrorCode), len(last.Partitions))
	}
	if calls := h.cat.MetadataCalls.Load() - before; calls != 3 {
		t.Errorf("%d catalog calls for %d names, want 3", calls, len(names))
	}
	if most := h.cat.MetadataMaxTopics.Load(); most > kafka.MetadataTopicsPerCall {
		t.Errorf("a catalog call carried %d names, over %d", most, kafka.MetadataTopicsPerCall)
	}
}

// FuzzDedupeProduce: after dedupeProduce every topic appears once, every
// (topic, partition) once, each with the last entry sent for it, and the
// number dropped is what was removed.
func FuzzDedupeProduce(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 0, 0, 0, 2, 1, 5})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		// Byte pairs: topic (of four names, '' among them), partition.
		req := kmsg.NewPtrProduceRequest()
		type key struct {
			topic string
			part  int32
		}
		last := map[key]int{}
		total := 0
		for i := 0; i+1 < len(in); i += 2 {
			name := []string{"a", "b", "", "c"}[in[i]%4]
			if len(req.Topics) == 0 || in[i]&4 != 0 || req.Topics[len(req.Topics)-1].Topic != name {
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = name
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = int32(int8(in[i+1]))
			rp.Records = []byte{byte(total)}
			rt := &req.Topics[len(req.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
			last[key{name, rp.Partition}] = total
			total++
		}
		dropped := produce.DedupeProduce(req)
		seenTopic := map[string]bool{}
		kept := 0
		for _, rt := range req.Topics {
			if seenTopic[rt.Topic] {
				t.Fatalf("topic %q appears twice after dedupe", rt.Topic)
			}
			seenTopic[rt.Topic] = true
			for _, rp := range rt.Partitions {
				k := key{rt.Topic, rp.Partition}
				want, ok := last[k]
				if !ok {
					t.Fatalf("%v kept twice or never sent", k)
				}
				if int(rp.Records[0]) != want%256 {
					t.Fatalf("%v kept entry %d, want the last, %d", k, rp.Records[0], want)
				}
				delete(last, k)
				kept++
			}
		}
		if len(last) != 0 || kept+dropped != total {
			t.Fatalf("kept %d + dropped %d of %d entries; missing %v", kept, dropped, total, last)
		}
	})
}

// TestEveryServedAPIHasAShape: the work budget only sees APIs whose
// layout shapeOf knows; every API a frontdoor registers (SASL included)
// must have one.
func TestEveryServedAPIHasAShape(t *testing.T) {
	h := newHarness(t, harnessOpts{sasl: testUsers(t), offsets: fakebackends.NewOffsets()})
	for _, k := range h.srv.Reg.Ranges() {
		if _, ok := kafka.RequestSchemas[k.ApiKey]; !ok {
			t.Errorf("%s is served but shapeOf has no schema for it", kmsg.NameForKey(k.ApiKey))
		}
	}
}
