package groupapi

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// groupLag reports each group's consumer lag by topic: the sum over the
// partitions it committed of the partition's end offset less the committed
// one. Reading end offsets costs a fetchsvc call per topic, so a scrape
// gets the figures of the last refresh and starts the next when they are
// older than lagRefresh.
type groupLag struct {
	coord   *groups.Coordinator
	catalog *backends.Catalog
	fetcher *backends.Fetcher

	mu         sync.Mutex
	lag        map[[2]string]int64 // (group, topic) -> records behind
	at         time.Time
	refreshing bool
}

const lagRefresh = 10 * time.Second

func registerGroupLag(meter metric.Meter, l *groupLag) error {
	g, err := meter.Int64ObservableGauge("ferry.frontdoor.consumer_group.lag", metric.WithUnit("{record}"),
		metric.WithDescription("Records consumer groups coordinated here are behind the end of a topic, from their committed offsets"))
	if err != nil {
		return err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.refreshing && time.Since(l.at) > lagRefresh {
			l.refreshing = true
			go l.refresh()
		}
		for k, v := range l.lag {
			o.ObserveInt64(g, v, metric.WithAttributes(attribute.String("group", k[0]), attribute.String("topic", k[1])))
		}
		return nil
	}, g)
	return err
}

func (l *groupLag) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), lagRefresh)
	defer cancel()
	committed := l.coord.AllCommitted()
	// End offsets per topic, asked once for all groups.
	parts := map[string]map[int32]bool{}
	for _, offs := range committed {
		for tp := range offs {
			if parts[tp.Topic] == nil {
				parts[tp.Topic] = map[int32]bool{}
			}
			parts[tp.Topic][tp.Partition] = true
		}
	}
	names := make([]string, 0, len(parts))
	for t := range parts {
		names = append(names, t)
	}
	topics, _ := l.catalog.Resolve(ctx, names)
	ends := map[groups.TopicPartition]int64{}
	for t, ps := range parts {
		m := topics[t].Mapping
		if m == nil {
			continue
		}
		q := &fetchv1.ListOffsetsRequest{Mapping: m}
		for p := range ps {
			q.Partitions = append(q.Partitions, &fetchv1.OffsetQuery{Partition: p, Timestamp: -1})
		}
		resp, err := l.fetcher.ListOffsets(ctx, q)
		if err != nil {
			continue
		}
		for _, a := range resp.GetPartitions() {
			if a.GetErrorCode() == 0 {
				ends[groups.TopicPartition{Topic: t, Partition: a.GetPartition()}] = a.GetOffset()
			}
		}
	}
	lag := map[[2]string]int64{}
	for g, offs := range committed {
		for tp, o := range offs {
			if end, ok := ends[tp]; ok {
				lag[[2]string{g, tp.Topic}] += max(end-o, 0)
			}
		}
	}
	l.mu.Lock()
	l.lag, l.at, l.refreshing = lag, time.Now(), false
	l.mu.Unlock()
}
