package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/xdg-go/scram"
	"log/slog"
	"strings"

	"github.com/IBM/sarama"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// produceSarama uses sarama's AsyncProducer. Its defaults: acks=1 (WaitForLocal), not idempotent,
// no compression, hash partitioner (FNV-1a, not Java's murmur2), protocol version V2_1_0_0.
func produceSarama(ctx context.Context, o protocol.Options, recs []protocol.Record, log *slog.Logger) ([]protocol.Delivery, error) {
	cfg := sarama.NewConfig()
	cfg.ClientID = "ferry-e2e-sarama"
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
	if o.SASLTokenFile != "" {
		return nil, errors.New("sarama runner: OAUTHBEARER is not wired")
	}
	if o.SASLUser != "" {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		cfg.Net.SASL.User = o.SASLUser
		cfg.Net.SASL.Password = o.SASLPassword
		switch o.Mechanism() {
		case "SCRAM-SHA-256":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: scram.SHA256} }
		case "SCRAM-SHA-512":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: scram.SHA512} }
		}
	}
	tlsCfg, err := tlsConfig(o)
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tlsCfg
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sarama config: %w", err)
	}

	// NewAsyncProducer dials and fetches metadata synchronously with its own retry budget; bound it
	// by the run's deadline.
	type made struct {
		p   sarama.AsyncProducer
		err error
	}
	mc := make(chan made, 1)
	go func() {
		p, err := sarama.NewAsyncProducer(strings.Split(o.Bootstrap, ","), cfg)
		mc <- made{p, err}
	}()
	var p sarama.AsyncProducer
	select {
	case m := <-mc:
		if m.err != nil {
			return nil, fmt.Errorf("sarama: %w", m.err)
		}
		p = m.p
	case <-ctx.Done():
		go func() { // the constructor is not cancellable; close what it eventually returns
			if m := <-mc; m.p != nil {
				m.p.AsyncClose()
			}
		}()
		return nil, fmt.Errorf("sarama: connecting: %w", ctx.Err())
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
