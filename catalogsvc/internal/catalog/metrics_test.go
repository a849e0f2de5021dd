package catalog

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	f := newFake()
	f.create("shop", "a")
	f.create("shop", "b")
	c, _ := startCatalog(t, f, testConfig(), WithMeterProvider(mp))
	f.setErr(errUnreachable)
	_ = c.Refresh(ctxT(t))

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	var topics int64 = -1
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name != "ferry.catalog.refreshes" {
					continue
				}
				for _, dp := range d.DataPoints {
					r, _ := dp.Attributes.Value(attribute.Key("result"))
					k, _ := dp.Attributes.Value(attribute.Key("kind"))
					counts[r.AsString()+"/"+k.AsString()] += dp.Value
				}
			case metricdata.Gauge[int64]:
				if m.Name == "ferry.catalog.topics" && len(d.DataPoints) == 1 {
					topics = d.DataPoints[0].Value
				}
			}
		}
	}
	if counts["ok/full"] != 1 || counts["error/full"] != 1 {
		t.Errorf("refresh counts = %v, want one ok and one failed full refresh", counts)
	}
	if topics != 2 {
		t.Errorf("topics gauge = %d, want 2 (the last good state)", topics)
	}
}
