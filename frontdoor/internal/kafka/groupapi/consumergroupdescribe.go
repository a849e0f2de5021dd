package groupapi

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
)

// ConsumerGroupDescribe v0-v1 (KIP-848): a consumer protocol group's
// epochs, assignor and members with their current and target assignments,
// what kafka-consumer-groups --describe shows for such a group.
const (
	ConsumerGroupDescribeKey int16 = 69
	ConsumerGroupDescribeMin       = 0
	ConsumerGroupDescribeMax       = 1
)

func (h *groupHandlers) consumerGroupDescribe(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.ConsumerGroupDescribeRequest)
	errs := make([]*kerr.Error, len(r.Groups))
	for i, g := range r.Groups {
		errs[i] = authorizeGroup(ctx, s, acl.Describe, g)
	}
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for i, id := range r.Groups {
			g := kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group = id
			e := errs[i]
			if e == nil {
				e = h.owned(ctx, id)
			}
			if e != nil {
				g.ErrorCode = e.Code
				resp.Groups = append(resp.Groups, g)
				continue
			}
			d, e, msg := h.coord.DescribeConsumerGroup(id)
			if e != nil {
				g.ErrorCode, g.ErrorMessage = e.Code, &msg
				resp.Groups = append(resp.Groups, g)
				continue
			}
			g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName = string(d.State), d.Epoch, d.AssignmentEpoch, d.Assignor
			g.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
			for _, m := range d.Members {
				rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.ID, m.Epoch, m.ClientID, m.ClientHost
				rm.InstanceID, rm.RackID = optString(m.InstanceID), optString(m.RackID)
				// Kafka sends an empty regex, not null, for a member without one.
				regex := m.SubscribedRegex
				rm.SubscribedTopics, rm.SubscribedTopicRegex = m.SubscribedTopics, &regex
				if rm.SubscribedTopics == nil {
					rm.SubscribedTopics = []string{}
				}
				rm.Assignment, rm.TargetAssignment = describedAssignment(m.Assignment), describedAssignment(m.Target)
				rm.MemberType = 1 // a consumer protocol member (v1+)
				g.Members = append(g.Members, rm)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}}, nil
}

func describedAssignment(ts []groups.AssignedTopic) kmsg.Assignment {
	a := kmsg.Assignment{TopicPartitions: []kmsg.AssignmentTopicPartition{}}
	for _, t := range ts {
		a.TopicPartitions = append(a.TopicPartitions, kmsg.AssignmentTopicPartition{TopicID: t.ID, Topic: t.Name, Partitions: t.Partitions})
	}
	return a
}

// optString is nil for "", else &s.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
