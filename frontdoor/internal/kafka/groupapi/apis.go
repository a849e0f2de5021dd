package groupapi

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"go.opentelemetry.io/otel/metric"
)

// Handlers are the consumer group APIs, served by a groups.Coordinator;
// transactions (package txnapi) share its choice of coordinator.
type Handlers = groupHandlers

// New builds the group handlers from cfg, with a fetcher to keep offsets
// in; nil without one. The group lag gauge goes to meter.
func New(meter metric.Meter, cfg groups.Config, catalog *backends.Catalog, fetcher *backends.Fetcher, log *slog.Logger) (*Handlers, error) {
	if fetcher == nil {
		return nil, nil
	}
	cfg.Topics = catalogTopics{catalog}
	gh := &groupHandlers{coord: groups.New(cfg, fetcher, log), catalog: catalog}
	if err := registerGroupLag(meter, &groupLag{coord: gh.coord, catalog: catalog, fetcher: fetcher}); err != nil {
		return nil, err
	}
	return gh, nil
}

// Coordinator is the group coordinator the handlers serve from.
func (h *groupHandlers) Coordinator() *groups.Coordinator { return h.coord }

// Owned is nil when this frontdoor coordinates key (a group or a
// transactional id), else the error to answer.
func (h *groupHandlers) Owned(ctx context.Context, key string) *kerr.Error { return h.owned(ctx, key) }

// ServeTransactions makes FindCoordinator answer for transactional ids and
// OffsetFetch with require_stable ask pending whether an open transaction
// holds a partition's offsets.
func (h *groupHandlers) ServeTransactions(pending func(group, topic string, partition int32) bool) {
	h.pendingTxnOffset = pending
}

// APIs are FindCoordinator and, with gh, the consumer group APIs.
func APIs(gh *Handlers) []kafka.API {
	if gh == nil {
		return []kafka.API{(&findCoordinatorHandler{}).api()}
	}
	return append(gh.apis(), (&findCoordinatorHandler{groups: gh, txns: gh.pendingTxnOffset != nil}).api())
}
