package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/ferrygw/ferry/services/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"golang.org/x/sync/semaphore"
)

const meterName = "github.com/ferrygw/ferry/frontdoor/internal/kafka"

// Request results that are not a Kafka error code.
const (
	resultOK = "ok"
	// resultClosed: the request got no answer because the connection was
	// closed for it (refused before authentication, acks=0 failure,
	// handler failure).
	resultClosed = "closed"
)

// errNotAuthenticated is the result of a request refused before SASL
// authentication; the connection is closed for it.
var errNotAuthenticated = errors.New("request before SASL authentication")

// errSessionExpired closes a connection whose SASL session ran out.
var errSessionExpired = errors.New("sasl session expired")

// ServerMetrics are the frontdoor's instruments. A nil *ServerMetrics
// records nothing, so handlers built without a server stay usable.
type ServerMetrics struct {
	requests        metric.Int64Counter
	duration        metric.Float64Histogram
	records         metric.Int64Counter
	bytes           metric.Int64Counter
	partitionErrors metric.Int64Counter
	connections     metric.Int64UpDownCounter
	saslFailures    metric.Int64Counter
	denied          metric.Int64Counter
	tlsFailures     metric.Int64Counter
	rebalances      metric.Int64Counter
	inflightBytes   metric.Int64ObservableGauge
	producers       metric.Int64ObservableGauge
	meter           metric.Meter
}

func NewServerMetrics(mp metric.MeterProvider) (*ServerMetrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := &ServerMetrics{meter: mp.Meter(meterName)}
	var errs [12]error
	m.requests, errs[0] = m.meter.Int64Counter("ferry.frontdoor.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Kafka requests answered, by API and result (ok, the top-level Kafka error, or closed)"))
	// Buckets from 1 ms to 30 s: metadata answers from cache in well
	// under a millisecond, produce waits for Fluss.
	m.duration, errs[1] = m.meter.Float64Histogram("ferry.frontdoor.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from reading a Kafka request to having its answer, by API"),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
	m.records, errs[2] = m.meter.Int64Counter("ferry.frontdoor.produce.records", metric.WithUnit("{record}"),
		metric.WithDescription("Records of partitions whose produce succeeded, by topic"))
	m.bytes, errs[3] = m.meter.Int64Counter("ferry.frontdoor.produce.bytes", metric.WithUnit("By"),
		metric.WithDescription("Record batch bytes of partitions whose produce succeeded, by topic"))
	m.partitionErrors, errs[4] = m.meter.Int64Counter("ferry.frontdoor.produce.partition_errors", metric.WithUnit("{partition}"),
		metric.WithDescription("Produce partitions answered with a Kafka error, by error name"))
	m.connections, errs[5] = m.meter.Int64UpDownCounter("ferry.frontdoor.connections", metric.WithUnit("{connection}"),
		metric.WithDescription("Open Kafka client connections"))
	m.saslFailures, errs[6] = m.meter.Int64Counter("ferry.frontdoor.sasl.failures", metric.WithUnit("{attempt}"),
		metric.WithDescription("Failed SASL authentications"))
	m.inflightBytes, errs[7] = m.meter.Int64ObservableGauge("ferry.frontdoor.inflight.bytes", metric.WithUnit("By"),
		metric.WithDescription("Request bytes held by requests being served, against the server's in-flight budget"))
	m.producers, errs[8] = m.meter.Int64ObservableGauge("ferry.frontdoor.idempotent_producers", metric.WithUnit("{producer}"),
		metric.WithDescription("Idempotent producers the frontdoor keeps sequence state for"))
	m.denied, errs[9] = m.meter.Int64Counter("ferry.frontdoor.authorization.denied", metric.WithUnit("{request}"),
		metric.WithDescription("Topics a request named that its principal may not use (Produce: WRITE, Metadata: DESCRIBE), by operation"))
	m.tlsFailures, errs[10] = m.meter.Int64Counter("ferry.frontdoor.tls.handshake_failures", metric.WithUnit("{connection}"),
		metric.WithDescription("Kafka connections closed at their TLS handshake: it failed (untrusted or missing client certificate, plaintext client) or the client certificate named no principal"))
	m.rebalances, errs[11] = m.meter.Int64Counter("ferry.frontdoor.group.rebalances", metric.WithUnit("{rebalance}"),
		metric.WithDescription("Generations consumer groups started (each a rebalance), by group; a static member's restart adds none"))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return m, nil
}

// Meter is where the instruments come from; the concern packages add
// their own gauges to it.
func (m *ServerMetrics) Meter() metric.Meter { return m.meter }

// Rebalanced counts a new generation of group.
func (m *ServerMetrics) Rebalanced(group string) {
	m.rebalances.Add(context.Background(), 1, metric.WithAttributes(attribute.String("group", group)))
}

// observe registers the gauges that read the server's state.
func (m *ServerMetrics) observe(budget *byteBudget, producers *idempotence.States) (metric.Registration, error) {
	return m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(m.inflightBytes, budget.held())
		if producers != nil {
			o.ObserveInt64(m.producers, int64(producers.Len()))
		}
		return nil
	}, m.inflightBytes, m.producers)
}

// requestDone records one request's result and duration. resp is nil
// when the request had no answer (acks=0); err when it failed.
func (m *ServerMetrics) requestDone(ctx context.Context, key int16, start time.Time, resp kmsg.Response, err error) {
	if m == nil {
		return
	}
	api := attribute.String("api", kmsg.NameForKey(key))
	result := resultOK
	switch {
	case err != nil:
		result = resultClosed
	case resp != nil:
		if code := topLevelError(resp); code != 0 {
			result = errorName(code)
		}
		if r, ok := resp.(*kmsg.SASLAuthenticateResponse); ok && r.ErrorCode == kerr.SaslAuthenticationFailed.Code {
			m.saslFailures.Add(ctx, 1)
		}
	}
	m.requests.Add(ctx, 1, metric.WithAttributes(api, attribute.String("result", result)))
	m.duration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(api))
}

// authorizationDenied counts a topic refused to a principal.
func (m *ServerMetrics) authorizationDenied(ctx context.Context, op acl.Operation) {
	if m != nil {
		m.denied.Add(ctx, 1, metric.WithAttributes(attribute.String("operation", op.String())))
	}
}

// tlsFailed counts a connection whose TLS handshake failed.
func (m *ServerMetrics) tlsFailed(ctx context.Context) {
	if m != nil {
		m.tlsFailures.Add(ctx, 1)
	}
}

// saslFailed counts a failed handshake-v0 token, which is no request.
func (m *ServerMetrics) saslFailed(ctx context.Context) {
	if m != nil {
		m.saslFailures.Add(ctx, 1)
	}
}

func (m *ServerMetrics) connOpened() {
	if m != nil {
		m.connections.Add(context.Background(), 1)
	}
}

func (m *ServerMetrics) connClosed() {
	if m != nil {
		m.connections.Add(context.Background(), -1)
	}
}

// Produced counts what a produce request did per partition: records and
// bytes of the partitions that succeeded, error names of the others. resp
// mirrors req's topics and partitions index by index (see producer.serve).
func (m *ServerMetrics) Produced(ctx context.Context, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
	if m == nil {
		return
	}
	for i := range resp.Topics {
		rt, ot := &req.Topics[i], &resp.Topics[i]
		var records, bytes int64
		for j := range ot.Partitions {
			if code := ot.Partitions[j].ErrorCode; code != 0 {
				m.partitionErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("error", errorName(code))))
				continue
			}
			b := rt.Partitions[j].Records
			bytes += int64(len(b))
			if len(b) >= recordbatch.HeaderSize {
				records += int64(int32(binary.BigEndian.Uint32(b[recordbatch.OffsetRecordCount:])))
			}
		}
		if bytes > 0 {
			topic := metric.WithAttributes(attribute.String("topic", ot.Topic))
			m.records.Add(ctx, records, topic)
			m.bytes.Add(ctx, bytes, topic)
		}
	}
}

// topLevelError is the request-wide error code of the responses that have
// one, 0 otherwise (Produce and Metadata report per partition or topic).
func topLevelError(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.ApiVersionsResponse:
		return r.ErrorCode
	case *kmsg.InitProducerIDResponse:
		return r.ErrorCode
	case *kmsg.SASLHandshakeResponse:
		return r.ErrorCode
	case *kmsg.SASLAuthenticateResponse:
		return r.ErrorCode
	case *kmsg.FindCoordinatorResponse:
		if r.ErrorCode != 0 || len(r.Coordinators) == 0 {
			return r.ErrorCode
		}
		return r.Coordinators[0].ErrorCode
	}
	return 0
}

// errorName is Kafka's name for code (UNKNOWN_TOPIC_OR_PARTITION), the
// spelling operators know from broker logs; codes kerr does not know read
// UNKNOWN_SERVER_ERROR.
func errorName(code int16) string {
	if ke := kerr.TypedErrorForCode(code); ke != nil {
		return ke.Message
	}
	return resultOK
}

// byteBudget is the server-wide in-flight byte budget: a semaphore that
// also tells how much of it is held, for the in-flight gauge.
type byteBudget struct {
	sem  *semaphore.Weighted
	used atomic.Int64
}

func newByteBudget(n int64) *byteBudget { return &byteBudget{sem: semaphore.NewWeighted(n)} }

func (b *byteBudget) Acquire(ctx context.Context, n int64) error {
	if err := b.sem.Acquire(ctx, n); err != nil {
		return err
	}
	b.used.Add(n)
	return nil
}

func (b *byteBudget) Release(n int64) {
	b.used.Add(-n)
	b.sem.Release(n)
}

func (b *byteBudget) held() int64 { return b.used.Load() }
