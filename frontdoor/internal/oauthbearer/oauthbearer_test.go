package oauthbearer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"
)

// mint signs claims as a compact JWS with key (RSA: RS256, EC: ES256).
func mint(t *testing.T, key crypto.Signer, kid string, claims map[string]any) string {
	t.Helper()
	alg := "RS256"
	if _, ok := key.(*ecdsa.PrivateKey); ok {
		alg = "ES256"
	}
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	signed := b64url.EncodeToString(h) + "." + b64url.EncodeToString(c)
	d := crypto.SHA256.New()
	d.Write([]byte(signed))
	var sig []byte
	switch k := key.(type) {
	case *rsa.PrivateKey:
		s, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, d.Sum(nil))
		if err != nil {
			t.Fatal(err)
		}
		sig = s
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, d.Sum(nil))
		if err != nil {
			t.Fatal(err)
		}
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	}
	return signed + "." + b64url.EncodeToString(sig)
}

func jwks(t *testing.T, keys map[string]crypto.Signer) []byte {
	t.Helper()
	var out []map[string]string
	for kid, k := range keys {
		switch p := k.Public().(type) {
		case *rsa.PublicKey:
			out = append(out, map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "n": b64url.EncodeToString(p.N.Bytes()),
				"e": b64url.EncodeToString(big.NewInt(int64(p.E)).Bytes())})
		case *ecdsa.PublicKey:
			out = append(out, map[string]string{"kty": "EC", "kid": kid, "crv": "P-256",
				"x": b64url.EncodeToString(p.X.FillBytes(make([]byte, 32))), "y": b64url.EncodeToString(p.Y.FillBytes(make([]byte, 32)))})
		}
	}
	b, _ := json.Marshal(map[string]any{"keys": out})
	return b
}

func TestValidate(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keys, err := ParseKeySet(jwks(t, map[string]crypto.Signer{"r1": rsaKey, "e1": ecKey}))
	if err != nil || keys.Len() != 2 {
		t.Fatalf("ParseKeySet: %v", err)
	}
	now := time.Unix(1_800_000_000, 0)
	rules := Rules{Issuer: "https://idp.test", Audience: "ferry", PrincipalClaim: "client_id"}
	claims := func(mut func(map[string]any)) map[string]any {
		c := map[string]any{"iss": "https://idp.test", "aud": []any{"other", "ferry"}, "client_id": "etl",
			"exp": now.Add(time.Hour).Unix(), "scope": "kafka.write kafka.read"}
		if mut != nil {
			mut(c)
		}
		return c
	}
	for name, key := range map[string]crypto.Signer{"r1": rsaKey, "e1": ecKey} {
		tok, err := Validate(mint(t, key, name, claims(nil)), keys, rules, now)
		if err != nil || tok.Principal != "etl" || !tok.Expires.Equal(now.Add(time.Hour)) || len(tok.Scopes) != 2 {
			t.Fatalf("%s: %+v, %v", name, tok, err)
		}
	}
	for name, tok := range map[string]string{
		"expired":        mint(t, ecKey, "e1", claims(func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() })),
		"no exp":         mint(t, ecKey, "e1", claims(func(c map[string]any) { delete(c, "exp") })),
		"not yet":        mint(t, ecKey, "e1", claims(func(c map[string]any) { c["nbf"] = now.Add(time.Minute).Unix() })),
		"wrong issuer":   mint(t, ecKey, "e1", claims(func(c map[string]any) { c["iss"] = "https://evil.test" })),
		"wrong audience": mint(t, ecKey, "e1", claims(func(c map[string]any) { c["aud"] = "someone" })),
		"no principal":   mint(t, ecKey, "e1", claims(func(c map[string]any) { delete(c, "client_id") })),
		"unknown kid":    mint(t, ecKey, "zz", claims(nil)),
		"untrusted key":  mint(t, otherKey, "e1", claims(nil)),
		"key type":       mint(t, rsaKey, "e1", claims(nil)),
		"not a jws":      "abc.def",
		"alg none":       b64url.EncodeToString([]byte(`{"alg":"none","kid":"e1"}`)) + "." + b64url.EncodeToString([]byte(`{"sub":"x"}`)) + ".",
	} {
		if _, err := Validate(tok, keys, rules, now); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A tampered payload fails the signature.
	good := strings.Split(mint(t, ecKey, "e1", claims(nil)), ".")
	good[1] = b64url.EncodeToString([]byte(`{"client_id":"admin","exp":1900000000}`))
	if _, err := Validate(strings.Join(good, "."), keys, rules, now); err == nil {
		t.Error("tampered payload accepted")
	}
	for _, bad := range []string{`{`, `{"keys":[]}`, `{"keys":[{"kty":"RSA","kid":"x","n":"AQAB","e":"AQAB"}]}`, `{"keys":[{"kty":"EC","kid":"x","crv":"P-256","x":"AQ","y":"AQ"}]}`} {
		if _, err := ParseKeySet([]byte(bad)); err == nil {
			t.Errorf("ParseKeySet(%s) accepted", bad)
		}
	}
}

func TestBearerToken(t *testing.T) {
	tok, err := BearerToken([]byte("n,,\x01host=kafka\x01auth=Bearer abc.def.ghi\x01\x01"))
	if err != nil || tok != "abc.def.ghi" {
		t.Fatalf("%q %v", tok, err)
	}
	for _, bad := range []string{"", "n,,", "n,,\x01auth=Basic x\x01\x01", "n,,\x01host=x\x01\x01", "x\x01auth=Bearer t\x01\x01"} {
		if _, err := BearerToken([]byte(bad)); err == nil {
			t.Errorf("BearerToken(%q) accepted", bad)
		}
	}
}
