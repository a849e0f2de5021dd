package appender

import (
	"context"
	"fmt"
	"testing"
	"time"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
)

// BenchmarkAppendKV streams primary-key jobs of one Kafka partition, each
// split in four pieces (buckets), keeping window jobs unanswered as
// frontdoor does, against a Fluss that answers after a fixed round trip:
// how many PutKv requests (calls/job) and how much of appendsvc's CPU one
// Kafka batch costs.
func BenchmarkAppendKV(b *testing.B) {
	const window, buckets, rowsPerPiece = 8, 4, 80
	const rtt = 500 * time.Microsecond
	h := newHarness(b, Config{}, func(f *fakeFluss) func(int, fakeCall) ([]fluss.BucketResult, error) {
		return func(_ int, c fakeCall) ([]fluss.BucketResult, error) {
			time.Sleep(rtt)
			return allOK(c), nil
		}
	})
	var pieces []*appendv1.AppendPiece
	for bk := range int32(buckets) {
		var keys []string
		for i := range rowsPerPiece {
			keys = append(keys, fmt.Sprintf("key-%d-%d", bk, i))
		}
		pieces = append(pieces, kvPiece(b, bk, -1, keys...))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := h.client.Append(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpuStart := processCPU(b)
	sent, answered := 0, 0
	for b.Loop() {
		for sent-answered >= window {
			if _, err := stream.Recv(); err != nil {
				b.Fatal(err)
			}
			answered++
		}
		sent++
		if err := stream.Send(routedReq(uint64(sent), -1, pieces...)); err != nil {
			b.Fatal(err)
		}
	}
	for ; answered < sent; answered++ {
		if r, err := stream.Recv(); err != nil || r.GetErrorCode() != 0 {
			b.Fatal(r, err)
		}
	}
	b.ReportMetric(float64(sent*buckets*rowsPerPiece)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(processCPU(b)-cpuStart)/float64(sent), "cpu-ns/op")
	b.ReportMetric(float64(len(h.fake.snapshot()))/float64(sent), "calls/job")
}
