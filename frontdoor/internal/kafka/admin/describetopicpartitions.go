package admin

import (
	"context"
	"slices"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// DescribeTopicPartitions v0 (KIP-966, what Kafka 4's kafka-topics
// --describe sends): the topics' partitions as Metadata shows them, sorted
// by topic name, paged by the client's partition limit (at most
// describeTopicPartitionsLimit, a broker's default) with a cursor.
const (
	DescribeTopicPartitionsKey   int16 = 75
	DescribeTopicPartitionsMin         = 0
	DescribeTopicPartitionsMax         = 0
	describeTopicPartitionsLimit       = 2000
)

type describeTopicPartitionsHandler struct {
	catalog *backends.Catalog
}

func (h *describeTopicPartitionsHandler) api() kafka.API {
	return kafka.API{Key: DescribeTopicPartitionsKey, MinVersion: DescribeTopicPartitionsMin, MaxVersion: DescribeTopicPartitionsMax, Serve: h.serve}
}

func (h *describeTopicPartitionsHandler) serve(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.DescribeTopicPartitionsRequest)
	all := len(r.Topics) == 0
	var names []string
	for _, t := range r.Topics {
		if !slices.Contains(names, t.Topic) {
			names = append(names, t.Topic)
		}
	}
	slices.Sort(names)
	may, read, write := s.MayDo(acl.Describe), s.MayDo(acl.Read), s.MayDo(acl.Write)
	for _, n := range names {
		if !may(n) {
			s.Refused(ctx, acl.Describe, n)
		}
	}
	log := s.Log
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
		var md *catalogv1.MetadataResponse
		var err error
		if all {
			md, err = h.catalog.Metadata(ctx, nil, true)
		} else {
			md, err = h.catalog.Metadata(ctx, names, false)
		}
		if err != nil {
			log.Warn("describe topic partitions: catalog unavailable", "err", err)
			md = &catalogv1.MetadataResponse{}
			for _, n := range names {
				md.Topics = append(md.Topics, &catalogv1.TopicMetadata{Topic: n, ErrorCode: int32(kerr.LeaderNotAvailable.Code)})
			}
		}
		byName := map[string]*catalogv1.TopicMetadata{}
		for _, t := range md.GetTopics() {
			byName[t.GetTopic()] = t
		}
		if all {
			for _, t := range md.GetTopics() {
				if may(t.GetTopic()) { // topics the user may not see are left out
					names = append(names, t.GetTopic())
				}
			}
			slices.Sort(names)
		}
		limit := int(r.ResponsePartitionLimit)
		if limit <= 0 || limit > describeTopicPartitionsLimit {
			limit = describeTopicPartitionsLimit
		}
		// The cursor names the first topic and partition of this page.
		start := 0
		var first int32
		if c := r.Cursor; c != nil {
			start, _ = slices.BinarySearch(names, c.Topic)
			first = c.Partition
		}
		for i := start; i < len(names); i++ {
			name := names[i]
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic = kmsg.StringPtr(name)
			rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			t := byName[name]
			switch {
			case !may(name):
				rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case t == nil:
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				rt.ErrorCode = int16(t.GetErrorCode())
				if len(t.GetTopicId()) == 16 {
					rt.TopicID = [16]byte(t.GetTopicId())
				}
				rt.AuthorizedOperations = topicOperations(may(name), read(name), write(name))
				for _, p := range t.GetPartitions() {
					if r.Cursor != nil && name == r.Cursor.Topic && p.GetPartition() < first {
						continue
					}
					if limit == 0 {
						resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p.GetPartition()}
						break
					}
					rt.Partitions = append(rt.Partitions, partitionOf(p))
					limit--
				}
			}
			resp.Topics = append(resp.Topics, rt)
			if resp.NextCursor != nil {
				break
			}
			if limit == 0 && i+1 < len(names) {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: names[i+1], Partition: 0}
				break
			}
		}
		return resp, nil
	}}, nil
}

// partitionOf is one partition as Metadata shows it (metadata.go topicOf):
// every replica in sync, epoch 0, no eligible leader replicas.
func partitionOf(p *catalogv1.PartitionMetadata) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	out := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	out.Partition, out.LeaderID, out.LeaderEpoch = p.GetPartition(), p.GetLeaderId(), 0
	out.Replicas = append([]int32{}, p.GetReplicaIds()...)
	out.ISR = append([]int32{}, p.GetReplicaIds()...)
	out.EligibleLeaderReplicas, out.LastKnownELR, out.OfflineReplicas = []int32{}, []int32{}, []int32{}
	if out.LeaderID < 0 {
		out.ErrorCode = kerr.LeaderNotAvailable.Code
	}
	return out
}

// topicOperations is the authorized-operations bit field of a topic.
func topicOperations(describe, read, write bool) int32 {
	var ops int32
	if describe {
		ops |= 1<<aclOpDescribe | 1<<aclOpDescribeConfigs
	}
	if read {
		ops |= 1 << aclOpRead
	}
	if write {
		ops |= 1 << aclOpWrite
	}
	return ops
}
