package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// produceKafkaGo uses segmentio/kafka-go's Writer. Its defaults: acks=0 (RequiredAcks defaults to
// RequireNone), round-robin balancer, no compression, 1s batch timeout; it has no idempotent producer.
func produceKafkaGo(ctx context.Context, o protocol.Options, recs []protocol.Record, log *slog.Logger) ([]protocol.Delivery, error) {
	if o.Idempotent != nil && *o.Idempotent {
		return nil, errors.New("kafka-go: the Writer has no idempotent producer (--idempotent true unsupported)")
	}
	mech, tlsCfg, err := kafkaGoSecurity(o.Security())
	if err != nil {
		return nil, err
	}
	tr := &kafka.Transport{TLS: tlsCfg, SASL: mech}
	w := &kafka.Writer{
		Addr:      kafka.TCP(strings.Split(o.Bootstrap, ",")...),
		Topic:     o.Topic,
		Transport: tr,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			log.Warn(fmt.Sprintf(msg, args...))
		}),
	}
	switch o.Acks {
	case "0":
		w.RequiredAcks = kafka.RequireNone
	case "1":
		w.RequiredAcks = kafka.RequireOne
	case "all":
		w.RequiredAcks = kafka.RequireAll
	}
	switch o.Compression {
	case "gzip":
		w.Compression = compress.Gzip
	case "snappy":
		w.Compression = compress.Snappy
	case "lz4":
		w.Compression = compress.Lz4
	case "zstd":
		w.Compression = compress.Zstd
	}
	if o.Partition != nil {
		w.Balancer = fixedPartition(*o.Partition)
	}

	ds := make([]protocol.Delivery, len(recs))
	done := make([]bool, len(recs))
	var mu sync.Mutex
	// Completion receives the written messages with Partition and Offset filled in; WriterData
	// carries the record index through the writer (its documented purpose).
	w.Completion = func(msgs []kafka.Message, err error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			i, ok := m.WriterData.(int)
			if !ok {
				continue
			}
			done[i] = true
			if err != nil {
				ds[i] = protocol.Delivery{Index: i, Error: "kafka-go: " + err.Error()}
				continue
			}
			ds[i] = protocol.Delivery{Index: i, Partition: protocol.Int32(int32(m.Partition)), Offset: protocol.Int64(m.Offset)}
		}
	}
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		m := kafka.Message{WriterData: i}
		if !r.Tombstone {
			m.Value = []byte(r.Value)
		}
		if r.Key != nil {
			m.Key = []byte(*r.Key)
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
		}
		if r.TimestampMs != nil {
			m.Time = msTime(*r.TimestampMs)
		}
		msgs[i] = m
	}
	werr := w.WriteMessages(ctx, msgs...)
	if err := w.Close(); err != nil {
		log.Warn("kafka-go close", "err", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// WriteMessages' own error covers messages the writer gave up on before a batch completed.
	if werr != nil {
		var we kafka.WriteErrors
		if errors.As(werr, &we) {
			for i, e := range we {
				if e != nil && !done[i] {
					done[i] = true
					ds[i] = protocol.Delivery{Index: i, Error: "kafka-go: " + e.Error()}
				}
			}
		} else {
			for i := range ds {
				if !done[i] {
					done[i] = true
					ds[i] = protocol.Delivery{Index: i, Error: "kafka-go: " + werr.Error()}
				}
			}
		}
	}
	pending(ctx, ds, done)
	return ds, nil
}

// kafkaGoSecurity is the SASL mechanism (nil: none) and TLS set-up for the settings.
func kafkaGoSecurity(sec protocol.Security) (sasl.Mechanism, *tls.Config, error) {
	if sec.SASLTokenFile != "" {
		return nil, nil, errors.New("kafka-go runner: OAUTHBEARER is not wired")
	}
	tlsCfg, err := tlsConfig(sec)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case sec.SASLUser == "":
		return nil, tlsCfg, nil
	case sec.Mechanism() == "SCRAM-SHA-256" || sec.Mechanism() == "SCRAM-SHA-512":
		algo := scram.SHA256
		if sec.Mechanism() == "SCRAM-SHA-512" {
			algo = scram.SHA512
		}
		m, err := scram.Mechanism(algo, sec.SASLUser, sec.SASLPassword)
		if err != nil {
			return nil, nil, fmt.Errorf("kafka-go scram: %w", err)
		}
		return m, tlsCfg, nil
	}
	return plain.Mechanism{Username: sec.SASLUser, Password: sec.SASLPassword}, tlsCfg, nil
}

// consumeKafkaGo uses kafka-go Readers: without a group one per partition (a Reader without
// GroupID reads exactly one), with a group one group Reader; FetchMessage never commits, and
// CommitMessages commits synchronously (CommitInterval 0, the default).
func consumeKafkaGo(ctx context.Context, o protocol.ConsumeOptions, out *sink, log *slog.Logger) error {
	mech, tlsCfg, err := kafkaGoSecurity(o.Security())
	if err != nil {
		return usageError(err.Error())
	}
	dialer := *kafka.DefaultDialer
	dialer.TLS, dialer.SASLMechanism = tlsCfg, mech
	// MaxWait 500 ms instead of 10 s: Reader.Close waits for the fetch in flight, so with the default
	// every run would take ~10 s longer (seen with kafka-go v0.4.51).
	cfg := kafka.ReaderConfig{Brokers: strings.Split(o.Bootstrap, ","), Topic: o.Topic, Dialer: &dialer, MaxWait: 500 * time.Millisecond,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) { log.Warn(fmt.Sprintf(msg, args...)) })}
	start := kafka.FirstOffset
	if o.FromLatest() {
		start = kafka.LastOffset
	} else if n, ok := o.FromOffset(); ok {
		start = n
	}
	if o.Group != "" {
		cfg.GroupID, cfg.StartOffset = o.Group, start
		r := kafka.NewReader(cfg)
		defer r.Close() // leaves the group
		last := map[int]kafka.Message{}
		for !out.full() {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("kafka-go: %w", err)
			}
			if out.emit(kafkaGoConsumed(m)) {
				last[m.Partition] = m
			}
		}
		if o.Commit {
			// Per partition, the offset after the last message given.
			if err := r.CommitMessages(ctx, slices.Collect(maps.Values(last))...); err != nil {
				return fmt.Errorf("kafka-go commit: %w", err)
			}
		}
		return nil
	}

	var parts []int
	if o.Partition != nil {
		parts = []int{int(*o.Partition)}
	} else {
		ps, err := dialer.LookupPartitions(ctx, "tcp", cfg.Brokers[0], o.Topic)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("kafka-go: partitions of %s: %w", o.Topic, err)
		}
		for _, p := range ps {
			parts = append(parts, p.ID)
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan kafka.Message)
	errs := make(chan error, len(parts))
	var readers []*kafka.Reader
	defer func() { // concurrently: each Close waits up to MaxWait for its fetch
		var wg sync.WaitGroup
		for _, r := range readers {
			wg.Go(func() { _ = r.Close() })
		}
		wg.Wait()
	}()
	for _, p := range parts {
		pcfg := cfg
		pcfg.Partition = p
		r := kafka.NewReader(pcfg)
		readers = append(readers, r)
		if err := r.SetOffset(start); err != nil {
			return fmt.Errorf("kafka-go: %w", err)
		}
		go func() {
			for {
				m, err := r.ReadMessage(rctx) // without a group ReadMessage commits nothing
				if err != nil {
					errs <- err
					return
				}
				select {
				case msgs <- m:
				case <-rctx.Done():
					return
				}
			}
		}()
	}
	for !out.full() {
		select {
		case m := <-msgs:
			out.emit(kafkaGoConsumed(m))
		case err := <-errs:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("kafka-go: %w", err)
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

func kafkaGoConsumed(m kafka.Message) protocol.Message {
	c := protocol.Message{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value, TimestampMs: m.Time.UnixMilli()}
	for _, h := range m.Headers {
		c.Headers = append(c.Headers, protocol.MessageHeader{Key: h.Key, Value: h.Value})
	}
	return c
}

// fixedPartition is a kafka-go Balancer that always picks one partition (the Writer has no
// per-message partition field; a custom Balancer is the library's way to choose).
type fixedPartition int32

func (f fixedPartition) Balance(_ kafka.Message, partitions ...int) int {
	for _, p := range partitions {
		if p == int(f) {
			return p
		}
	}
	// Not (yet) a partition of the topic: send it anyway so the broker's error surfaces.
	return int(f)
}
