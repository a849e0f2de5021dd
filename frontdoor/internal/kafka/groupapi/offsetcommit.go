package groupapi

import (
	"context"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// OffsetCommit v2-v9 (Kafka 4's range; v10 addresses topics by id).
// Offsets are stored durably (fetchsvc's offsets table) before the answer.
const (
	OffsetCommitKey int16 = 8
	OffsetCommitMin       = 2
	OffsetCommitMax       = 9
)

// MaxOffsetMetadata is Kafka's offset.metadata.max.bytes default.
const MaxOffsetMetadata = 4096

func (h *groupHandlers) offsetCommit(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.OffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Topics = make([]kmsg.OffsetCommitResponseTopic, len(r.Topics))
	for i, rt := range r.Topics {
		resp.Topics[i] = kmsg.NewOffsetCommitResponseTopic()
		resp.Topics[i].Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition = rp.Partition
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
		}
	}
	setAll := func(code int16) kmsg.Response {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].ErrorCode == 0 {
					resp.Topics[i].Partitions[j].ErrorCode = code
				}
			}
		}
		return resp
	}
	mayRead := s.MayDo(acl.Read)
	denied := map[string]bool{}
	for i, rt := range r.Topics {
		if denied[rt.Topic] || !mayRead(rt.Topic) {
			if !denied[rt.Topic] {
				s.Refused(ctx, acl.Read, rt.Topic)
			}
			denied[rt.Topic] = true
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = kerr.TopicAuthorizationFailed.Code
			}
		}
	}
	return h.groupReply(ctx, s, acl.Read, r.Group, setAll, func(ctx context.Context) kmsg.Response {
		var names []string
		for _, rt := range r.Topics {
			if !denied[rt.Topic] {
				names = append(names, rt.Topic)
			}
		}
		topics, err := h.catalog.Resolve(ctx, names)
		if err != nil {
			return setAll(kerr.CoordinatorNotAvailable.Code)
		}
		now := time.Now().UnixMilli()
		var offsets []*fetchv1.CommittedOffset
		var commit []*kmsg.OffsetCommitResponseTopicPartition
		for i, rt := range r.Topics {
			if denied[rt.Topic] {
				continue
			}
			m := topics[rt.Topic].Mapping
			for j, rp := range rt.Partitions {
				out := &resp.Topics[i].Partitions[j]
				switch {
				case m == nil || rp.Partition < 0 || rp.Partition >= m.GetPartitionCount():
					out.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case rp.Metadata != nil && len(*rp.Metadata) > MaxOffsetMetadata:
					out.ErrorCode = kerr.OffsetMetadataTooLarge.Code
				default:
					offsets = append(offsets, &fetchv1.CommittedOffset{Topic: rt.Topic, Partition: rp.Partition, Offset: rp.Offset,
						LeaderEpoch: rp.LeaderEpoch, Metadata: rp.Metadata, CommitTimeMs: now})
					commit = append(commit, out)
				}
			}
		}
		if len(offsets) == 0 {
			return resp
		}
		if e := h.coord.Commit(ctx, groups.CommitRequest{Group: r.Group, MemberID: r.MemberID, InstanceID: deref(r.InstanceID),
			Generation: r.Generation, GroupIDNotFound: r.Version >= 9, Version: r.Version, Offsets: offsets}); e != nil {
			for _, out := range commit {
				out.ErrorCode = e.Code
			}
		}
		return resp
	}), nil
}
