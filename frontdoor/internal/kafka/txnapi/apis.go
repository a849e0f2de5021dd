package txnapi

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/groupapi"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Transactions (docs/transactions.md): the coordinator of a transactional
// id is chosen among the live frontdoors as a group's is, and its logic is
// package txn. The handler files (addpartitionstotxn.go, addoffsetstotxn.go,
// txnoffsetcommit.go, endtxn.go, describetransactions.go,
// listtransactions.go) decode, call txn and encode. Transactions need
// consumer groups (fetchsvc) and idempotence.
type txnHandlers struct {
	coord   *txn.Coordinator
	groups  *groupapi.Handlers
	catalog *backends.Catalog
}

// Handlers serve the transaction APIs.
type Handlers = txnHandlers

// New starts the transaction coordinator from cfg, resolving topics with
// catalog, appending through ap
// and committing offsets through the group handlers gh, which also choose
// each transactional id's coordinator and from now on answer for
// transactions (FindCoordinator, OffsetFetch's require_stable).
func New(cfg txn.Config, catalog *backends.Catalog, ap *backends.Appender, gh *groupapi.Handlers, log *slog.Logger, tp trace.TracerProvider, mp metric.MeterProvider) (*Handlers, error) {
	coord, err := txn.New(cfg, txnBackend{ap: ap, groups: gh.Coordinator()}, log, tp, mp)
	if err != nil {
		return nil, err
	}
	gh.ServeTransactions(coord.PendingOffset)
	return &txnHandlers{coord: coord, groups: gh, catalog: catalog}, nil
}

// Coordinator is the transaction coordinator the handlers serve from.
func (h *txnHandlers) Coordinator() *txn.Coordinator { return h.coord }

// APIs are the transaction APIs.
func (h *txnHandlers) APIs() []kafka.API {
	return []kafka.API{
		{Key: AddPartitionsToTxnKey, MinVersion: AddPartitionsToTxnMin, MaxVersion: AddPartitionsToTxnMax, Serve: h.addPartitionsToTxn},
		{Key: AddOffsetsToTxnKey, MinVersion: AddOffsetsToTxnMin, MaxVersion: AddOffsetsToTxnMax, Serve: h.addOffsetsToTxn},
		{Key: TxnOffsetCommitKey, MinVersion: TxnOffsetCommitMin, MaxVersion: TxnOffsetCommitMax, Serve: h.txnOffsetCommit},
		{Key: EndTxnKey, MinVersion: EndTxnMin, MaxVersion: EndTxnMax, Serve: h.endTxn},
		{Key: DescribeTransactionsKey, MinVersion: DescribeTransactionsMin, MaxVersion: DescribeTransactionsMax, Serve: h.describeTransactions},
		{Key: ListTransactionsKey, MinVersion: ListTransactionsMin, MaxVersion: ListTransactionsMax, Serve: h.listTransactions},
	}
}

// Owned is nil when this frontdoor coordinates the transactional id.
func (h *txnHandlers) Owned(ctx context.Context, id string) *kerr.Error {
	return h.groups.Owned(ctx, id)
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

// errCode is e's code, 0 for nil.
func errCode(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}
