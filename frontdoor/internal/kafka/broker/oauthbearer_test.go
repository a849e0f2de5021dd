package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/ferrygw/ferry/frontdoor/internal/oauthbearer"
)

// testTokens accepts bearer tokens "user@expiry-unix-ms" (the JWT checks
// are oauthbearer's; this tests the session around them) and counts logins.
type testTokens struct{ logins atomic.Int64 }

func (a *testTokens) Authenticate(msg []byte) (string, time.Time, error) {
	tok, err := oauthbearer.BearerToken(msg)
	if err != nil {
		return "", time.Time{}, err
	}
	user, ms, ok := strings.Cut(tok, "@")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil {
		return "", time.Time{}, errors.New("bad test token")
	}
	exp := time.UnixMilli(n)
	if time.Now().After(exp) {
		return "", time.Time{}, errors.New("token expired")
	}
	a.logins.Add(1)
	return user, exp, nil
}

func token(user string, ttl time.Duration) string {
	return fmt.Sprintf("%s@%d", user, time.Now().Add(ttl).UnixMilli())
}

// TestOAuthBearerReauthenticates: franz-go logs in with a token that lives
// two seconds, is told the session lifetime, and re-authenticates on the same
// connection before it ends (KIP-368), so producing keeps working.
func TestOAuthBearerReauthenticates(t *testing.T) {
	tokens := &testTokens{}
	h := newHarness(t, harnessOpts{token: tokens})
	cl := newClient(t, h.addr, kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		return oauth.Auth{Token: token("dana", 2*time.Second)}, nil
	})))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 2, Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		time.Sleep(1500 * time.Millisecond)
	}
	if n := tokens.logins.Load(); n < 2 {
		t.Fatalf("%d logins in 4.5s with 2s tokens: the client did not re-authenticate", n)
	}
	if got := h.ap.Log(100, 2); len(got) != 3 {
		t.Fatalf("orders partition 2 holds %q", got)
	}
}

func TestOAuthBearerSessionRules(t *testing.T) {
	h := newHarness(t, harnessOpts{token: &testTokens{}})
	login := func(c *rawClient, tok string) *kmsg.SASLAuthenticateResponse {
		if resp := handshake(t, c, 1, "OAUTHBEARER"); resp.ErrorCode != 0 {
			t.Fatalf("handshake: %+v", resp)
		}
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = 2
		req.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + tok + "\x01\x01")
		return c.roundTrip(req).(*kmsg.SASLAuthenticateResponse)
	}
	t.Run("expired token", func(t *testing.T) {
		c := dialRaw(t, h.addr)
		if resp := login(c, token("dana", -time.Second)); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("expired token: %+v", resp)
		}
		c.expectClosed()
	})
	t.Run("session lifetime and expiry", func(t *testing.T) {
		c := dialRaw(t, h.addr)
		resp := login(c, token("dana", 800*time.Millisecond))
		if resp.ErrorCode != 0 || resp.SessionLifetimeMillis <= 0 || resp.SessionLifetimeMillis > 800 {
			t.Fatalf("login: %+v", resp)
		}
		c.roundTrip(kmsg.NewPtrMetadataRequest())
		time.Sleep(time.Second)
		c.send(kmsg.NewPtrMetadataRequest())
		c.expectClosed()
	})
	t.Run("re-authentication keeps the principal", func(t *testing.T) {
		c := dialRaw(t, h.addr)
		if resp := login(c, token("dana", time.Minute)); resp.ErrorCode != 0 {
			t.Fatalf("login: %+v", resp)
		}
		if resp := login(c, token("dana", 2*time.Minute)); resp.ErrorCode != 0 || resp.SessionLifetimeMillis < 60_000 {
			t.Fatalf("re-authentication: %+v", resp)
		}
		if resp := login(c, token("eve", time.Minute)); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("re-authentication as another user: %+v", resp)
		}
		c.expectClosed()
	})
}
