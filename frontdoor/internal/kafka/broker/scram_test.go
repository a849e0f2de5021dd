package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ferrygw/ferry/frontdoor/internal/saslscram"
)

// testScram serves SCRAM from an in-memory store.
type testScram struct{ store *saslscram.Store }

func (a testScram) Mechanisms() []string { return saslscram.Mechanisms }

func (a testScram) Start(mechanism string) (kafka.ScramExchange, error) {
	return saslscram.NewServer(mechanism, a.store.Lookup, []byte("test-fake-key"))
}

func newTestScram(t *testing.T, user, password string) testScram {
	t.Helper()
	var s saslscram.Store
	for _, m := range saslscram.Mechanisms {
		c, err := saslscram.NewCredential(m, password, 4096)
		if err != nil {
			t.Fatal(err)
		}
		s.Set(user, c)
	}
	return testScram{&s}
}

func TestSCRAMWithKgo(t *testing.T) {
	m := newMeters(t)
	h := newHarness(t, harnessOpts{sasl: testUsers(t), scram: newTestScram(t, "carol", "carol-pw"), mp: m.mp})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, mech := range map[string]func(scram.Auth) kgo.Opt{
		"SCRAM-SHA-256": func(a scram.Auth) kgo.Opt { return kgo.SASL(a.AsSha256Mechanism()) },
		"SCRAM-SHA-512": func(a scram.Auth) kgo.Opt { return kgo.SASL(a.AsSha512Mechanism()) },
	} {
		t.Run(name, func(t *testing.T) {
			cl := newClient(t, h.addr, mech(scram.Auth{User: "carol", Pass: "carol-pw"}))
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte(name)}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			for _, bad := range []scram.Auth{{User: "carol", Pass: "nope"}, {User: "nobody", Pass: "carol-pw"}} {
				cl := newClient(t, h.addr, mech(bad), kgo.RequestRetries(0))
				if _, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
					t.Fatalf("%s/%s: %v, want SASL_AUTHENTICATION_FAILED", bad.User, bad.Pass, err)
				}
			}
		})
	}
	// PLAIN users still log in beside SCRAM.
	cl := newClient(t, h.addr, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatalf("PLAIN beside SCRAM: %v", err)
	}
	if got := h.ap.Log(100, 1); len(got) != 3 {
		t.Fatalf("orders partition 1 holds %q", got)
	}
	m.waitValue(4, "ferry.frontdoor.sasl.failures")

	// The handshake lists every mechanism; SCRAM needs handshake v1.
	c := dialRaw(t, h.addr)
	resp := handshake(t, c, 1, "SCRAM-SHA-512")
	if resp.ErrorCode != 0 || len(resp.SupportedMechanisms) != 3 {
		t.Fatalf("handshake v1: %+v", resp)
	}
	if resp := handshake(t, dialRaw(t, h.addr), 0, "SCRAM-SHA-256"); resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code {
		t.Fatalf("SCRAM after handshake v0: %+v", resp)
	}
}
