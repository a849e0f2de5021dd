package broker

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// meters is a meter provider whose values a test reads on demand.
type meters struct {
	t      *testing.T
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newMeters(t *testing.T) *meters {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return &meters{t: t, reader: r, mp: mp}
}

// value sums the data points of the named instrument whose attributes
// include attrs: a counter's or gauge's value, a histogram's count. ok is
// false when the instrument has no such point.
func (m *meters) value(name string, attrs ...attribute.KeyValue) (v int64, ok bool) {
	m.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		m.t.Fatal(err)
	}
	match := func(set attribute.Set) bool {
		for _, kv := range attrs {
			if got, has := set.Value(kv.Key); !has || got != kv.Value {
				return false
			}
		}
		ok = true
		return true
	}
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			if md.Name != name {
				continue
			}
			switch d := md.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						v += p.Value
					}
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						v += p.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						v += int64(p.Count)
					}
				}
			default:
				m.t.Fatalf("%s: unexpected data %T", name, md.Data)
			}
		}
	}
	return v, ok
}

// want asserts an instrument's value.
func (m *meters) want(want int64, name string, attrs ...attribute.KeyValue) {
	m.t.Helper()
	if got, _ := m.value(name, attrs...); got != want {
		m.t.Errorf("%s%v = %d, want %d", name, attrs, got, want)
	}
}

// waitValue waits until an instrument reaches want (for values that
// settle after the client already has its answer).
func (m *meters) waitValue(want int64, name string, attrs ...attribute.KeyValue) {
	m.t.Helper()
	waitFor(m.t, func() bool { got, _ := m.value(name, attrs...); return got == want })
}

func api(name string) attribute.KeyValue    { return attribute.String("api", name) }
func result(name string) attribute.KeyValue { return attribute.String("result", name) }

func TestMetricsRequestsAndProduce(t *testing.T) {
	m := newMeters(t)
	h := newHarness(t, harnessOpts{mp: m.mp})
	c := dialRaw(t, h.addr)
	c.roundTrip(kmsg.NewPtrApiVersionsRequest())
	m.want(1, "ferry.frontdoor.connections")

	good := batchOf(t, "a", "b", "c")
	if ec := c.roundTrip(produceReq(12, 1, "orders", 0, good)).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; ec != 0 {
		t.Fatalf("produce error %d", ec)
	}
	bad := c.roundTrip(produceReq(12, 1, "orders", 4, batchOf(t, "x"))).(*kmsg.ProduceResponse)
	if ec := bad.Topics[0].Partitions[0].ErrorCode; ec != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("out-of-range partition: error %d", ec)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 3
	c.roundTrip(fc)
	// acks=0: no answer, counted all the same.
	c.send(produceReq(12, 0, "events", 1, batchOf(t, "d", "e")))
	waitFor(t, func() bool { return len(h.ap.Log(200, 1)) == 2 })

	m.want(1, "ferry.frontdoor.requests", api("ApiVersions"), result("ok"))
	m.waitValue(3, "ferry.frontdoor.requests", api("Produce"), result("ok"))
	m.want(1, "ferry.frontdoor.requests", api("FindCoordinator"), result("COORDINATOR_NOT_AVAILABLE"))
	m.want(3, "ferry.frontdoor.request.duration", api("Produce"))
	m.want(1, "ferry.frontdoor.request.duration", api("FindCoordinator"))
	m.want(3, "ferry.frontdoor.produce.records", attribute.String("topic", "orders"))
	m.want(int64(len(good)), "ferry.frontdoor.produce.bytes", attribute.String("topic", "orders"))
	m.want(2, "ferry.frontdoor.produce.records", attribute.String("topic", "events"))
	m.want(1, "ferry.frontdoor.produce.partition_errors", attribute.String("error", "UNKNOWN_TOPIC_OR_PARTITION"))
	m.want(1, "ferry.frontdoor.produce.partition_errors")
	m.waitValue(0, "ferry.frontdoor.inflight.bytes")
	m.want(0, "ferry.frontdoor.idempotent_producers")

	_ = c.conn.Close()
	m.waitValue(0, "ferry.frontdoor.connections")
}

// TestMetricsInFlightBytes: the gauge shows the bytes a request holds
// while it is served and drops to zero once it is answered.
func TestMetricsInFlightBytes(t *testing.T) {
	m := newMeters(t)
	hold := make(chan struct{})
	h := newHarness(t, harnessOpts{mp: m.mp, hold: hold})
	c := dialRaw(t, h.addr)
	req := produceReq(12, 1, "orders", 0, batchOf(t, "held"))
	id := "raw-test"
	size := int64(len(frame(req, 1, &id)) - 4) // what the size field announces
	corr := c.send(req)
	waitFor(t, func() bool { return h.tcs[0].Jobs.Load() == 1 })
	m.want(size, "ferry.frontdoor.inflight.bytes")
	close(hold)
	c.recv(req, corr)
	m.waitValue(0, "ferry.frontdoor.inflight.bytes")
}

func TestMetricsSASLFailures(t *testing.T) {
	m := newMeters(t)
	h := newHarness(t, harnessOpts{mp: m.mp, sasl: testUsers(t)})

	c := dialRaw(t, h.addr)
	handshake(t, c, 1, "PLAIN")
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = 2
	req.SASLAuthBytes = []byte("\x00alice\x00wrong")
	c.roundTrip(req)
	c.expectClosed()

	raw := dialRaw(t, h.addr)
	handshake(t, raw, 0, "PLAIN")
	tok := []byte("\x00alice\x00nope")
	raw.write(append([]byte{0, 0, 0, byte(len(tok))}, tok...))
	raw.expectClosed()

	early := dialRaw(t, h.addr)
	early.send(mdReq(12))
	early.expectClosed()

	ok := dialRaw(t, h.addr)
	handshake(t, ok, 1, "PLAIN")
	req.SASLAuthBytes = []byte("\x00alice\x00alice-pw")
	if resp := ok.roundTrip(req).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != 0 {
		t.Fatalf("good password: error %d", resp.ErrorCode)
	}

	m.want(2, "ferry.frontdoor.sasl.failures")
	m.want(1, "ferry.frontdoor.requests", api("SASLAuthenticate"), result("SASL_AUTHENTICATION_FAILED"))
	m.want(1, "ferry.frontdoor.requests", api("SASLAuthenticate"), result("ok"))
	m.want(3, "ferry.frontdoor.requests", api("SASLHandshake"), result("ok"))
	m.want(1, "ferry.frontdoor.requests", api("Metadata"), result("closed"))
}

func TestMetricsIdempotentProducers(t *testing.T) {
	m := newMeters(t)
	h := newHarness(t, harnessOpts{mp: m.mp})
	c := dialRaw(t, h.addr)
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version = 4
	pid := c.roundTrip(ip).(*kmsg.InitProducerIDResponse).ProducerID
	if ec := c.roundTrip(produceReq(9, -1, "orders", 0, idemBatch(pid, 0, 0, "a"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; ec != 0 {
		t.Fatalf("idempotent produce: error %d", ec)
	}
	m.want(int64(h.srv.ProducerCount()), "ferry.frontdoor.idempotent_producers")
	m.want(1, "ferry.frontdoor.idempotent_producers")
	m.want(1, "ferry.frontdoor.requests", api("InitProducerID"), result("ok"))

	// Without idempotence there is no producer state to report.
	m2 := newMeters(t)
	newHarness(t, harnessOpts{mp: m2.mp, noIdempotence: true})
	if v, ok := m2.value("ferry.frontdoor.idempotent_producers"); ok {
		t.Errorf("idempotent_producers = %d with idempotence disabled; want no value", v)
	}
}
