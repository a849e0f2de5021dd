package consume

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ferrygw/ferry/frontdoor/internal/fetchsession"
)

// registerFetchSessionMetrics exports the fetch session cache (KIP-227) as
// Kafka's broker does (NumIncrementalFetchSessions,
// NumIncrementalFetchPartitionsCached, IncrementalFetchSessionEvictions)
// and the Fetch requests by session kind, which shows whether consumers
// use sessions at all.
func registerFetchSessionMetrics(m metric.Meter, h *fetchHandler) error {
	sessions, err1 := m.Int64ObservableGauge("ferry.frontdoor.fetch.sessions", metric.WithUnit("{session}"),
		metric.WithDescription("Incremental fetch sessions held"))
	parts, err2 := m.Int64ObservableGauge("ferry.frontdoor.fetch.session.partitions", metric.WithUnit("{partition}"),
		metric.WithDescription("Partitions held by incremental fetch sessions"))
	evictions, err3 := m.Int64ObservableCounter("ferry.frontdoor.fetch.session.evictions", metric.WithUnit("{session}"),
		metric.WithDescription("Fetch sessions evicted to make room for another"))
	fetches, err4 := m.Int64ObservableCounter("ferry.frontdoor.fetch.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Fetch requests by session kind: sessionless, full (opening a session), incremental, refused"))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := h.sessions.Stats()
		o.ObserveInt64(sessions, int64(st.Sessions))
		o.ObserveInt64(parts, int64(st.Partitions))
		o.ObserveInt64(evictions, st.Evictions)
		for k := range h.fetches {
			o.ObserveInt64(fetches, h.fetches[k].Load(), metric.WithAttributes(attribute.String("session", fetchsession.Kind(k).String())))
		}
		return nil
	}, sessions, parts, evictions, fetches)
	return err
}
