package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// TestDescribeProducers: an idempotent producer's id, epoch and last
// acknowledged sequence on the partitions it wrote to; none elsewhere;
// unknown partitions and unreadable topics get their errors.
func TestDescribeProducers(t *testing.T) {
	rules, err := acl.Parse(strings.NewReader("allow User:* WRITE topic:orders\nallow User:* READ topic:orders\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{authz: rules})
	c := dialRaw(t, h.addr)
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version = 4
	pid := c.roundTrip(ip).(*kmsg.InitProducerIDResponse).ProducerID
	for seq, values := range [][]string{{"a", "b"}, {"c", "d", "e"}} {
		first := int32(seq * 2)
		resp := c.roundTrip(produceReq(9, -1, "orders", 1, idemBatch(pid, 0, first, values...))).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
		}
	}
	r := kmsg.NewPtrDescribeProducersRequest()
	for _, tp := range []struct {
		topic string
		parts []int32
	}{{"orders", []int32{0, 1, 9}}, {"events", []int32{0}}} {
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = tp.topic, tp.parts
		r.Topics = append(r.Topics, rt)
	}
	resp := c.roundTrip(r).(*kmsg.DescribeProducersResponse)
	orders, events := resp.Topics[0].Partitions, resp.Topics[1].Partitions
	if orders[0].ErrorCode != 0 || len(orders[0].ActiveProducers) != 0 {
		t.Errorf("partition 0: %+v", orders[0])
	}
	if orders[1].ErrorCode != 0 || len(orders[1].ActiveProducers) != 1 {
		t.Fatalf("partition 1: %+v", orders[1])
	}
	p := orders[1].ActiveProducers[0]
	if p.ProducerID != pid || p.ProducerEpoch != 0 || p.LastSequence != 4 || p.CoordinatorEpoch != -1 || p.CurrentTxnStartOffset != -1 ||
		time.Since(time.UnixMilli(p.LastTimestamp)) > time.Minute {
		t.Errorf("producer on partition 1: %+v", p)
	}
	if orders[0].ErrorMessage != nil || orders[2].ErrorMessage == nil || *orders[2].ErrorMessage != "This server does not host this topic-partition." {
		t.Errorf("messages: %v, %v; want null and the error's standard text", orders[0].ErrorMessage, orders[2].ErrorMessage)
	}
	if orders[2].ErrorCode != kerr.UnknownTopicOrPartition.Code || events[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("partition 9: %d, events: %d", orders[2].ErrorCode, events[0].ErrorCode)
	}
}
