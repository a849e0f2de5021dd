package suite

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/e2e/clients"
)

// TestAdminAnswersMatchKafkaBroker sends the same admin requests, where a broker and Ferry should
// answer alike (unknown topics, a controller endpoint, no authorizer, no reassignments), to a
// real Kafka 4.4 broker and to frontdoor, and compares the answers field by field, null against
// empty included. Left out: what names the cluster (ids, brokers, throttle), and a topic's
// authorized operations, which on a broker without an authorizer are all of them while Ferry
// lists only what it serves (never CREATE, DELETE, ALTER).
func TestAdminAnswersMatchKafkaBroker(t *testing.T) {
	e, _ := need(t)
	if !clients.BrokerInstalled() {
		t.Skip("reference Kafka broker not installed (tools/install-clients.sh)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	broker, err := clients.StartBroker(ctx, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Stop() })
	kafka, ferry := newKgo(t, broker.Bootstrap), newKgo(t, e.kafka)

	const missing = "no-such-topic-anywhere"
	cases := map[string]func() kmsg.Request{
		"DescribeConfigs unknown topic": func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, missing
			r.Resources = append(r.Resources, res)
			return r
		},
		"DescribeTopicPartitions unknown topic": func() kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = missing
			r.Topics = append(r.Topics, rt)
			return r
		},
		"DescribeCluster controller endpoint": func() kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.EndpointType = 2
			return r
		},
		"DescribeAcls without an authorizer": func() kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		},
		"ListPartitionReassignments": func() kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() },
		"DescribeProducers unknown topic": func() kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			rt := kmsg.NewDescribeProducersRequestTopic()
			rt.Topic, rt.Partitions = missing, []int32{0}
			r.Topics = append(r.Topics, rt)
			return r
		},
	}
	// The admin APIs Ferry lists, at the versions the broker lists.
	ranges := func(cl *kgo.Client) map[int16][2]int16 {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "ferry-e2e", "1.0" // required from v3
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int16][2]int16{}
		for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
			out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		return out
	}
	brokerRanges, ferryRanges := ranges(kafka), ranges(ferry)
	for _, key := range []int16{19, 20, 21, 29, 32, 33, 35, 37, 43, 44, 45, 46, 60, 61, 75} {
		if ferryRanges[key] != brokerRanges[key] {
			t.Errorf("%s: ferry lists v%d-v%d, the broker v%d-v%d", kmsg.NameForKey(key),
				ferryRanges[key][0], ferryRanges[key][1], brokerRanges[key][0], brokerRanges[key][1])
		}
	}

	for name, req := range cases {
		want := answer(t, ctx, kafka, req())
		got := answer(t, ctx, ferry, req())
		if got != want {
			t.Errorf("%s:\nferry %s\nkafka %s", name, got, want)
		}
	}
}

// answer is resp as JSON without the fields that differ between any two clusters.
func answer(t *testing.T, ctx context.Context, cl *kgo.Client, req kmsg.Request) string {
	t.Helper()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req) // this broker, unsharded
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ThrottleMillis", "ClusterID", "ControllerID", "Brokers"} {
		delete(m, k)
	}
	if topics, ok := m["Topics"].([]any); ok {
		for _, tp := range topics {
			delete(tp.(map[string]any), "AuthorizedOperations")
		}
	}
	b, _ = json.Marshal(m)
	return string(b)
}
