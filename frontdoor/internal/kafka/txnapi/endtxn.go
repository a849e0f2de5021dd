package txnapi

import (
	"context"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// EndTxn v0-v5: commit or abort. A commit is answered once the staged
// batches and offsets are in Fluss (docs/transactions.md); v5's producer
// id and epoch are the unchanged ones (transaction version 1: no epoch
// bump per transaction).
const (
	EndTxnKey int16 = 26
	EndTxnMin       = 0
	EndTxnMax       = 5
)

// endTxnWait bounds how long one EndTxn waits for its apply before it is
// answered CONCURRENT_TRANSACTIONS (retried by clients).
const endTxnWait = 20 * time.Second

func (h *txnHandlers) endTxn(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.EndTxnRequest)
	refused := kafka.AuthorizeTransactionalID(ctx, s, acl.Write, r.TransactionalID)
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		e := refused
		if e == nil {
			e = h.Owned(ctx, r.TransactionalID)
		}
		if e == nil {
			ctx, cancel := context.WithTimeout(ctx, endTxnWait)
			defer cancel()
			e = h.coord.End(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit)
		}
		if e != nil {
			resp.ErrorCode = e.Code
			s.Log.Info("EndTxn refused", "transactional_id", r.TransactionalID, "commit", r.Commit, "error", e.Error())
			return resp, nil
		}
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch
		return resp, nil
	}}, nil
}
