package produce

import (
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"go.opentelemetry.io/otel/trace"
)

// APIs are Produce and, when states is set (idempotence on),
// InitProducerId.
func APIs(cfg ProduceConfig, catalog *backends.Catalog, tc *backends.Transcoder, ap *backends.Appender, states *idempotence.States, tracer trace.Tracer, metrics *kafka.ServerMetrics) []kafka.API {
	apis := []kafka.API{(&producer{cfg: cfg, catalog: catalog, tc: tc, ap: ap, seq: NewSequencer(), idem: states, tracer: tracer, metrics: metrics}).api()}
	if states != nil {
		apis = append(apis, (&initProducerIDHandler{states: states}).api())
	}
	return apis
}
