package broker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/ferrygw/ferry/frontdoor/internal/saslplain"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"golang.org/x/crypto/bcrypt"
)

func testUsers(t *testing.T) *saslplain.Users {
	t.Helper()
	alice, _ := bcrypt.GenerateFromPassword([]byte("alice-pw"), bcrypt.MinCost)
	bob, _ := bcrypt.GenerateFromPassword([]byte("bob-pw"), bcrypt.MinCost)
	u, err := saslplain.Parse(strings.NewReader("# test users\nalice:" + string(alice) + "\nbob:" + string(bob) + ":events\n"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSASLPlainWithKgo(t *testing.T) {
	h := newHarness(t, harnessOpts{sasl: testUsers(t)})
	t.Run("good credentials", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cl := newClient(t, h.addr, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()))
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("authed")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cl := newClient(t, h.addr, kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism()), kgo.RequestRetries(0))
		_, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest())
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("err = %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("topic outside allow-list", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cl := newClient(t, h.addr, kgo.SASL(plain.Auth{User: "bob", Pass: "bob-pw"}.AsMechanism()), kgo.RecordDeliveryTimeout(2*time.Second))
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("err = %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Partition: 0, Value: []byte("bob")}).FirstErr(); err != nil {
			t.Fatalf("allowed topic: %v", err)
		}
	})
}

func handshake(t *testing.T, c *rawClient, version int16, mech string) *kmsg.SASLHandshakeResponse {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = version
	req.Mechanism = mech
	return c.roundTrip(req).(*kmsg.SASLHandshakeResponse)
}

func TestSASLRawProtocol(t *testing.T) {
	h := newHarness(t, harnessOpts{sasl: testUsers(t)})

	t.Run("ApiVersions advertises SASL", func(t *testing.T) {
		resp := dialRaw(t, h.addr).roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
		keys := map[int16]bool{}
		for _, k := range resp.ApiKeys {
			keys[k.ApiKey] = true
		}
		if !keys[kafka.SASLHandshakeKey] || !keys[kafka.SASLAuthenticateKey] {
			t.Fatalf("SASL APIs missing: %+v", resp.ApiKeys)
		}
	})
	t.Run("request before authentication closes", func(t *testing.T) {
		c := dialRaw(t, h.addr)
		c.send(mdReq(12))
		c.expectClosed()
	})
	t.Run("unsupported mechanism", func(t *testing.T) {
		c := dialRaw(t, h.addr)
		resp := handshake(t, c, 1, "SCRAM-SHA-256")
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 1 || resp.SupportedMechanisms[0] != "PLAIN" {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("authenticate without handshake", func(t *testing.T) {
		c := dialRaw(t, h.addr)
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = []byte("\x00alice\x00alice-pw")
		if resp := c.roundTrip(req).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("error %d, want ILLEGAL_SASL_STATE", resp.ErrorCode)
		}
		c.expectClosed()
	})
	for _, v := range []int16{0, 1, 2} {
		t.Run("authenticate v"+string(rune('0'+v)), func(t *testing.T) {
			c := dialRaw(t, h.addr)
			if resp := handshake(t, c, 1, "PLAIN"); resp.ErrorCode != 0 {
				t.Fatalf("handshake error %d", resp.ErrorCode)
			}
			req := kmsg.NewPtrSASLAuthenticateRequest()
			req.Version = v
			req.SASLAuthBytes = []byte("\x00alice\x00alice-pw")
			if resp := c.roundTrip(req).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != 0 {
				t.Fatalf("error %d", resp.ErrorCode)
			}
			if md := c.roundTrip(mdReq(12, "orders")).(*kmsg.MetadataResponse); len(md.Topics) != 1 {
				t.Fatalf("metadata after auth: %+v", md.Topics)
			}
		})
	}
	t.Run("bad password closes after the answer", func(t *testing.T) {
		c := dialRaw(t, h.addr)
		handshake(t, c, 1, "PLAIN")
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = 2
		req.SASLAuthBytes = []byte("\x00alice\x00wrong")
		resp := c.roundTrip(req).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil {
			t.Fatalf("%+v", resp)
		}
		c.expectClosed()
	})
	t.Run("handshake v0 then raw token", func(t *testing.T) {
		c := dialRaw(t, h.addr)
		if resp := handshake(t, c, 0, "PLAIN"); resp.ErrorCode != 0 {
			t.Fatalf("handshake error %d", resp.ErrorCode)
		}
		tok := []byte("\x00alice\x00alice-pw")
		c.write(append([]byte{0, 0, 0, byte(len(tok))}, tok...))
		b, err := c.readFrame()
		if err != nil || len(b) != 0 {
			t.Fatalf("raw token answer %q, %v; want an empty frame", b, err)
		}
		if md := c.roundTrip(mdReq(4, "orders")).(*kmsg.MetadataResponse); len(md.Topics) != 1 {
			t.Fatalf("metadata after raw auth: %+v", md.Topics)
		}
	})
	t.Run("handshake v0 then wrong raw token closes", func(t *testing.T) {
		c := dialRaw(t, h.addr)
		handshake(t, c, 0, "PLAIN")
		tok := []byte("\x00alice\x00nope")
		c.write(append([]byte{0, 0, 0, byte(len(tok))}, tok...))
		c.expectClosed()
	})
	t.Run("metadata hides topics outside the allow-list", func(t *testing.T) {
		c := dialRaw(t, h.addr)
		handshake(t, c, 1, "PLAIN")
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = []byte("\x00bob\x00bob-pw")
		c.roundTrip(req)
		all := c.roundTrip(mdReq(12)).(*kmsg.MetadataResponse)
		if got := topicNames(all); len(got) != 1 || got[0] != "events" {
			t.Fatalf("bob sees %v", got)
		}
		named := c.roundTrip(mdReq(12, "orders")).(*kmsg.MetadataResponse)
		if named.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("error %d, want TOPIC_AUTHORIZATION_FAILED", named.Topics[0].ErrorCode)
		}
	})
}
