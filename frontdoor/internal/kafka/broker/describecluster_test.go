package broker

import (
	"strings"
	"testing"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka/admin"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// TestDescribeCluster: the brokers, cluster id and controller id agree
// with Metadata at every version; a controller endpoint is refused as a
// broker refuses it; the catalog down still answers with this broker.
func TestDescribeCluster(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	md := c.roundTrip(mdReq(12)).(*kmsg.MetadataResponse)
	for v := int16(admin.DescribeClusterMin); v <= admin.DescribeClusterMax; v++ {
		r := kmsg.NewPtrDescribeClusterRequest()
		r.Version = v
		resp := c.roundTrip(r).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 || md.ClusterID == nil || resp.ClusterID != *md.ClusterID || resp.ControllerID != md.ControllerID ||
			len(resp.Brokers) != len(md.Brokers) || resp.Brokers[0].NodeID != md.Brokers[0].NodeID ||
			resp.Brokers[0].Host != md.Brokers[0].Host || resp.Brokers[0].Port != md.Brokers[0].Port {
			t.Fatalf("v%d: %+v, metadata %+v", v, resp, md)
		}
		if resp.ClusterAuthorizedOperations != -2147483648 {
			t.Errorf("v%d: authorized operations %d without being asked", v, resp.ClusterAuthorizedOperations)
		}
	}
	r := kmsg.NewPtrDescribeClusterRequest()
	r.Version, r.IncludeClusterAuthorizedOperations = 2, true
	if resp := c.roundTrip(r).(*kmsg.DescribeClusterResponse); resp.ClusterAuthorizedOperations != 1<<8|1<<10|1<<12 {
		t.Errorf("authorized operations %b, want DESCRIBE, DESCRIBE_CONFIGS, IDEMPOTENT_WRITE", resp.ClusterAuthorizedOperations)
	}
	r = kmsg.NewPtrDescribeClusterRequest()
	r.Version, r.EndpointType = 1, 2
	resp := c.roundTrip(r).(*kmsg.DescribeClusterResponse)
	if resp.ErrorCode != kerr.MismatchedEndpointType.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "CONTROLLER") {
		t.Errorf("controller endpoint: %+v", resp)
	}
	h.cat.Down.Store(true)
	r = kmsg.NewPtrDescribeClusterRequest()
	if resp := c.roundTrip(r).(*kmsg.DescribeClusterResponse); resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 7 || resp.ControllerID != 7 {
		t.Errorf("catalog down: %+v", resp)
	}
}

func describeTopicPartitions(c *rawClient, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	r := kmsg.NewPtrDescribeTopicPartitionsRequest()
	r.ResponsePartitionLimit, r.Cursor = limit, cursor
	for _, n := range topics {
		t := kmsg.NewDescribeTopicPartitionsRequestTopic()
		t.Topic = n
		r.Topics = append(r.Topics, t)
	}
	return c.roundTrip(r).(*kmsg.DescribeTopicPartitionsResponse)
}

// listed is "topic:partition" of every partition of resp, and each topic's
// error code.
func listed(resp *kmsg.DescribeTopicPartitionsResponse) (parts []string, codes map[string]int16) {
	codes = map[string]int16{}
	for _, t := range resp.Topics {
		codes[*t.Topic] = t.ErrorCode
		for _, p := range t.Partitions {
			parts = append(parts, *t.Topic+":"+string(rune('0'+p.Partition)))
		}
	}
	return parts, codes
}

// TestDescribeTopicPartitions: the topics' partitions as Metadata shows
// them, sorted by name, paged with a cursor; unknown and refused topics
// get their errors; listing all leaves refused topics out.
func TestDescribeTopicPartitions(t *testing.T) {
	rules, err := acl.Parse(strings.NewReader("allow User:* DESCRIBE topic:orders\nallow User:* DESCRIBE topic:events\nallow User:* DESCRIBE topic:nope\nallow User:* READ topic:events\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{authz: rules})
	h.cat.AddTopic("hidden", 1, 300)
	c := dialRaw(t, h.addr)
	md := c.roundTrip(mdReq(12, "events")).(*kmsg.MetadataResponse)

	resp := describeTopicPartitions(c, 0, nil, "orders", "nope", "events", "hidden")
	parts, codes := listed(resp)
	if got := strings.Join(parts, " "); got != "events:0 events:1 orders:0 orders:1 orders:2 orders:3" {
		t.Errorf("partitions %s", got)
	}
	if codes["nope"] != kerr.UnknownTopicOrPartition.Code || codes["hidden"] != kerr.TopicAuthorizationFailed.Code || codes["orders"] != 0 || resp.NextCursor != nil {
		t.Errorf("codes %v, cursor %+v", codes, resp.NextCursor)
	}
	ev := resp.Topics[0]
	if *ev.Topic != "events" || ev.TopicID != md.Topics[0].TopicID || ev.AuthorizedOperations != 1<<3|1<<8|1<<10 {
		t.Errorf("events: %+v", ev)
	}
	p := ev.Partitions[1]
	mp := md.Topics[0].Partitions[1]
	if p.LeaderID != mp.Leader || len(p.Replicas) != 1 || p.Replicas[0] != mp.Replicas[0] || len(p.ISR) != 1 || p.EligibleLeaderReplicas == nil || p.LeaderEpoch != 0 {
		t.Errorf("events partition 1: %+v, metadata %+v", p, mp)
	}

	// All topics, three partitions a page: hidden is left out.
	var pages []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for range 5 {
		resp := describeTopicPartitions(c, 3, cursor)
		parts, _ := listed(resp)
		pages = append(pages, strings.Join(parts, " "))
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	if got := strings.Join(pages, " | "); got != "events:0 events:1 orders:0 | orders:1 orders:2 orders:3" {
		t.Errorf("pages: %s", got)
	}
}
