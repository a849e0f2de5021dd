package txn

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

const instrumentation = "github.com/ferrygw/ferry/frontdoor/internal/txn"

func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	return tp.Tracer(instrumentation)
}

// metrics are what an operator watches of transactions: how many are
// open, how they end, and how long commits take to apply.
type metrics struct {
	begun    metric.Int64Counter
	ends     metric.Int64Counter
	timeouts metric.Int64Counter
	retries  metric.Int64Counter
	apply    metric.Float64Histogram
}

func newMetrics(mp metric.MeterProvider, c *Coordinator) (*metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	meter := mp.Meter(instrumentation)
	m := &metrics{}
	var err error
	if m.begun, err = meter.Int64Counter("ferry.frontdoor.txn.begun",
		metric.WithDescription("Transactions begun (first AddPartitionsToTxn or AddOffsetsToTxn).")); err != nil {
		return nil, err
	}
	if m.ends, err = meter.Int64Counter("ferry.frontdoor.txn.ended",
		metric.WithDescription("Transactions ended, by outcome (commit, abort).")); err != nil {
		return nil, err
	}
	if m.timeouts, err = meter.Int64Counter("ferry.frontdoor.txn.timed_out",
		metric.WithDescription("Transactions aborted by the coordinator because they were open past their timeout.")); err != nil {
		return nil, err
	}
	if m.retries, err = meter.Int64Counter("ferry.frontdoor.txn.apply_retries",
		metric.WithDescription("Failed steps of commit applies that were tried again.")); err != nil {
		return nil, err
	}
	if m.apply, err = meter.Float64Histogram("ferry.frontdoor.txn.apply.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from EndTxn(commit) until every staged batch and offset of the transaction is stored.")); err != nil {
		return nil, err
	}
	open, err := meter.Int64ObservableGauge("ferry.frontdoor.txn.open",
		metric.WithDescription("Transactions open or being committed on this coordinator."))
	if err != nil {
		return nil, err
	}
	staged, err := meter.Int64ObservableGauge("ferry.frontdoor.txn.staged.bytes", metric.WithUnit("By"),
		metric.WithDescription("Bytes of transcoded batches staged by open transactions."))
	if err != nil {
		return nil, err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		c.mu.Lock()
		n := 0
		for _, t := range c.txns {
			if t.state == Ongoing || t.state == PrepareCommit {
				n++
			}
		}
		bytes := c.staged
		c.mu.Unlock()
		o.ObserveInt64(open, int64(n))
		o.ObserveInt64(staged, bytes)
		return nil
	}, open, staged)
	return m, err
}

func (m *metrics) began() { m.begun.Add(context.Background(), 1) }

func (m *metrics) ended(commit bool) {
	outcome := "abort"
	if commit {
		outcome = "commit"
	}
	m.ends.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

func (m *metrics) timedOut()     { m.timeouts.Add(context.Background(), 1) }
func (m *metrics) applyRetried() { m.retries.Add(context.Background(), 1) }

func (m *metrics) applyTook(ctx context.Context, d time.Duration) { m.apply.Record(ctx, d.Seconds()) }
