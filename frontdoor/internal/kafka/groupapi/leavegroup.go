package groupapi

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
)

// LeaveGroup v0-v5; v3+ leave several members at once, and an
// administrator may name static members by instance id alone.
const (
	LeaveGroupKey int16 = 13
	LeaveGroupMin       = 0
	LeaveGroupMax       = 5
)

func (h *groupHandlers) leaveGroup(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.LeaveGroupRequest)
	resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
	setErr := func(code int16) kmsg.Response { resp.ErrorCode = code; return resp }
	return h.groupReply(ctx, s, acl.Read, r.Group, setErr, func(context.Context) kmsg.Response {
		if r.Version < 3 {
			return setErr(errCode(h.coord.Leave(r.Group, []groups.Leaver{{MemberID: r.MemberID}})[0]))
		}
		leavers := make([]groups.Leaver, len(r.Members))
		for i, m := range r.Members {
			leavers[i] = groups.Leaver{MemberID: m.MemberID, InstanceID: deref(m.InstanceID)}
		}
		for i, e := range h.coord.Leave(r.Group, leavers) {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ErrorCode = r.Members[i].MemberID, r.Members[i].InstanceID, errCode(e)
			resp.Members = append(resp.Members, rm)
		}
		return resp
	}), nil
}
