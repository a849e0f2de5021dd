package groupapi

import (
	"context"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
)

// JoinGroup v2-v9 (Kafka 4's range); v4+ dynamic members get their id with
// MEMBER_ID_REQUIRED first (KIP-394). A static member (group.instance.id,
// v5+, KIP-345) that comes back within its session timeout takes its old
// place and assignment without a rebalance.
const (
	JoinGroupKey int16 = 11
	JoinGroupMin       = 2
	JoinGroupMax       = 9
)

// joinGrace bounds a JoinGroup's wait beyond the member's rebalance
// timeout.
const joinGrace = 5 * time.Second

func (h *groupHandlers) joinGroup(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.JoinGroupRequest)
	resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation, resp.MemberID = -1, r.MemberID
	jr := groups.JoinRequest{
		Group: r.Group, MemberID: r.MemberID, ClientID: s.ClientID, ClientHost: clientHost(s.Remote), ProtocolType: r.ProtocolType,
		Session:              time.Duration(r.SessionTimeoutMillis) * time.Millisecond,
		Rebalance:            time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond,
		RequireKnownMemberID: r.Version >= 4,
	}
	if r.InstanceID != nil {
		jr.InstanceID = *r.InstanceID
	}
	for _, p := range r.Protocols {
		jr.Protocols = append(jr.Protocols, groups.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	setErr := func(code int16) kmsg.Response { resp.ErrorCode = code; return resp }
	return h.groupReply(ctx, s, acl.Read, r.Group, setErr, func(ctx context.Context) kmsg.Response {
		ctx, cancel := context.WithTimeout(ctx, jr.Rebalance+joinGrace)
		defer cancel()
		res := h.coord.Join(ctx, jr)
		resp.ErrorCode = errCode(res.Err)
		if res.MemberID != "" {
			resp.MemberID = res.MemberID
		}
		if res.Err != nil {
			return resp
		}
		resp.Generation, resp.LeaderID = res.Generation, res.Leader
		resp.Protocol, resp.ProtocolType = &res.Protocol, &res.ProtocolType
		for _, m := range res.Members {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.ProtocolMetadata = m.ID, m.Metadata
			if m.InstanceID != "" {
				rm.InstanceID = &m.InstanceID
			}
			resp.Members = append(resp.Members, rm)
		}
		return resp
	}), nil
}
