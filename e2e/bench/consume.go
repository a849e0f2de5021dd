package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consume side: a group-less franz-go consumer reading a topic back from offset 0, and a
// producer and a consumer on a live tail.

// consumerOpts is the consumer's configuration: kgo's defaults (fetch.max.bytes 50 MiB,
// 1 MiB per partition, 5 s max wait), every partition of topic from the given offsets.
func consumerOpts(bootstrap, topic string, offsets map[int32]kgo.Offset) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID("ferry-bench-franz-go-consumer"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
	}
}

// fromStart is offset 0 of partitions 0..n-1.
func fromStart(n int) map[int32]kgo.Offset {
	m := make(map[int32]kgo.Offset, n)
	for p := range int32(n) {
		m[p] = kgo.NewOffset().At(0)
	}
	return m
}

// runFranzConsume reads the first warmup records of topic (every partition from offset 0) with
// one client, unmeasured, then the first cfg.Records with a new client, timed from the first
// poll until the Records-th record is in hand. Every record's value must start with a bench
// row's id and each partition's offsets must follow each other from 0.
func runFranzConsume(ctx context.Context, cfg *config, target, bootstrap, topic string, p payloads) (result, error) {
	if w := cfg.warmupRecords(); w > 0 {
		if _, _, _, err := consumeN(ctx, bootstrap, topic, cfg.Partitions, w, len(p.recs)); err != nil {
			return result{}, fmt.Errorf("franz-go consumer against %s, warm-up: %w", target, err)
		}
	}
	elapsed, valueBytes, wireBytes, err := consumeN(ctx, bootstrap, topic, cfg.Partitions, cfg.Records, len(p.recs))
	if err != nil {
		return result{}, fmt.Errorf("franz-go consumer against %s: %w", target, err)
	}
	r := result{Phase: phaseConsume, Target: target, Producer: consumerFranz, Records: cfg.Records}
	r.RecPerSec, r.MBPerSec = throughput(cfg.Records, valueBytes, elapsed)
	r.WirePerRecord = float64(wireBytes) / float64(cfg.Records)
	return r, nil
}

// consumeN reads n records from offset 0 of partitions 0..partitions-1 and returns the time
// from the first poll until the n-th record, the size of the n values and the bytes of the Fetch
// answers read meanwhile (what crossed the wire, compressed as the server sent it). ids bounds
// the row ids the values may carry.
func consumeN(ctx context.Context, bootstrap, topic string, partitions int, n int64, ids int) (time.Duration, int64, int64, error) {
	var wire fetchBytes
	cl, err := kgo.NewClient(append(consumerOpts(bootstrap, topic, fromStart(partitions)), kgo.WithHooks(&wire))...)
	if err != nil {
		return 0, 0, 0, err
	}
	defer cl.Close()
	// Connect first, so dialing is not measured.
	if err := franzWarm(ctx, cl); err != nil {
		return 0, 0, 0, err
	}
	var count, valueBytes int64
	check := newOffsetCheck()
	var bad error
	wire.n.Store(0)
	start := time.Now()
	for count < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, 0, 0, fmt.Errorf("%d of %d records read: %w", count, n, err)
		}
		if err := fetchErr(fs); err != nil {
			return 0, 0, 0, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if count >= n || bad != nil {
				return
			}
			if err := check.next(r.Partition, r.Offset); err != nil {
				bad = err
				return
			}
			if id, ok := leadingID(r.Value); !ok || id < 0 || id >= int64(ids) {
				bad = fmt.Errorf("partition %d offset %d: value %.60q is not a bench row", r.Partition, r.Offset, r.Value)
				return
			}
			count++
			valueBytes += int64(len(r.Value))
		})
		if bad != nil {
			return 0, 0, 0, bad
		}
	}
	return time.Since(start), valueBytes, wire.n.Load(), nil
}

// fetchBytes counts the bytes of the Fetch answers a client reads.
type fetchBytes struct{ n atomic.Int64 }

func (f *fetchBytes) OnBrokerRead(_ kgo.BrokerMetadata, key int16, bytesRead int, _, _ time.Duration, _ error) {
	if key == int16(kmsg.Fetch) {
		f.n.Add(int64(bytesRead))
	}
}

// fetchErr is the first partition error of a poll, if any.
func fetchErr(fs kgo.Fetches) error {
	var err error
	fs.EachError(func(topic string, p int32, e error) {
		if err == nil {
			err = fmt.Errorf("fetch %s/%d: %w", topic, p, e)
		}
	})
	return err
}

// offsetCheck checks that each partition's offsets follow each other from 0: a log topic or log
// table read from its start holds every offset once (no transactions, no compaction).
type offsetCheck map[int32]int64

func newOffsetCheck() offsetCheck { return offsetCheck{} }

func (c offsetCheck) next(partition int32, offset int64) error {
	if want := c[partition]; offset != want {
		return fmt.Errorf("partition %d: offset %d, want %d", partition, offset, want)
	}
	c[partition] = offset + 1
	return nil
}

// leadingID parses the id member that starts a bench row's JSON value, `{"id":123,...`, as
// produced (rows.go) and as Ferry rebuilds it (columns in table order).
func leadingID(v []byte) (int64, bool) {
	v = bytes.TrimLeft(v, " \t\r\n")
	rest, ok := bytes.CutPrefix(v, []byte("{"))
	if !ok {
		return 0, false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if rest, ok = bytes.CutPrefix(rest, []byte(`"id"`)); !ok {
		return 0, false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if rest, ok = bytes.CutPrefix(rest, []byte(":")); !ok {
		return 0, false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	end := 0
	for end < len(rest) && (rest[end] >= '0' && rest[end] <= '9' || end == 0 && rest[end] == '-') {
		end++
	}
	if end == len(rest) || (rest[end] != ',' && rest[end] != '}' && rest[end] != ' ') {
		return 0, false
	}
	id, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return id, err == nil
}

// tailRow is bench row seq with its id replaced by id (the send time in Unix nanoseconds): the
// consumer reads the send time from the value, which both Kafka and Ferry give back.
func tailRow(dst []byte, seq, id int64) []byte {
	row := appendRow(nil, seq)
	comma := bytes.IndexByte(row, ',')
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	return append(dst, row[comma:]...)
}

// tailWarmup is how long the tail producer sends before the records that are measured: the
// first records pay for metadata, connections and (for Ferry) the table lookups.
const tailWarmup = time.Second

// tailRecords is how many records one tail run sends, warm-up included, and how many of them
// are measured.
func tailRecords(cfg *config) (total, measured int64) {
	measured = int64(cfg.TailRate) * int64(cfg.TailDuration) / int64(time.Second)
	return measured + int64(cfg.TailRate)*int64(tailWarmup)/int64(time.Second), measured
}

// runTail: a consumer starts at the end of every partition of topic, then a franz-go producer
// (the bench's producer settings) sends cfg.TailRate records a second, paced, for tailWarmup
// plus cfg.TailDuration. Each record's id is its send time; the consumer notes when each
// arrives. Latency is arrival (PollFetches returned it) minus send (just before Produce), for
// the records after the warm-up; every record must arrive exactly once.
func runTail(ctx context.Context, cfg *config, target, bootstrap, topic string) (result, error) {
	total, measured := tailRecords(cfg)
	ends, err := endOffsets(ctx, bootstrap, topic)
	if err != nil {
		return result{}, err
	}
	cons, err := kgo.NewClient(consumerOpts(bootstrap, topic, ends)...)
	if err != nil {
		return result{}, err
	}
	defer cons.Close()
	opts, err := franzOpts(cfg, bootstrap, topic)
	if err != nil {
		return result{}, err
	}
	prod, err := kgo.NewClient(opts...)
	if err != nil {
		return result{}, err
	}
	defer prod.Close()
	if err := franzWarm(ctx, prod); err != nil {
		return result{}, fmt.Errorf("tail producer against %s: %w", target, err)
	}
	if err := franzWarm(ctx, cons); err != nil {
		return result{}, fmt.Errorf("tail consumer against %s: %w", target, err)
	}

	// The consumer: arrival time per send time (id), until every record has come.
	arrived := make(map[int64]time.Time, total)
	cctx, stopConsumer := context.WithCancel(ctx)
	defer stopConsumer()
	var cerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for int64(len(arrived)) < total {
			fs := cons.PollFetches(cctx)
			now := time.Now()
			if cctx.Err() != nil {
				return
			}
			if err := fetchErr(fs); err != nil {
				cerr = err
				return
			}
			for it := fs.RecordIter(); !it.Done(); {
				r := it.Next()
				id, ok := leadingID(r.Value)
				if !ok {
					cerr = fmt.Errorf("partition %d offset %d: value %.60q is not a tail row", r.Partition, r.Offset, r.Value)
					return
				}
				if _, dup := arrived[id]; dup {
					cerr = fmt.Errorf("partition %d offset %d: record sent at %d consumed twice", r.Partition, r.Offset, id)
					return
				}
				arrived[id] = now
			}
		}
	}()
	// Give the consumer's first fetch time to reach the server: a record sent before it
	// would be found at once, which is no tail latency.
	select {
	case <-time.After(500 * time.Millisecond):
	case <-done:
		return result{}, fmt.Errorf("tail consumer against %s stopped before the producer started: %v", target, cerr)
	}

	sent := make([]int64, 0, total)
	var perr error
	var perrOnce sync.Once
	period := time.Second / time.Duration(cfg.TailRate)
	start := time.Now()
	last := int64(0)
	for k := range total {
		if d := time.Until(start.Add(time.Duration(k) * period)); d > 0 {
			time.Sleep(d)
		}
		id := max(time.Now().UnixNano(), last+1)
		last = id
		sent = append(sent, id)
		prod.Produce(ctx, &kgo.Record{Value: tailRow(nil, k, id)}, func(_ *kgo.Record, err error) {
			if err != nil {
				perrOnce.Do(func() { perr = err })
			}
		})
	}
	sendTime := time.Since(start)
	if err := prod.Flush(ctx); err != nil {
		return result{}, fmt.Errorf("tail producer against %s: %w", target, err)
	}
	if perr != nil {
		return result{}, fmt.Errorf("tail producer against %s: %w", target, perr)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		stopConsumer()
		<-done
		return result{}, fmt.Errorf("tail consumer against %s: %d of %d records arrived within 30 s of the last send", target, len(arrived), total)
	case <-ctx.Done():
		stopConsumer()
		<-done
		return result{}, ctx.Err()
	}
	if cerr != nil {
		return result{}, fmt.Errorf("tail consumer against %s: %w", target, cerr)
	}
	lat, err := tailLatencies(sent[total-measured:], arrived)
	if err != nil {
		return result{}, fmt.Errorf("tail against %s: %w", target, err)
	}
	r := result{Phase: phaseTail, Target: target, Producer: producerFranz + "→" + consumerFranz, Records: measured, HasLatency: true}
	r.RecPerSec = float64(total) / sendTime.Seconds()
	r.P50, r.P99, r.Max = percentile(lat, 0.50), percentile(lat, 0.99), percentile(lat, 1)
	return r, nil
}

// tailLatencies is arrival minus send for every id sent; each must have arrived.
func tailLatencies(sent []int64, arrived map[int64]time.Time) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, len(sent))
	for _, id := range sent {
		at, ok := arrived[id]
		if !ok {
			return nil, fmt.Errorf("the record sent at %d never arrived", id)
		}
		lat = append(lat, at.Sub(time.Unix(0, id)))
	}
	return lat, nil
}

// endOffsets lists the end offset of every partition of topic.
func endOffsets(ctx context.Context, bootstrap, topic string) (map[int32]kgo.Offset, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %s: %w", topic, err)
	}
	out := map[int32]kgo.Offset{}
	offs.Each(func(o kadm.ListedOffset) { out[o.Partition] = kgo.NewOffset().At(o.Offset) })
	if len(out) == 0 {
		return nil, errors.New("list end offsets of " + topic + ": no partitions")
	}
	return out, nil
}
