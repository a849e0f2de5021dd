package groupapi

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// Heartbeat v0-v4: keeps a member's session; REBALANCE_IN_PROGRESS tells
// it to rejoin.
const (
	HeartbeatKey int16 = 12
	HeartbeatMin       = 0
	HeartbeatMax       = 4
)

func (h *groupHandlers) heartbeat(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.HeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
	setErr := func(code int16) kmsg.Response { resp.ErrorCode = code; return resp }
	return h.groupReply(ctx, s, acl.Read, r.Group, setErr, func(context.Context) kmsg.Response {
		return setErr(errCode(h.coord.Heartbeat(r.Group, r.MemberID, deref(r.InstanceID), r.Generation)))
	}), nil
}
