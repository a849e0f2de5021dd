package suite

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/ferrygw/ferry/e2e/clients"
)

// TestOAuthBearer runs a frontdoor that accepts OAUTHBEARER tokens signed by a key of a JWKS
// file: Java kafka-clients, librdkafka (confluent-kafka), kafkajs and franz-go produce with a
// token the test mints and every row is read back; an expired token, a token signed by another
// key, one for another audience, and a Java client with an expired token are refused.
func TestOAuthBearer(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "oauth")
	dir := t.TempDir()
	idp, other := newTestIdP(t, "k1"), newTestIdP(t, "k1")
	jwks := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwks, idp.jwks(t), 0o600); err != nil {
		t.Fatal(err)
	}
	kafka := startSecuredFrontdoor(t, e, "oauth", map[string]string{
		"FERRY_SASL_OAUTHBEARER_JWKS_FILE": jwks,
		"FERRY_SASL_OAUTHBEARER_ISSUER":    "https://idp.ferry.test",
		"FERRY_SASL_OAUTHBEARER_AUDIENCE":  "ferry",
	})
	claims := func(ttl time.Duration, aud string) map[string]any {
		return map[string]any{"iss": "https://idp.ferry.test", "aud": aud, "sub": "svc-etl",
			"iat": time.Now().Unix(), "exp": time.Now().Add(ttl).Unix(), "scope": "kafka"}
	}
	tokenFile := func(name, token string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := tokenFile("good.jwt", idp.mint(t, claims(time.Hour, "ferry")))

	for _, c := range selectedClients(t) {
		switch c.Name {
		case "java", "confluent-kafka", "kafkajs", "franz", "kafka-python":
		default:
			continue // kcat cannot pass a token; sarama and kafka-go runners wire PLAIN only
		}
		t.Run(c.Name, func(t *testing.T) {
			produceWithClient(t, f, db, c, clientRun{kafka: kafka, records: 12, table: "oauth_" + sanitize(c.Name),
				saslMechanism: "OAUTHBEARER", saslTokenFile: good})
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for name, tok := range map[string]string{
		"expired token":  idp.mint(t, claims(-time.Minute, "ferry")),
		"untrusted key":  other.mint(t, claims(time.Hour, "ferry")),
		"wrong audience": idp.mint(t, claims(time.Hour, "someone-else")),
	} {
		t.Run(name, func(t *testing.T) {
			cl := newKgo(t, kafka, kgoToken(t, tokenFile(strings.ReplaceAll(name, " ", "-")+".jwt", tok)), kgo.RequestRetries(0))
			if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("%v, want SASL_AUTHENTICATION_FAILED", err)
			}
		})
	}
	t.Run("java/expired token", func(t *testing.T) {
		java, err := clients.ByName("java")
		if err != nil {
			t.Fatal(err)
		}
		res, err := java.Produce(ctx, clients.Options{Bootstrap: kafka, Topic: db + ".oauth_java", Acks: "all",
			SASLMechanism: "OAUTHBEARER", SASLTokenFile: tokenFile("java-expired.jwt", idp.mint(t, claims(-time.Minute, "ferry"))),
			Timeout: 20 * time.Second}, []clients.Record{{Value: `{"id": 1}`}})
		if err == nil && res.Err() == nil {
			t.Fatal("java: a record was acknowledged with an expired token")
		}
	})
}

// kgoToken is franz-go's OAUTHBEARER option reading the token from file at each login.
func kgoToken(t *testing.T, file string) kgo.Opt {
	return kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		b, err := os.ReadFile(file)
		return oauth.Auth{Token: strings.TrimSpace(string(b))}, err
	}))
}

// testIdP signs tokens with an RSA key and publishes it as a JWKS.
type testIdP struct {
	key *rsa.PrivateKey
	kid string
}

func newTestIdP(t *testing.T, kid string) *testIdP {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &testIdP{key: key, kid: kid}
}

var b64url = base64.RawURLEncoding

func (p *testIdP) jwks(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": p.kid,
		"n": b64url.EncodeToString(p.key.N.Bytes()), "e": b64url.EncodeToString(big.NewInt(int64(p.key.E)).Bytes())}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mint returns an RS256 JWT for claims.
func (p *testIdP) mint(t *testing.T, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": p.kid})
	c, _ := json.Marshal(claims)
	signed := b64url.EncodeToString(h) + "." + b64url.EncodeToString(c)
	d := crypto.SHA256.New()
	d.Write([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, p.key, crypto.SHA256, d.Sum(nil))
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64url.EncodeToString(sig)
}
