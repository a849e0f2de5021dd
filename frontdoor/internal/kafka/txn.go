package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// Transactions (docs/transactions.md): the coordinator of a transactional
// id is chosen among the live frontdoors as a group's is, and its logic is
// package txn. The handler files (addpartitionstotxn.go, addoffsetstotxn.go,
// txnoffsetcommit.go, endtxn.go, describetransactions.go,
// listtransactions.go) decode, call txn and encode. Transactions need
// consumer groups (fetchsvc) and idempotence.
type txnHandlers struct {
	coord  *txn.Coordinator
	groups *groupHandlers
}

func (h *txnHandlers) apis() []API {
	return []API{
		{Key: addPartitionsToTxnKey, MinVersion: addPartitionsToTxnMin, MaxVersion: addPartitionsToTxnMax, Serve: h.addPartitionsToTxn},
		{Key: addOffsetsToTxnKey, MinVersion: addOffsetsToTxnMin, MaxVersion: addOffsetsToTxnMax, Serve: h.addOffsetsToTxn},
		{Key: txnOffsetCommitKey, MinVersion: txnOffsetCommitMin, MaxVersion: txnOffsetCommitMax, Serve: h.txnOffsetCommit},
		{Key: endTxnKey, MinVersion: endTxnMin, MaxVersion: endTxnMax, Serve: h.endTxn},
		{Key: describeTransactionsKey, MinVersion: describeTransactionsMin, MaxVersion: describeTransactionsMax, Serve: h.describeTransactions},
		{Key: listTransactionsKey, MinVersion: listTransactionsMin, MaxVersion: listTransactionsMax, Serve: h.listTransactions},
	}
}

// authorizeTxnID checks the principal's permission for a transactional
// id, logging a refusal. It reads the session: call it from Serve.
func authorizeTxnID(ctx context.Context, s *Session, op acl.Operation, id string) *kerr.Error {
	if s.authz == nil || s.authz.AllowedTransactionalID(acl.Principal(s.User), op, id) {
		return nil
	}
	s.Log.Warn("not authorized", "principal", acl.Principal(s.User), "operation", op.String(), "transactional_id", id)
	if s.denied != nil {
		s.denied(ctx, op)
	}
	return kerr.TransactionalIDAuthorizationFailed
}

// owned is nil when this frontdoor coordinates the transactional id.
func (h *txnHandlers) owned(ctx context.Context, id string) *kerr.Error {
	return h.groups.owned(ctx, id)
}

// txnBackend gives the coordinator appendsvc and the group coordinator.
type txnBackend struct {
	ap     *backends.Appender
	groups *groups.Coordinator
}

func (b txnBackend) NewWriterID(ctx context.Context) (int64, error) { return b.ap.InitWriter(ctx) }

func (b txnBackend) Append(ctx context.Context, req *appendv1.AppendRequest) (*appendv1.AppendResponse, error) {
	return b.ap.Submit(ctx, req).Wait(ctx)
}

func (b txnBackend) CommitOffsets(ctx context.Context, group string, offsets []*fetchv1.CommittedOffset) error {
	return b.groups.CommitTransactional(ctx, group, offsets)
}
