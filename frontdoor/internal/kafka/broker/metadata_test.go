package broker

import (
	"sort"
	"testing"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func mdReq(version int16, topics ...string) *kmsg.MetadataRequest {
	r := kmsg.NewPtrMetadataRequest()
	r.Version = version
	r.AllowAutoTopicCreation = true // must be ignored
	if topics == nil {
		if version == 0 {
			r.Topics = []kmsg.MetadataRequestTopic{}
		}
		return r
	}
	r.Topics = []kmsg.MetadataRequestTopic{}
	for _, n := range topics {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		r.Topics = append(r.Topics, t)
	}
	return r
}

func topicNames(resp *kmsg.MetadataResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		if t.Topic != nil {
			out = append(out, *t.Topic)
		}
	}
	sort.Strings(out)
	return out
}

func TestMetadataEveryVersion(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for v := int16(kafka.MetadataMin); v <= kafka.MetadataMax; v++ {
		c := dialRaw(t, h.addr)
		all := c.roundTrip(mdReq(v)).(*kmsg.MetadataResponse)
		if got := topicNames(all); len(got) != 2 || got[0] != "events" || got[1] != "orders" {
			t.Fatalf("v%d all topics: %v", v, got)
		}
		if len(all.Brokers) != 1 || all.Brokers[0].NodeID != 7 || all.Brokers[0].Host != "127.0.0.1" {
			t.Fatalf("v%d brokers: %+v", v, all.Brokers)
		}
		if v >= 1 && all.ControllerID != 7 {
			t.Errorf("v%d controller %d, want 7", v, all.ControllerID)
		}
		if v >= 2 && (all.ClusterID == nil || *all.ClusterID != "ferry-test") {
			t.Errorf("v%d cluster id %v", v, all.ClusterID)
		}

		named := c.roundTrip(mdReq(v, "orders", "missing")).(*kmsg.MetadataResponse)
		if len(named.Topics) != 2 {
			t.Fatalf("v%d: %d topics, want 2", v, len(named.Topics))
		}
		for _, tp := range named.Topics {
			switch *tp.Topic {
			case "orders":
				if tp.ErrorCode != 0 || len(tp.Partitions) != 4 {
					t.Fatalf("v%d orders: error %d, %d partitions", v, tp.ErrorCode, len(tp.Partitions))
				}
				for _, p := range tp.Partitions {
					if p.Leader != 7 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
						t.Errorf("v%d partition %+v", v, p)
					}
				}
				if v >= 10 && tp.TopicID == [16]byte{} {
					t.Errorf("v%d: no topic id", v)
				}
			case "missing":
				if tp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					t.Errorf("v%d missing topic: error %d (auto-creation must never happen)", v, tp.ErrorCode)
				}
			}
		}
	}
	if v1Empty := dialRaw(t, h.addr).roundTrip(mdReq(1, []string{}...)).(*kmsg.MetadataResponse); len(v1Empty.Topics) != 0 {
		// v1+: an empty (not null) list asks for no topics.
		t.Fatalf("v1 empty list returned %d topics", len(v1Empty.Topics))
	}
}

func TestMetadataByTopicID(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	all := c.roundTrip(mdReq(12)).(*kmsg.MetadataResponse)
	var id [16]byte
	for _, tp := range all.Topics {
		if *tp.Topic == "events" {
			id = tp.TopicID
		}
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = id
	unknown := kmsg.NewMetadataRequestTopic()
	unknown.TopicID = [16]byte{1}
	req.Topics = []kmsg.MetadataRequestTopic{byID, unknown}
	resp := c.roundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 2 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "events" {
		t.Fatalf("by id: %+v", resp.Topics)
	}
	if resp.Topics[1].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown id: error %d", resp.Topics[1].ErrorCode)
	}
}

func TestMetadataCatalogDown(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	c.roundTrip(mdReq(12, "orders")) // learn the cluster id
	h.cat.Down.Store(true)
	resp := c.roundTrip(mdReq(12, "orders")).(*kmsg.MetadataResponse)
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 7 {
		t.Fatalf("brokers %+v, want this frontdoor", resp.Brokers)
	}
	if resp.ClusterID == nil || *resp.ClusterID != "ferry-test" {
		t.Fatalf("cluster id %v, want the last known", resp.ClusterID)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("topics %+v, want LEADER_NOT_AVAILABLE", resp.Topics)
	}
}

func TestHeartbeatRegisters(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	waitFor(t, func() bool { return h.cat.Heartbeats.Load() >= 1 })
}
