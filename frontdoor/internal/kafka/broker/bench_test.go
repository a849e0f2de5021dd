package broker

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/produce"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/services/recordbatch"
)

// BenchmarkProduce measures Produce requests through frontdoor (decode,
// sequencing, transcode and append streams, encode) against the loopback
// fake backends, pipelined 16 deep on one connection. The fakes do little
// work, so this is frontdoor's own overhead plus gRPC.
func BenchmarkProduce(b *testing.B) {
	for _, size := range []int{100, 1000, 16 << 10} {
		b.Run(fmt.Sprintf("batch=%dx%dB", 10, size), func(b *testing.B) {
			h := newHarness(b, harnessOpts{})
			h.ap.Discard.Store(true)
			vals := make([]string, 10)
			for i := range vals {
				vals[i] = strings.Repeat("v", size)
			}
			req := produceReq(12, 1, "orders", 0, batchWith(vals, -1, 0))
			c := dialRaw(b, h.addr)
			wire := frame(req, 1, nil)
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			b.ResetTimer()
			const depth = 16
			inflight := 0
			for i := 0; i < b.N; i++ {
				c.write(wire)
				inflight++
				if inflight == depth {
					readProduceAnswer(b, c)
					inflight--
				}
			}
			for ; inflight > 0; inflight-- {
				readProduceAnswer(b, c)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

func readProduceAnswer(b *testing.B, c *rawClient) {
	fr, err := c.readFrame()
	if err != nil {
		b.Fatal(err)
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 12
	if err := resp.ReadFrom(fr[5:]); err != nil {
		b.Fatal(err)
	}
	if ec := resp.Topics[0].Partitions[0].ErrorCode; ec != 0 {
		b.Fatalf("error %d", ec)
	}
}

// BenchmarkReadRequest measures decoding one produce frame.
func BenchmarkReadRequest(b *testing.B) {
	reg := testRegistry(b)
	vals := make([]string, 10)
	for i := range vals {
		vals[i] = strings.Repeat("v", 1000)
	}
	in := frame(produceReq(12, 1, "orders", 0, batchWith(vals, -1, 0)), 1, nil)[4:]
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kafka.ReadRequest(in, reg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShapeOf measures the shape scan every request frame gets
// before it is decoded.
func BenchmarkShapeOf(b *testing.B) {
	vals := make([]string, 10)
	for i := range vals {
		vals[i] = strings.Repeat("v", 1000)
	}
	body := produceReq(12, 1, "orders", 0, batchWith(vals, -1, 0)).AppendTo(nil)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kafka.ShapeOf(kafka.ProduceKey, 12, body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDedupeProduce measures the duplicate check every Produce
// request with more than one entry gets: 16 partitions of one topic, none
// repeated (what clients send).
func BenchmarkDedupeProduce(b *testing.B) {
	req := produceReq(12, 1, "orders", 0, []byte("batch"))
	for p := int32(1); p < 16; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, []byte("batch")
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := produce.DedupeProduce(req); n != 0 {
			b.Fatal(n)
		}
	}
}

// BenchmarkCheckBatch is the per-partition header check on the produce
// path: frame checks and producer fields of an idempotent 100-record batch.
func BenchmarkCheckBatch(b *testing.B) {
	vals := make([]string, 100)
	for i := range vals {
		vals[i] = "value"
	}
	batch := idemBatch(7, 0, 1, vals...)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		h, bad := produce.CheckBatch(batch, 1<<20)
		if bad != nil || produce.ProducerOf(&h).LastSeq != 100 {
			b.Fatal(bad)
		}
	}
}

func TestProducerOfWrapsLastSequence(t *testing.T) {
	h, err := recordbatch.ParseHeader(idemBatch(1, 0, math.MaxInt32-1, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	// MaxInt32-1, MaxInt32, 0.
	if b := produce.ProducerOf(&h); b.FirstSeq != math.MaxInt32-1 || b.LastSeq != 0 {
		t.Fatalf("sequences %d..%d, want %d..0 (wrapped)", b.FirstSeq, b.LastSeq, math.MaxInt32-1)
	}
}
