package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// AddOffsetsToTxn v0-v4: a consumer group's offsets join the transaction
// (sendOffsetsToTransaction). Needs READ on the group.
const (
	addOffsetsToTxnKey int16 = 25
	addOffsetsToTxnMin       = 0
	addOffsetsToTxnMax       = 4
)

func (h *txnHandlers) addOffsetsToTxn(ctx context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	e := authorizeTxnID(ctx, s, acl.Write, r.TransactionalID)
	if e == nil {
		e = authorizeGroup(ctx, s, acl.Read, r.Group)
	}
	if e != nil {
		resp.ErrorCode = e.Code
		return ready(resp), nil
	}
	return Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		e := h.owned(ctx, r.TransactionalID)
		if e == nil {
			e = h.coord.AddGroup(r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group)
		}
		if e != nil {
			resp.ErrorCode = e.Code
			s.Log.Info("AddOffsetsToTxn refused", "transactional_id", r.TransactionalID, "group", r.Group, "error", e.Error())
		}
		return resp, nil
	}}, nil
}
