package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// produceSarama uses sarama's AsyncProducer. Its defaults: acks=1 (WaitForLocal), not idempotent,
// no compression, hash partitioner (FNV-1a, not Java's murmur2), protocol version V2_1_0_0.
func produceSarama(ctx context.Context, o protocol.Options, recs []protocol.Record, log *slog.Logger) ([]protocol.Delivery, error) {
	cfg, err := saramaConfig(o.Security())
	if err != nil {
		return nil, err
	}
	cfg.Producer.Return.Successes = true // needed to learn partition/offset per record
	cfg.Producer.Return.Errors = true
	switch o.Acks {
	case "0":
		cfg.Producer.RequiredAcks = sarama.NoResponse
	case "1":
		cfg.Producer.RequiredAcks = sarama.WaitForLocal
	case "all":
		cfg.Producer.RequiredAcks = sarama.WaitForAll
	}
	if o.Idempotent != nil && *o.Idempotent {
		// sarama's Validate insists on these for idempotence; an application has to set them too.
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
		if o.Acks == "" {
			cfg.Producer.RequiredAcks = sarama.WaitForAll
		}
	}
	switch o.Compression {
	case "none":
		cfg.Producer.Compression = sarama.CompressionNone
	case "gzip":
		cfg.Producer.Compression = sarama.CompressionGZIP
	case "snappy":
		cfg.Producer.Compression = sarama.CompressionSnappy
	case "lz4":
		cfg.Producer.Compression = sarama.CompressionLZ4
	case "zstd":
		cfg.Producer.Compression = sarama.CompressionZSTD
	}
	if o.Partition != nil {
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sarama config: %w", err)
	}

	// NewAsyncProducer dials and fetches metadata synchronously with its own retry budget; bound it
	// by the run's deadline.
	p, err := bounded(ctx, func() (sarama.AsyncProducer, error) {
		return sarama.NewAsyncProducer(strings.Split(o.Bootstrap, ","), cfg)
	}, func(p sarama.AsyncProducer) { p.AsyncClose() })
	if err != nil {
		return nil, fmt.Errorf("sarama: %w", err)
	}

	ds := make([]protocol.Delivery, len(recs))
	done := make([]bool, len(recs))
	outstanding := len(recs)
	input := p.Input()
	next := 0
	for outstanding > 0 {
		var in chan<- *sarama.ProducerMessage
		var msg *sarama.ProducerMessage
		if next < len(recs) {
			in = input
			msg = saramaMessage(o, recs[next], next)
		}
		select {
		case in <- msg:
			next++
		case m := <-p.Successes():
			i := m.Metadata.(int)
			done[i] = true
			outstanding--
			ds[i] = protocol.Delivery{Index: i, Partition: protocol.Int32(m.Partition), Offset: protocol.Int64(m.Offset)}
		case e := <-p.Errors():
			i := e.Msg.Metadata.(int)
			done[i] = true
			outstanding--
			ds[i] = protocol.Delivery{Index: i, Error: e.Err.Error()}
		case <-ctx.Done():
			outstanding = 0
		}
	}
	if ctx.Err() != nil {
		p.AsyncClose() // do not wait for a broker that did not answer in time
	} else if err := p.Close(); err != nil {
		log.Warn("sarama close", "err", err)
	}
	pending(ctx, ds, done)
	return ds, nil
}

func saramaMessage(o protocol.Options, r protocol.Record, i int) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{Topic: o.Topic, Metadata: i}
	if !r.Tombstone {
		m.Value = sarama.StringEncoder(r.Value)
	}
	if r.Key != nil {
		m.Key = sarama.StringEncoder(*r.Key)
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: []byte(h.Value)})
	}
	if r.TimestampMs != nil {
		m.Timestamp = msTime(*r.TimestampMs)
	}
	if o.Partition != nil {
		m.Partition = *o.Partition
	}
	return m
}

// saramaConfig is sarama's default configuration with the client id and the SASL and TLS settings.
func saramaConfig(sec protocol.Security) (*sarama.Config, error) {
	cfg := sarama.NewConfig()
	cfg.ClientID = "ferry-e2e-sarama"
	if sec.SASLTokenFile != "" {
		return nil, errors.New("sarama runner: OAUTHBEARER is not wired")
	}
	if sec.SASLUser != "" {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		cfg.Net.SASL.User = sec.SASLUser
		cfg.Net.SASL.Password = sec.SASLPassword
		switch sec.Mechanism() {
		case "SCRAM-SHA-256":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: scram.SHA256} }
		case "SCRAM-SHA-512":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: scram.SHA512} }
		}
	}
	tlsCfg, err := tlsConfig(sec)
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tlsCfg
	}
	return cfg, nil
}

// consumeSarama uses sarama's Consumer (one PartitionConsumer per partition) without a group, or a
// ConsumerGroup with autocommit off.
func consumeSarama(ctx context.Context, o protocol.ConsumeOptions, out *sink, log *slog.Logger) error {
	cfg, err := saramaConfig(o.Security())
	if err != nil {
		return usageError(err.Error())
	}
	initial := sarama.OffsetOldest
	if o.FromLatest() {
		initial = sarama.OffsetNewest
	}
	if o.Group != "" {
		cfg.Consumer.Offsets.Initial = initial
		cfg.Consumer.Offsets.AutoCommit.Enable = false
		// Session.Commit returns nothing: commit (and other) failures come on the group's error
		// channel, logged below.
		cfg.Consumer.Return.Errors = true
	}
	if err := cfg.Validate(); err != nil {
		return usageError("sarama config: " + err.Error())
	}
	client, err := bounded(ctx, func() (sarama.Client, error) {
		return sarama.NewClient(strings.Split(o.Bootstrap, ","), cfg)
	}, func(c sarama.Client) { _ = c.Close() })
	if err != nil {
		return fmt.Errorf("sarama: %w", err)
	}
	defer client.Close()
	if o.Group != "" {
		return consumeSaramaGroup(ctx, o, client, out, log)
	}

	parts := []int32{}
	if o.Partition != nil {
		parts = append(parts, *o.Partition)
	} else if parts, err = client.Partitions(o.Topic); err != nil {
		return fmt.Errorf("sarama: partitions of %s: %w", o.Topic, err)
	}
	if n, ok := o.FromOffset(); ok {
		initial = n
	}
	cons, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return fmt.Errorf("sarama: %w", err)
	}
	defer cons.Close()
	// One stream in arrival order from the partition consumers' channels.
	msgs := make(chan *sarama.ConsumerMessage)
	stop := make(chan struct{})
	defer close(stop) // before cons.Close (deferred earlier), so no forwarder blocks it
	for _, p := range parts {
		pc, err := cons.ConsumePartition(o.Topic, p, initial)
		if err != nil {
			return fmt.Errorf("sarama: consume %s/%d: %w", o.Topic, p, err)
		}
		go func() {
			for m := range pc.Messages() {
				select {
				case msgs <- m:
				case <-stop:
					return
				}
			}
		}()
	}
	for !out.full() {
		select {
		case m := <-msgs:
			out.emit(saramaConsumed(m))
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

func consumeSaramaGroup(ctx context.Context, o protocol.ConsumeOptions, client sarama.Client, out *sink, log *slog.Logger) error {
	group, err := sarama.NewConsumerGroupFromClient(o.Group, client)
	if err != nil {
		return fmt.Errorf("sarama: %w", err)
	}
	defer group.Close() // leaves the group
	go func() {
		for err := range group.Errors() {
			log.Warn("sarama consumer group", "err", err)
		}
	}()
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := &saramaHandler{out: out, commit: o.Commit, finish: cancel}
	// Consume returns at each rebalance; a member calls it again until it is done.
	for gctx.Err() == nil {
		if err := group.Consume(gctx, []string{o.Topic}, h); err != nil && gctx.Err() == nil {
			log.Warn("sarama consume", "err", err)
			select { // an error may repeat at once (no coordinator yet): do not spin
			case <-gctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	return nil
}

// saramaHandler prints the claims' messages; the last one printed commits (--commit) and ends the run.
type saramaHandler struct {
	out    *sink
	commit bool
	finish context.CancelFunc

	mu sync.Mutex // orders print+mark of every claim before the commit
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.mu.Lock()
			if h.out.emit(saramaConsumed(m)) {
				if h.commit {
					sess.MarkMessage(m, "") // marks m.Offset+1; sent by Commit
				}
				if h.out.full() {
					if h.commit {
						sess.Commit() // synchronous with autocommit off
					}
					h.finish()
				}
			}
			h.mu.Unlock()
		case <-sess.Context().Done():
			return nil
		}
	}
}

func saramaConsumed(m *sarama.ConsumerMessage) protocol.Message {
	c := protocol.Message{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, TimestampMs: m.Timestamp.UnixMilli()}
	for _, h := range m.Headers {
		c.Headers = append(c.Headers, protocol.MessageHeader{Key: string(h.Key), Value: h.Value})
	}
	return c
}

// saramaSCRAM is the SCRAM client sarama asks its users to supply (its own
// examples use xdg-go/scram, as here).
type saramaSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (c *saramaSCRAM) Begin(user, password, authzID string) error {
	cl, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conv = cl.NewConversation()
	return nil
}

func (c *saramaSCRAM) Step(challenge string) (string, error) { return c.conv.Step(challenge) }

func (c *saramaSCRAM) Done() bool { return c.conv.Done() }
