package produce

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
	"go.opentelemetry.io/otel/trace"
)

// Transactions are what produce needs of the transaction APIs: the
// coordinator that stages transactional batches and hands out producer
// ids of transactional ids, and whether this frontdoor coordinates an id.
type Transactions struct {
	Coordinator *txn.Coordinator
	Owned       func(ctx context.Context, id string) *kerr.Error
}

// APIs are Produce and, when states is set (idempotence on),
// InitProducerId; with txns (nil: refused) both serve transactional ids.
func APIs(cfg ProduceConfig, catalog *backends.Catalog, tc *backends.Transcoder, ap *backends.Appender, states *idempotence.States, tracer trace.Tracer, metrics *kafka.ServerMetrics, txns *Transactions) []kafka.API {
	p := &producer{cfg: cfg, catalog: catalog, tc: tc, ap: ap, seq: NewSequencer(), idem: states, tracer: tracer, metrics: metrics}
	ih := &initProducerIDHandler{states: states}
	if txns != nil {
		p.txns, ih.txns, ih.owned = txns.Coordinator, txns.Coordinator, txns.Owned
	}
	apis := []kafka.API{p.api()}
	if states != nil {
		apis = append(apis, ih.api())
	}
	return apis
}
