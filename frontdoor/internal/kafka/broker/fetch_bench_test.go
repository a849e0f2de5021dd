package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// blobLog is a fetchsvc answering every read of partition 0 with the same
// records, so that a benchmark measures what frontdoor does with them.
type blobLog struct {
	fetchv1.UnimplementedFetchServiceServer
	records []byte
	hw      int64
}

func (f *blobLog) Read(_ context.Context, r *fetchv1.ReadRequest) (*fetchv1.ReadResponse, error) {
	resp := &fetchv1.ReadResponse{}
	for _, t := range r.Topics {
		tr := &fetchv1.TopicRecords{Topic: t.Mapping.GetTopic()}
		for _, p := range t.Partitions {
			tr.Partitions = append(tr.Partitions, &fetchv1.PartitionRecords{Partition: p.Partition, HighWatermark: f.hw, Records: f.records})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// benchBatches is n records like make bench's rows (e2e/bench/rows.go) as
// JSON, in batches of 1000 (a Fluss batch each, as fetchsvc rebuilds them),
// compressed with codec.
func benchBatches(b *testing.B, n int, codec kgo.CompressionCodec) []byte {
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		b.Fatal(err)
	}
	var out []byte
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for base := 0; base < n; base += 1000 {
		var recs []byte
		for i := range 1000 {
			v := fmt.Appendf(nil, `{"id":%d,"n":%d,"score":%g,"ok":%t,"note":"a note","name":"name-of-the-row","at":"2026-01-02T03:04:05.%03dZ","amount":"%d.%02d","blob":"MDEyMzQ1Njc4OWFiY2RlZg==","day":"2024-10-%02d"}`,
				base+i, (base+i)%1000, float64(base+i)/7, i%2 == 0, i, (base+i)*101/100, (base+i)*101%100, 1+i%28)
			r := kmsg.Record{OffsetDelta: int32(i), Value: v}
			r.Length = int32(len(r.AppendTo(nil)) - 1)
			recs = r.AppendTo(recs)
		}
		attrs := int16(0)
		if comp != nil {
			var buf bytes.Buffer
			c, ct := comp.Compress(&buf, recs)
			recs, attrs = append([]byte(nil), c...), int16(ct)
		}
		batch := kmsg.RecordBatch{FirstOffset: int64(base), Magic: 2, Attributes: attrs, LastOffsetDelta: 999, FirstTimestamp: 1, MaxTimestamp: 1,
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1000, Records: recs}
		raw := batch.AppendTo(nil)
		binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
		binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
		out = append(out, raw...)
	}
	return out
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFetch measures Fetch answers of 10 000 records through frontdoor
// (catalog cache, fetchsvc call over loopback gRPC, answer encoding and
// write) and a raw client reading them, by the codec of the records. The
// process's CPU per record (cpu-ns/record) covers the fake fetchsvc's gRPC
// side and the client too; with fetchsvc's own conversion
// (fetchsvc/internal/reader BenchmarkConvertLog) it is the read path's cost.
func BenchmarkFetch(b *testing.B) {
	const n = 10000
	for _, codec := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}, {"gzip", kgo.GzipCompression()}} {
		b.Run(codec.name, func(b *testing.B) {
			fl := &blobLog{records: benchBatches(b, n, codec.codec), hw: n}
			h := newHarness(b, harnessOpts{fetcher: fl})
			c := dialRaw(b, h.addr)
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.MaxBytes, req.SessionEpoch = 12, 16<<20, -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "orders"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 16 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			wire := frame(req, 1, nil)
			var size int
			read := func() {
				c.write(wire)
				fr, err := c.readFrame()
				if err != nil {
					b.Fatal(err)
				}
				size = len(fr)
			}
			read()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime(b)
			for b.Loop() {
				read()
			}
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N*n), "cpu-ns/record")
			b.ReportMetric(float64(size)/n, "wire-bytes/record")
		})
	}
}
