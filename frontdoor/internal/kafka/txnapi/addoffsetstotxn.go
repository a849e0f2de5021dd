package txnapi

import (
	"context"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/groupapi"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// AddOffsetsToTxn v0-v4: a consumer group's offsets join the transaction
// (sendOffsetsToTransaction). Needs READ on the group.
const (
	AddOffsetsToTxnKey int16 = 25
	AddOffsetsToTxnMin       = 0
	AddOffsetsToTxnMax       = 4
)

func (h *txnHandlers) addOffsetsToTxn(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	e := kafka.AuthorizeTransactionalID(ctx, s, acl.Write, r.TransactionalID)
	if e == nil {
		e = groupapi.AuthorizeGroup(ctx, s, acl.Read, r.Group)
	}
	if e != nil {
		resp.ErrorCode = e.Code
		return kafka.Ready(resp), nil
	}
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		e := h.Owned(ctx, r.TransactionalID)
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
