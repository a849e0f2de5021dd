package consume

import (
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/fetchsession"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"go.opentelemetry.io/otel/metric"
)

// APIs are Fetch (which closes its connection when fetcher is nil) and,
// with a fetcher, ListOffsets and OffsetForLeaderEpoch. The fetch session
// gauges go to meter.
func APIs(meter metric.Meter, catalog *backends.Catalog, fetcher *backends.Fetcher, sessions fetchsession.Config) ([]kafka.API, error) {
	fh := &fetchHandler{catalog: catalog, fetcher: fetcher, sessions: fetchsession.New(sessions)}
	if err := registerFetchSessionMetrics(meter, fh); err != nil {
		return nil, err
	}
	apis := []kafka.API{fh.api()}
	if fetcher != nil {
		apis = append(apis, (&listOffsetsHandler{catalog: catalog, fetcher: fetcher}).api())
		apis = append(apis, (&offsetForLeaderEpochHandler{catalog: catalog, fetcher: fetcher}).api())
	}
	return apis, nil
}
