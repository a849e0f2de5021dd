package groupapi

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
)

// OffsetDelete v0: deletes a group's committed offsets of some partitions
// (kafka-consumer-groups --delete-offsets). It needs DELETE on the group
// (else a top-level GROUP_AUTHORIZATION_FAILED) and READ on each topic
// (else TOPIC_AUTHORIZATION_FAILED on its partitions), as Kafka checks.
const (
	OffsetDeleteKey int16 = 47
	OffsetDeleteMin       = 0
	OffsetDeleteMax       = 0
)

func (h *groupHandlers) offsetDelete(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if e := authorizeGroup(ctx, s, acl.Delete, r.Group); e != nil {
		resp.ErrorCode = e.Code
		return kafka.Ready(resp), nil
	}
	mayRead := s.MayDo(acl.Read)
	denied := map[string]bool{}
	for _, rt := range r.Topics {
		if !denied[rt.Topic] && !mayRead(rt.Topic) {
			s.Refused(ctx, acl.Read, rt.Topic)
			denied[rt.Topic] = true
		}
	}
	log := s.Log
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		if e := h.owned(ctx, r.Group); e != nil {
			resp.ErrorCode = e.Code
			return resp, nil
		}
		var names []string
		for _, rt := range r.Topics {
			if !denied[rt.Topic] {
				names = append(names, rt.Topic)
			}
		}
		topics, err := h.catalog.Resolve(ctx, names)
		if err != nil {
			log.Warn("offset delete: catalog unavailable", "group", r.Group, "error", err)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		// The partitions refused before the coordinator is asked.
		partErr := map[groups.TopicPartition]int16{}
		var parts []groups.TopicPartition
		for _, rt := range r.Topics {
			m := topics[rt.Topic].Mapping
			for _, rp := range rt.Partitions {
				tp := groups.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
				switch {
				case denied[rt.Topic]:
					partErr[tp] = kerr.TopicAuthorizationFailed.Code
				case m == nil || rp.Partition < 0 || rp.Partition >= m.GetPartitionCount():
					partErr[tp] = kerr.UnknownTopicOrPartition.Code
				default:
					parts = append(parts, tp)
				}
			}
		}
		refused, e := h.coord.DeleteOffsets(ctx, r.Group, parts)
		if e != nil {
			resp.ErrorCode = e.Code
			return resp, nil
		}
		for _, rt := range r.Topics {
			ot := kmsg.NewOffsetDeleteResponseTopic()
			ot.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				tp := groups.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
				op := kmsg.NewOffsetDeleteResponseTopicPartition()
				op.Partition, op.ErrorCode = rp.Partition, partErr[tp]
				if re := refused[tp]; re != nil {
					op.ErrorCode = re.Code
				}
				ot.Partitions = append(ot.Partitions, op)
			}
			resp.Topics = append(resp.Topics, ot)
		}
		return resp, nil
	}}, nil
}
