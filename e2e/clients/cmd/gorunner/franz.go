package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// produceFranz uses kgo. Its defaults: acks=all, idempotent, snappy-then-none compression preference,
// sticky key partitioner (murmur2 for keyed records, like Java).
func produceFranz(ctx context.Context, o protocol.Options, recs []protocol.Record, log *slog.Logger) ([]protocol.Delivery, error) {
	opts, err := franzConn(o.Bootstrap, o.Security())
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.DefaultProduceTopic(o.Topic))
	switch o.Acks {
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	// kgo refuses acks other than all while idempotent (its documented rule), so asking for acks 0/1
	// without --idempotent implies turning idempotence off — what an application must do too.
	if (o.Idempotent != nil && !*o.Idempotent) || (o.Idempotent == nil && (o.Acks == "0" || o.Acks == "1")) {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if o.Compression != "" {
		c, err := franzCodec(o.Compression)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.ProducerBatchCompression(c))
	}
	if o.Partition != nil {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("franz-go: %w", err)
	}
	defer cl.Close()

	ds := make([]protocol.Delivery, len(recs))
	done := make([]bool, len(recs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, r := range recs {
		kr := &kgo.Record{}
		if !r.Tombstone {
			kr.Value = []byte(r.Value)
		}
		if r.Key != nil {
			kr.Key = []byte(*r.Key)
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
		}
		if r.TimestampMs != nil {
			kr.Timestamp = msTime(*r.TimestampMs)
		}
		if o.Partition != nil {
			kr.Partition = *o.Partition
		}
		wg.Add(1)
		cl.Produce(ctx, kr, func(kr *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			done[i] = true
			if err != nil {
				ds[i] = protocol.Delivery{Index: i, Error: "franz-go: " + err.Error()}
				return
			}
			ds[i] = protocol.Delivery{Index: i, Partition: protocol.Int32(kr.Partition), Offset: protocol.Int64(kr.Offset)}
		})
	}
	// Produce's promises all fire: on success, on error, or when ctx (the run deadline) ends.
	wg.Wait()
	pending(ctx, ds, done)
	return ds, nil
}

// franzConn is the client options for the bootstrap brokers with the SASL and TLS settings.
func franzConn(bootstrap string, sec protocol.Security) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...)}
	if sec.SASLTokenFile != "" {
		// Read on every login, so a re-authentication sends the file's current token.
		opts = append(opts, kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			b, err := os.ReadFile(sec.SASLTokenFile)
			return oauth.Auth{Token: strings.TrimSpace(string(b))}, err
		})))
	}
	if sec.SASLUser != "" {
		switch sec.Mechanism() {
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: sec.SASLUser, Pass: sec.SASLPassword}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: sec.SASLUser, Pass: sec.SASLPassword}.AsSha512Mechanism()))
		default:
			opts = append(opts, kgo.SASL(plain.Auth{User: sec.SASLUser, Pass: sec.SASLPassword}.AsMechanism()))
		}
	}
	tlsCfg, err := tlsConfig(sec)
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	return opts, nil
}

// consumeFranz uses kgo: without a group a direct consumer (ConsumeTopics reads every partition,
// ConsumePartitions one), with a group a group member with autocommit off.
func consumeFranz(ctx context.Context, o protocol.ConsumeOptions, out *sink, log *slog.Logger) error {
	opts, err := franzConn(o.Bootstrap, o.Security())
	if err != nil {
		return err
	}
	start := kgo.NewOffset().AtStart()
	if o.FromLatest() {
		start = kgo.NewOffset().AtEnd()
	} else if n, ok := o.FromOffset(); ok {
		start = kgo.NewOffset().At(n)
	}
	if o.MetadataMaxAgeMs > 0 {
		age := time.Duration(o.MetadataMaxAgeMs) * time.Millisecond
		opts = append(opts, kgo.MetadataMaxAge(age), kgo.MetadataMinAge(min(age, 5*time.Second)))
	}
	switch {
	case o.TopicRegex != "":
		opts = append(opts, kgo.ConsumerGroup(o.Group), kgo.ConsumeRegex(), kgo.ConsumeTopics(o.TopicRegex), kgo.ConsumeResetOffset(start), kgo.DisableAutoCommit())
	case o.Group != "":
		opts = append(opts, kgo.ConsumerGroup(o.Group), kgo.ConsumeTopics(o.Topic), kgo.ConsumeResetOffset(start), kgo.DisableAutoCommit())
	case o.Partition != nil:
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: {*o.Partition: start}}))
	default:
		opts = append(opts, kgo.ConsumeTopics(o.Topic), kgo.ConsumeResetOffset(start))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("franz-go: %w", err)
	}
	defer cl.Close() // leaves the group; with autocommit off it commits nothing
	var printed []*kgo.Record
	for !out.full() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		// kgo retries fetch errors itself; they are only worth a log line.
		fs.EachError(func(_ string, p int32, err error) { log.Warn("fetch", "partition", p, "err", err) })
		fs.EachRecord(func(r *kgo.Record) {
			m := protocol.Message{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, TimestampMs: r.Timestamp.UnixMilli()}
			for _, h := range r.Headers {
				m.Headers = append(m.Headers, protocol.MessageHeader{Key: h.Key, Value: h.Value})
			}
			if o.TopicRegex != "" {
				m.Topic = r.Topic
			}
			if out.emit(m) {
				printed = append(printed, r)
			}
		})
	}
	if o.Commit {
		// CommitRecords commits, per partition, the offset after the highest record given.
		if err := cl.CommitRecords(ctx, printed...); err != nil {
			return fmt.Errorf("franz-go commit: %w", err)
		}
	}
	return nil
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
	return kgo.CompressionCodec{}, fmt.Errorf("franz-go: unknown compression %q", name)
}
