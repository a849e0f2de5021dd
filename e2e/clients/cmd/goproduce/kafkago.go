package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
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
	tlsCfg, err := tlsConfig(o)
	if err != nil {
		return nil, err
	}
	tr := &kafka.Transport{TLS: tlsCfg}
	if o.SASLUser != "" {
		switch o.Mechanism() {
		case "SCRAM-SHA-256", "SCRAM-SHA-512":
			algo := scram.SHA256
			if o.Mechanism() == "SCRAM-SHA-512" {
				algo = scram.SHA512
			}
			if tr.SASL, err = scram.Mechanism(algo, o.SASLUser, o.SASLPassword); err != nil {
				return nil, fmt.Errorf("kafka-go scram: %w", err)
			}
		default:
			tr.SASL = plain.Mechanism{Username: o.SASLUser, Password: o.SASLPassword}
		}
	}
	if o.SASLTokenFile != "" {
		return nil, errors.New("kafka-go runner: OAUTHBEARER is not wired")
	}
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
