package groupapi

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
)

// ConsumerGroupHeartbeat v0-v1 (KIP-848; v1 has the client pick the member
// id and adds regex subscriptions): joins, heartbeats and leaves of the
// consumer group protocol. The logic is groups.Coordinator's.
const (
	ConsumerGroupHeartbeatKey int16 = 68
	ConsumerGroupHeartbeatMin       = 0
	ConsumerGroupHeartbeatMax       = 1
)

func (h *groupHandlers) consumerGroupHeartbeat(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	setErr := func(code int16) kmsg.Response { resp.ErrorCode = code; return resp }
	creq := groups.ConsumerHeartbeatRequest{Version: r.Version, Group: r.Group, MemberID: r.MemberID, MemberEpoch: r.MemberEpoch,
		InstanceID: r.InstanceID, RackID: r.RackID, RebalanceTimeoutMs: r.RebalanceTimeoutMillis,
		SubscribedTopics: r.SubscribedTopicNames, SubscribedRegex: r.SubscribedTopicRegex, ServerAssignor: r.ServerAssignor,
		ClientID: s.ClientID, ClientHost: clientHost(s.Remote)}
	if r.Topics != nil {
		creq.Owned = make([]groups.OwnedTopic, len(r.Topics))
		for i, t := range r.Topics {
			creq.Owned[i] = groups.OwnedTopic{ID: t.TopicID, Partitions: t.Partitions}
		}
	}
	log := s.Log
	return h.groupReply(ctx, s, acl.Read, r.Group, setErr, func(ctx context.Context) kmsg.Response {
		res := h.coord.ConsumerHeartbeat(ctx, creq)
		if res.Err != nil {
			log.Info("consumer group heartbeat refused", "group", r.Group, "member", r.MemberID, "epoch", r.MemberEpoch,
				"error", res.Err.Message, "reason", res.ErrMessage)
			resp.ErrorCode, resp.ErrorMessage = res.Err.Code, &res.ErrMessage
			return resp
		}
		resp.MemberID, resp.MemberEpoch = &res.MemberID, res.MemberEpoch
		resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval.Milliseconds())
		if res.Sent {
			a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
			a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
			for _, t := range res.Assignment {
				at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
				at.TopicID, at.Partitions = t.ID, t.Partitions
				a.Topics = append(a.Topics, at)
			}
			resp.Assignment = &a
		}
		return resp
	}), nil
}

// clientHost is the client's address as Kafka's coordinator shows a
// member's host (of either protocol): "/" and the IP, without the port.
func clientHost(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return "/" + host
	}
	return remote
}
