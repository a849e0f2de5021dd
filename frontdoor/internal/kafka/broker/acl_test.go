package broker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"go.opentelemetry.io/otel/attribute"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

func TestACLsWithKgo(t *testing.T) {
	rules, err := acl.Parse(strings.NewReader(`
allow User:alice WRITE    topic:orders
allow User:*     DESCRIBE topic:events
`))
	if err != nil {
		t.Fatal(err)
	}
	m := newMeters(t)
	h := newHarness(t, harnessOpts{sasl: testUsers(t), authz: rules, mp: m.mp})
	login := func(user string, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, h.addr, append(opts, kgo.SASL(plain.Auth{User: user, Pass: user + "-pw"}.AsMechanism()))...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	alice := login("alice", kgo.RecordDeliveryTimeout(2*time.Second))
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatalf("alice to orders: %v", err)
	}
	// events is DESCRIBE-only for everyone: alice sees it but may not write.
	err = alice.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("refused")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice to events: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	m.waitValue(1, "ferry.frontdoor.authorization.denied", attribute.String("operation", "WRITE"))

	visible := func(cl *kgo.Client, topics ...string) map[string]int16 {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		if topics != nil {
			for _, name := range topics {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(name)
				req.Topics = append(req.Topics, rt)
			}
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int16{}
		for _, tp := range resp.Topics {
			out[*tp.Topic] = tp.ErrorCode
		}
		return out
	}
	// Every topic: those without DESCRIBE are left out.
	if got := visible(alice); len(got) != 2 || got["orders"] != 0 || got["events"] != 0 {
		t.Errorf("alice sees %v, want orders (WRITE implies DESCRIBE) and events", got)
	}
	bob := login("bob")
	if got := visible(bob); len(got) != 1 || got["events"] != 0 {
		t.Errorf("bob sees %v, want only events", got)
	}
	// Named topics: refused by name.
	if got := visible(bob, "orders", "events"); got["orders"] != kerr.TopicAuthorizationFailed.Code || got["events"] != 0 {
		t.Errorf("bob's named metadata = %v, want orders refused", got)
	}
	m.waitValue(1, "ferry.frontdoor.authorization.denied", attribute.String("operation", "DESCRIBE"))
	// The allowed record is in orders (table 100); a refused one never
	// reaches a backend (events is table 200).
	stored := 0
	for bucket := range int32(4) {
		stored += len(h.ap.Log(100, bucket))
	}
	if stored != 1 {
		t.Fatalf("orders holds %d records, want alice's one", stored)
	}
	for bucket := range int32(2) {
		if log := h.ap.Log(200, bucket); len(log) > 0 {
			t.Fatalf("events bucket %d holds %q although every write was refused", bucket, log)
		}
	}
}
