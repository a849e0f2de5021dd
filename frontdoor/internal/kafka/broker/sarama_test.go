package broker

import (
	"errors"
	"fmt"
	"testing"

	"github.com/IBM/sarama"
)

// TestSaramaProduce drives frontdoor with sarama, including its SASL
// handshake v0 mode (a bare PLAIN token after the handshake, as sarama up
// to 1.40 sends by default) and v1 (SaslAuthenticate).
func TestSaramaProduce(t *testing.T) {
	h := newHarness(t, harnessOpts{sasl: testUsers(t)})
	for _, tc := range []struct {
		name      string
		handshake int16
		pass      string
		codec     sarama.CompressionCodec
		wantErr   bool
	}{
		{"handshake v0 raw token", sarama.SASLHandshakeV0, "alice-pw", sarama.CompressionNone, false},
		{"handshake v1 authenticate", sarama.SASLHandshakeV1, "alice-pw", sarama.CompressionGZIP, false},
		{"handshake v1 zstd", sarama.SASLHandshakeV1, "alice-pw", sarama.CompressionZSTD, false},
		{"handshake v0 wrong password", sarama.SASLHandshakeV0, "nope", sarama.CompressionNone, true},
		{"handshake v1 wrong password", sarama.SASLHandshakeV1, "nope", sarama.CompressionNone, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sarama.NewConfig()
			cfg.ClientID = "sarama-test"
			cfg.Version = sarama.V2_8_0_0
			cfg.Producer.Return.Successes = true
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			cfg.Producer.Compression = tc.codec
			cfg.Metadata.Retry.Max = 0
			cfg.Net.SASL.Enable = true
			cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
			cfg.Net.SASL.Version = tc.handshake
			cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", tc.pass
			// sarama's v0 mode predates ApiVersions and picks versions
			// from cfg.Version alone.
			cfg.ApiVersionsRequest = tc.handshake != sarama.SASLHandshakeV0
			p, err := sarama.NewSyncProducer([]string{h.addr}, cfg)
			if tc.wantErr {
				if err == nil {
					_ = p.Close()
					t.Fatal("wrong password accepted")
				}
				if !errors.Is(err, sarama.ErrOutOfBrokers) {
					t.Fatalf("err = %v, want a failed connection", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer p.Close()
			before := len(h.ap.Log(200, 0))
			for i := 0; i < 3; i++ {
				part, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: "events", Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", tc.name, i))})
				if err != nil {
					t.Fatalf("send: %v", err)
				}
				if part != 0 || off != int64(before+i) {
					t.Fatalf("record %d at %d/%d, want 0/%d", i, part, off, before+i)
				}
			}
		})
	}
}
