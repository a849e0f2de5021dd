package groupapi

import (
	"log/slog"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"go.opentelemetry.io/otel/metric"
)

// APIs are FindCoordinator and, with a fetcher to keep offsets in, the
// consumer group APIs served by a groups.Coordinator built from cfg. The
// group lag gauge goes to meter.
func APIs(meter metric.Meter, cfg groups.Config, catalog *backends.Catalog, fetcher *backends.Fetcher, log *slog.Logger) ([]kafka.API, error) {
	var apis []kafka.API
	var gh *groupHandlers
	if fetcher != nil {
		cfg.Topics = catalogTopics{catalog}
		gh = &groupHandlers{coord: groups.New(cfg, fetcher, log), catalog: catalog}
		if err := registerGroupLag(meter, &groupLag{coord: gh.coord, catalog: catalog, fetcher: fetcher}); err != nil {
			return nil, err
		}
		apis = append(apis, gh.apis()...)
	}
	return append(apis, (&findCoordinatorHandler{groups: gh}).api()), nil
}
