package broker

import (
	"strings"
	"testing"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka/admin"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// adminServed are the admin APIs' served ranges, for FuzzShapeMatchesKmsg.
var adminServed = []struct{ key, min, max int16 }{
	{admin.CreateTopicsKey, admin.CreateTopicsMin, admin.CreateTopicsMax}, {admin.DeleteTopicsKey, admin.DeleteTopicsMin, admin.DeleteTopicsMax},
	{admin.DeleteRecordsKey, admin.DeleteRecordsMin, admin.DeleteRecordsMax}, {admin.CreatePartitionsKey, admin.CreatePartitionsMin, admin.CreatePartitionsMax},
	{admin.AlterConfigsKey, admin.AlterConfigsMin, admin.AlterConfigsMax}, {admin.IncrementalAlterConfigsKey, admin.IncrementalAlterConfigsMin, admin.IncrementalAlterConfigsMax},
	{admin.DescribeConfigsKey, admin.DescribeConfigsMin, admin.DescribeConfigsMax},
	{admin.DescribeClusterKey, admin.DescribeClusterMin, admin.DescribeClusterMax},
	{admin.DescribeTopicPartitionsKey, admin.DescribeTopicPartitionsMin, admin.DescribeTopicPartitionsMax},
	{admin.DescribeACLsKey, admin.DescribeACLsMin, admin.DescribeACLsMax}, {admin.DescribeLogDirsKey, admin.DescribeLogDirsMin, admin.DescribeLogDirsMax},
	{admin.DescribeProducersKey, admin.DescribeProducersMin, admin.DescribeProducersMax},
	{admin.ListPartitionReassignmentsKey, admin.ListPartitionReassignmentsMin, admin.ListPartitionReassignmentsMax},
	{admin.ElectLeadersKey, admin.ElectLeadersMin, admin.ElectLeadersMax},
	{admin.AlterPartitionReassignmentsKey, admin.AlterPartitionReassignmentsMin, admin.AlterPartitionReassignmentsMax},
}

// adminRefusals are the APIs that only refuse.
var adminRefusals = adminServed[:6]

// adminShapeSeeds: one request per admin API and version, every array
// with two elements, nullable strings null where the schema allows.
func adminShapeSeeds() []kmsg.Request {
	var out []kmsg.Request
	for _, a := range adminServed {
		for v := a.min; v <= a.max; v++ {
			out = append(out, adminRequest(a.key, v))
		}
	}
	// Null where the layout allows it, and unknown tags.
	noCursor := adminRequest(admin.DescribeTopicPartitionsKey, 0).(*kmsg.DescribeTopicPartitionsRequest)
	noCursor.Cursor = nil
	noCursor.UnknownTags.Set(9, []byte("x"))
	allDirs := kmsg.NewPtrDescribeLogDirsRequest()
	allDirs.Version = admin.DescribeLogDirsMax
	return append(out, noCursor, allDirs)
}

func adminRequest(key, v int16) kmsg.Request {
	two := []string{"orders", "events"}
	switch key {
	case admin.CreateTopicsKey:
		r := kmsg.NewPtrCreateTopicsRequest()
		for _, n := range two {
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = n, 3, 1
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Replicas = []int32{1, 2}
			t.ReplicaAssignment = append(t.ReplicaAssignment, ra, ra)
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("1")
			t.Configs = append(t.Configs, c, kmsg.NewCreateTopicsRequestTopicConfig())
			r.Topics = append(r.Topics, t)
		}
		r.Version = v
		return r
	case admin.DeleteTopicsKey:
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.Version = v
		if v < 6 {
			r.TopicNames = two
		} else {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = kmsg.StringPtr("orders")
			r.Topics = append(r.Topics, t, kmsg.NewDeleteTopicsRequestTopic())
		}
		return r
	case admin.DeleteRecordsKey:
		r := kmsg.NewPtrDeleteRecordsRequest()
		r.Version = v
		for _, n := range two {
			t := kmsg.NewDeleteRecordsRequestTopic()
			t.Topic = n
			p := kmsg.NewDeleteRecordsRequestTopicPartition()
			t.Partitions = append(t.Partitions, p, p)
			r.Topics = append(r.Topics, t)
		}
		return r
	case admin.CreatePartitionsKey:
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.Version = v
		for _, n := range two {
			t := kmsg.NewCreatePartitionsRequestTopic()
			t.Topic, t.Count = n, 8
			as := kmsg.NewCreatePartitionsRequestTopicAssignment()
			as.Replicas = []int32{1, 2}
			t.Assignment = append(t.Assignment, as, as)
			r.Topics = append(r.Topics, t)
		}
		return r
	case admin.AlterConfigsKey:
		r := kmsg.NewPtrAlterConfigsRequest()
		r.Version = v
		for _, n := range two {
			res := kmsg.NewAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, n
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("1")
			res.Configs = append(res.Configs, c, kmsg.NewAlterConfigsRequestResourceConfig())
			r.Resources = append(r.Resources, res)
		}
		return r
	case admin.IncrementalAlterConfigsKey:
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.Version = v
		for _, n := range two {
			res := kmsg.NewIncrementalAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, n
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("1")
			res.Configs = append(res.Configs, c, kmsg.NewIncrementalAlterConfigsRequestResourceConfig())
			r.Resources = append(r.Resources, res)
		}
		return r
	case admin.DescribeConfigsKey:
		r := kmsg.NewPtrDescribeConfigsRequest()
		r.Version, r.IncludeSynonyms, r.IncludeDocumentation = v, true, true
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, "orders", []string{"retention.ms", "cleanup.policy"}
		all := res
		all.ResourceName, all.ConfigNames = "events", nil
		r.Resources = append(r.Resources, res, all)
		return r
	case admin.DescribeClusterKey:
		r := kmsg.NewPtrDescribeClusterRequest()
		r.Version, r.IncludeClusterAuthorizedOperations = v, true
		return r
	case admin.DescribeTopicPartitionsKey:
		r := kmsg.NewPtrDescribeTopicPartitionsRequest()
		r.Version = v
		for _, n := range two {
			t := kmsg.NewDescribeTopicPartitionsRequestTopic()
			t.Topic = n
			r.Topics = append(r.Topics, t)
		}
		r.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "events", Partition: 1}
		return r
	case admin.DescribeACLsKey:
		r := kmsg.NewPtrDescribeACLsRequest()
		r.Version, r.ResourceName, r.Principal = v, kmsg.StringPtr("orders"), kmsg.StringPtr("User:alice")
		return r
	case admin.DescribeLogDirsKey:
		r := kmsg.NewPtrDescribeLogDirsRequest()
		r.Version = v
		t := kmsg.NewDescribeLogDirsRequestTopic()
		t.Topic, t.Partitions = "orders", []int32{0, 1}
		r.Topics = append(r.Topics, t, t)
		return r
	case admin.DescribeProducersKey:
		r := kmsg.NewPtrDescribeProducersRequest()
		r.Version = v
		t := kmsg.NewDescribeProducersRequestTopic()
		t.Topic, t.Partitions = "orders", []int32{0, 1}
		r.Topics = append(r.Topics, t, t)
		return r
	case admin.ListPartitionReassignmentsKey:
		r := kmsg.NewPtrListPartitionReassignmentsRequest()
		r.Version = v
		t := kmsg.NewListPartitionReassignmentsRequestTopic()
		t.Topic, t.Partitions = "orders", []int32{0, 1}
		r.Topics = append(r.Topics, t, t)
		return r
	case admin.ElectLeadersKey:
		r := kmsg.NewPtrElectLeadersRequest()
		r.Version = v
		t := kmsg.NewElectLeadersRequestTopic()
		t.Topic, t.Partitions = "orders", []int32{0, 1}
		r.Topics = append(r.Topics, t, t)
		return r
	case admin.AlterPartitionReassignmentsKey:
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		r.Version = v
		t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		p.Replicas = []int32{1, 2}
		t.Topic, t.Partitions = "orders", append(t.Partitions, p, kmsg.NewAlterPartitionAssignmentsRequestTopicPartition())
		r.Topics = append(r.Topics, t, t)
		return r
	}
	panic("no admin request for " + kmsg.NameForKey(key))
}

// TestDDLRefused: every topic or config change is answered, per topic,
// POLICY_VIOLATION with a message pointing at Fluss DDL (or
// TOPIC_AUTHORIZATION_FAILED for a topic the user may not describe), at
// every version, and the connection keeps serving.
func TestDDLRefused(t *testing.T) {
	rules, err := acl.Parse(strings.NewReader("allow User:* DESCRIBE topic:orders\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{authz: rules})
	c := dialRaw(t, h.addr)
	for _, a := range adminRefusals {
		for v := a.min; v <= a.max; v++ {
			name := kmsg.NameForKey(a.key)
			type answer struct {
				code int16
				msg  *string
			}
			var got []answer
			switch resp := c.roundTrip(adminRequest(a.key, v)).(type) {
			case *kmsg.CreateTopicsResponse:
				for _, rt := range resp.Topics {
					got = append(got, answer{rt.ErrorCode, rt.ErrorMessage})
				}
			case *kmsg.DeleteTopicsResponse:
				for _, rt := range resp.Topics {
					got = append(got, answer{rt.ErrorCode, rt.ErrorMessage})
				}
			case *kmsg.CreatePartitionsResponse:
				for _, rt := range resp.Topics {
					got = append(got, answer{rt.ErrorCode, rt.ErrorMessage})
				}
			case *kmsg.AlterConfigsResponse:
				for _, r := range resp.Resources {
					got = append(got, answer{r.ErrorCode, r.ErrorMessage})
				}
			case *kmsg.IncrementalAlterConfigsResponse:
				for _, r := range resp.Resources {
					got = append(got, answer{r.ErrorCode, r.ErrorMessage})
				}
			case *kmsg.DeleteRecordsResponse:
				for _, rt := range resp.Topics {
					// One answer per topic: its partitions share the code.
					for _, p := range rt.Partitions {
						if p.LowWatermark != -1 || p.ErrorCode != rt.Partitions[0].ErrorCode {
							t.Errorf("%s v%d %s: partition %+v", name, v, rt.Topic, p)
						}
					}
					got = append(got, answer{rt.Partitions[0].ErrorCode, nil})
				}
			}
			if len(got) < 2 {
				t.Fatalf("%s v%d: %d answers, want one per topic", name, v, len(got))
			}
			// v6 DeleteTopics names the second topic by id only; every other
			// request names orders (may describe) first and events second.
			byID := a.key == admin.DeleteTopicsKey && v >= 6
			first, last := got[0], got[len(got)-1]
			if first.code != kerr.PolicyViolation.Code {
				t.Errorf("%s v%d orders: code %d, want POLICY_VIOLATION", name, v, first.code)
			}
			// DeleteRecords has no message field, DeleteTopics one from v5.
			hasMsg := a.key != admin.DeleteRecordsKey && (a.key != admin.DeleteTopicsKey || v >= 5)
			if hasMsg && (first.msg == nil || !strings.Contains(*first.msg, "Fluss DDL") || !strings.Contains(*first.msg, "docs/mapping.md")) {
				t.Errorf("%s v%d orders: message %v does not point at Fluss DDL and docs/mapping.md", name, v, first.msg)
			}
			switch {
			case byID && last.code != kerr.PolicyViolation.Code:
				t.Errorf("%s v%d by id: code %d, want POLICY_VIOLATION", name, v, last.code)
			case !byID && (last.code != kerr.TopicAuthorizationFailed.Code || last.msg != nil):
				t.Errorf("%s v%d events: code %d message %v, want TOPIC_AUTHORIZATION_FAILED without message", name, v, last.code, last.msg)
			}
		}
	}
	// Still serving.
	md := c.roundTrip(mdReq(12, "orders")).(*kmsg.MetadataResponse)
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata after the refusals: %+v", md.Topics)
	}
}

// TestBrokerConfigChangeRefused: a broker config change points at
// frontdoor's configuration, not at Fluss.
func TestBrokerConfigChangeRefused(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	r := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r.Version = 1
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	r.Resources = append(r.Resources, res)
	resp := c.roundTrip(r).(*kmsg.IncrementalAlterConfigsResponse)
	got := resp.Resources[0]
	if got.ErrorCode != kerr.PolicyViolation.Code || got.ErrorMessage == nil || !strings.Contains(*got.ErrorMessage, "docs/configuration.md") {
		t.Fatalf("broker config change: code %d message %v", got.ErrorCode, got.ErrorMessage)
	}
}
