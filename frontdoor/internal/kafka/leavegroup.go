package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// LeaveGroup v0-v5; v3+ leave several members at once.
const (
	leaveGroupKey int16 = 13
	leaveGroupMin       = 0
	leaveGroupMax       = 5
)

func (h *groupHandlers) leaveGroup(ctx context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.LeaveGroupRequest)
	resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
	setErr := func(code int16) kmsg.Response { resp.ErrorCode = code; return resp }
	return h.groupReply(ctx, s, acl.Read, r.Group, setErr, func(context.Context) kmsg.Response {
		if r.Version < 3 {
			return setErr(errCode(h.coord.Leave(r.Group, []string{r.MemberID})[0]))
		}
		ids := make([]string, len(r.Members))
		for i, m := range r.Members {
			ids[i] = m.MemberID
		}
		for i, e := range h.coord.Leave(r.Group, ids) {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ErrorCode = r.Members[i].MemberID, r.Members[i].InstanceID, errCode(e)
			resp.Members = append(resp.Members, rm)
		}
		return resp
	}), nil
}
