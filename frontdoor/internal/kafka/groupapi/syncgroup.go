package groupapi

import (
	"context"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
)

// SyncGroup v0-v5: the leader hands in the assignment, every member gets
// its part.
const (
	SyncGroupKey int16 = 14
	SyncGroupMin       = 0
	SyncGroupMax       = 5
)

// syncWait bounds how long a member waits for its leader's SyncGroup
// (Kafka waits up to the rebalance timeout, which SyncGroup does not carry).
const syncWait = 5 * time.Minute

func (h *groupHandlers) syncGroup(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.SyncGroupRequest)
	resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
	sr := groups.SyncRequest{Group: r.Group, MemberID: r.MemberID, InstanceID: deref(r.InstanceID), Generation: r.Generation}
	if r.ProtocolType != nil {
		sr.ProtocolType = *r.ProtocolType
	}
	if r.Protocol != nil {
		sr.Protocol = *r.Protocol
	}
	if len(r.GroupAssignment) > 0 {
		sr.Assignments = map[string][]byte{}
		for _, a := range r.GroupAssignment {
			sr.Assignments[a.MemberID] = a.MemberAssignment
		}
	}
	setErr := func(code int16) kmsg.Response { resp.ErrorCode = code; return resp }
	return h.groupReply(ctx, s, acl.Read, r.Group, setErr, func(ctx context.Context) kmsg.Response {
		ctx, cancel := context.WithTimeout(ctx, syncWait)
		defer cancel()
		res := h.coord.Sync(ctx, sr)
		resp.ErrorCode = errCode(res.Err)
		if res.Err == nil {
			resp.MemberAssignment = res.Assignment
			resp.ProtocolType, resp.Protocol = &res.ProtocolType, &res.Protocol
		}
		return resp
	}), nil
}
