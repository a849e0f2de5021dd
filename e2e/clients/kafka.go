package clients

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopic creates topic with the given partition count (replication factor 1) on a real Kafka
// broker and waits until every partition has a leader, so a producer started next finds it.
// Ferry never creates topics; this is for the reference broker only.
func CreateTopic(ctx context.Context, bootstrap, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = topic
	t.NumPartitions = partitions
	t.ReplicationFactor = 1
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			msg := ""
			if rt.ErrorMessage != nil {
				msg = ": " + *rt.ErrorMessage
			}
			return fmt.Errorf("create topic %s: %w%s", topic, err, msg)
		}
	}
	for {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		mreq.Topics = append(mreq.Topics, mt)
		mresp, err := mreq.RequestWith(ctx, cl)
		if err == nil && len(mresp.Topics) == 1 && mresp.Topics[0].ErrorCode == 0 && len(mresp.Topics[0].Partitions) == int(partitions) {
			ready := true
			for _, p := range mresp.Topics[0].Partitions {
				ready = ready && p.ErrorCode == 0 && p.Leader >= 0
			}
			if ready {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s has no leaders yet: %w", topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Consumed is one record read back from the broker.
type Consumed struct {
	Partition   int32
	Offset      int64
	Key         *string
	Value       string
	ValueNull   bool // a tombstone: the value is null, not empty
	Headers     Headers
	TimestampMs int64
	// Compression is the codec of the batch as the broker stored it (topics keep the producer's codec).
	Compression string
	// ProducerID is the batch's producer id (-1 when the producer was not idempotent).
	ProducerID int64
}

// ConsumeAll reads every record of topic's partitions from offset 0 up to the high watermark, with
// franz-go as the consumer, sorted by (partition, offset). It first waits until the topic holds at
// least atLeast records.
func ConsumeAll(ctx context.Context, bootstrap, topic string, atLeast int) ([]Consumed, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	// High watermarks first, so we know when we have everything. With acks=0 the producer may exit
	// before the broker has appended its last request, so wait (bounded by ctx) for atLeast records.
	var want map[int32]int64
	var total int64
	for {
		want, total, err = highWatermarks(ctx, cl, topic)
		if err != nil {
			return nil, err
		}
		if total >= int64(atLeast) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("topic %s holds %d records, want at least %d: %w", topic, total, atLeast, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if total == 0 {
		return nil, nil
	}
	// A fresh consumer per attempt, each bounded: a consumer that fetched nothing for a while is
	// replaced rather than waited on (seen once on a loaded 2-core machine: a kgo consumer that
	// returned no fetches for minutes while the data was there).
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := consumeOnce(actx, bootstrap, topic, want)
		cancel()
		if err == nil {
			return out, nil
		}
		lastErr = fmt.Errorf("attempt %d: %w", attempt, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func consumeOnce(ctx context.Context, bootstrap, topic string, want map[int32]int64) ([]Consumed, error) {
	offsets := map[int32]kgo.Offset{}
	for p := range want {
		offsets[p] = kgo.NewOffset().At(0)
	}
	// The consumer's own debug log is kept and attached to a failure: kgo retries most fetch errors
	// internally, so the log is the only place they show.
	klog := &tailBuffer{max: 4000}
	cons, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.WithLogger(kgo.BasicLogger(klog, kgo.LogLevelDebug, nil)))
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	var out []Consumed
	got := map[int32]int64{}
	for {
		done := true
		for p, hw := range want {
			done = done && got[p] >= hw
		}
		if done {
			break
		}
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("consume %s: got %v of %v: %w; consumer log tail:\n%s", topic, got, want, err, klog.String())
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = fmt.Errorf("fetch %s/%d: %w", topic, p, err) })
		if ferr != nil {
			return out, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			c := Consumed{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), ValueNull: r.Value == nil, TimestampMs: r.Timestamp.UnixMilli(),
				ProducerID: r.ProducerID, Compression: codecName(r.Attrs.CompressionType())}
			if r.Key != nil {
				k := string(r.Key)
				c.Key = &k
			}
			for _, h := range r.Headers {
				c.Headers = append(c.Headers, Header{Key: h.Key, Value: string(h.Value)})
			}
			out = append(out, c)
			got[r.Partition] = r.Offset + 1
		})
	}
	sortConsumed(out)
	return out, nil
}

func codecName(c uint8) string {
	switch c {
	case 0:
		return "none"
	case 1:
		return "gzip"
	case 2:
		return "snappy"
	case 3:
		return "lz4"
	case 4:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", c)
}

func sortConsumed(cs []Consumed) {
	slices.SortFunc(cs, func(a, b Consumed) int {
		if a.Partition != b.Partition {
			return cmp.Compare(a.Partition, b.Partition)
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
}

// highWatermarks returns each partition's high watermark (partitions with records only) and their sum.
func highWatermarks(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int64, int64, error) {
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, 0, err
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		return nil, 0, fmt.Errorf("metadata for %s: unexpected answer", topic)
	}
	lreq := kmsg.NewPtrListOffsetsRequest()
	lreq.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for _, p := range mresp.Topics[0].Partitions {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition = p.Partition
		lp.Timestamp = -1 // latest
		lt.Partitions = append(lt.Partitions, lp)
	}
	lreq.Topics = append(lreq.Topics, lt)
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, 0, err
	}
	want := map[int32]int64{}
	total := int64(0)
	for _, t := range lresp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, 0, fmt.Errorf("list offsets %s/%d: %w", topic, p.Partition, err)
			}
			if p.Offset > 0 {
				want[p.Partition] = p.Offset
				total += p.Offset
			}
		}
	}
	return want, total, nil
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
