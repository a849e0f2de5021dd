package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// franzOpts is the kgo producer configuration, matching perf-test's: acks=all, no idempotence,
// the same codec, linger, maximum batch size and requests in flight (kgo allows only one per
// broker unless told; the Java producer's default is five).
func franzOpts(cfg *config, bootstrap, topic string) ([]kgo.Opt, error) {
	codec, err := franzCodec(cfg.Compression)
	if err != nil {
		return nil, err
	}
	return []kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.DefaultProduceTopic(topic),
		kgo.ClientID("ferry-bench-franz-go"),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(time.Duration(cfg.LingerMS) * time.Millisecond),
		kgo.ProducerBatchMaxBytes(int32(cfg.BatchSize)),
		kgo.MaxProduceRequestsInflightPerBroker(cfg.MaxInFlight),
		// Records that cannot be delivered within this bound fail instead of being retried
		// for ever: every run is bounded.
		kgo.RecordDeliveryTimeout(2 * time.Minute),
	}, nil
}

func franzCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// runFranz produces every payload once, in order, and measures each record's latency from the
// Produce call to its acknowledgement, and the run from the first Produce to the last ack.
// Produce blocks while kgo's buffer (MaxBufferedRecords, 10 000) is full, like the Java
// producer's buffer.memory, so latencies include the wait for room, as perf-test's do.
func runFranz(ctx context.Context, cfg *config, target, bootstrap, topic string, p payloads) (result, error) {
	opts, err := franzOpts(cfg, bootstrap, topic)
	if err != nil {
		return result{}, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	// Connect first, so dialing is not measured.
	if err := franzWarm(ctx, cl); err != nil {
		return result{}, fmt.Errorf("franz-go against %s: %w", target, err)
	}

	if w := cfg.warmupRecords(); w > 0 {
		if _, _, err := sendAll(ctx, cl, p, w); err != nil {
			return result{}, fmt.Errorf("franz-go against %s, warm-up: %w", target, err)
		}
	}
	n := len(p.recs)
	lat, elapsed, err := sendAll(ctx, cl, p, int64(n))
	if err != nil {
		return result{}, fmt.Errorf("franz-go against %s: %w", target, err)
	}
	r := result{Target: target, Producer: producerFranz, Records: int64(n), HasLatency: true}
	r.RecPerSec, r.MBPerSec = throughput(int64(n), p.bytes, elapsed)
	r.P50, r.P99 = percentile(lat, 0.50), percentile(lat, 0.99)
	return r, nil
}

// sendAll produces n records (payload i mod len) and waits for every acknowledgement. It
// returns each record's latency and the time from the first Produce to the last answer.
func sendAll(ctx context.Context, cl *kgo.Client, p payloads, n int64) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var failed atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	wg.Add(int(n))
	start := time.Now()
	for i := range n {
		rec := &kgo.Record{Value: p.recs[i%int64(len(p.recs))]}
		if p.keys != nil {
			rec.Key = p.keys[i%int64(len(p.keys))]
		}
		sent := time.Now()
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			lat[i] = time.Since(sent)
			if err != nil {
				failed.Add(1)
				errOnce.Do(func() { firstErr = err })
			}
			wg.Done()
		})
	}
	// Every promise runs exactly once (kgo guarantees it, also when ctx ends), so this wait is
	// bounded by ctx and the delivery timeout.
	wg.Wait()
	elapsed := time.Since(start)
	if f := failed.Load(); f > 0 {
		return nil, 0, fmt.Errorf("%d of %d records failed, first: %w", f, n, firstErr)
	}
	return lat, elapsed, nil
}

// franzWarm waits until the client reaches a broker.
func franzWarm(ctx context.Context, cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		// Ping connects to a broker; the topic's metadata is then fetched by the first
		// Produce, as perf-test's first send does.
		err := cl.Ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(errors.New("no broker reachable"), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// percentile returns the q-quantile (0..1) of ds by the nearest-rank method; ds is sorted
// in place.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	if !slices.IsSorted(ds) {
		slices.Sort(ds)
	}
	rank := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[min(max(rank, 0), len(ds)-1)]
}
