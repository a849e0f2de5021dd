// Package oauthbearer authenticates Kafka clients with SASL/OAUTHBEARER
// (RFC 7628, Kafka's KIP-255): the client sends a JWT, which must be signed
// by a key of a JSON Web Key Set the operator trusts (RS256/384/512,
// ES256/384/512), come from the configured issuer, name the configured
// audience and not be expired. A configurable claim names the principal.
package oauthbearer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// KeySet is a parsed JSON Web Key Set (RFC 7517): public keys by key id.
type KeySet struct {
	keys map[string]crypto.PublicKey
}

// Len is the number of keys.
func (k *KeySet) Len() int { return len(k.keys) }

// ParseKeySet reads a JWKS document. Keys of other types or uses are
// skipped; a set without a usable key is an error.
func ParseKeySet(data []byte) (*KeySet, error) {
	var doc struct {
		Keys []struct {
			Kty, Kid, Use, Crv string
			N, E, X, Y         string
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	ks := &KeySet{keys: map[string]crypto.PublicKey{}}
	for i, k := range doc.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		var pub crypto.PublicKey
		var err error
		switch k.Kty {
		case "RSA":
			pub, err = rsaKey(k.N, k.E)
		case "EC":
			pub, err = ecKey(k.Crv, k.X, k.Y)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("jwks: key %d (kid %q): %w", i, k.Kid, err)
		}
		ks.keys[k.Kid] = pub
	}
	if len(ks.keys) == 0 {
		return nil, errors.New("jwks: no RSA or EC signing key")
	}
	return ks, nil
}

var b64url = base64.RawURLEncoding

func bigInt(s string) (*big.Int, error) {
	b, err := b64url.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("bad base64url integer %q", s)
	}
	return new(big.Int).SetBytes(b), nil
}

func rsaKey(n, e string) (crypto.PublicKey, error) {
	nn, err := bigInt(n)
	if err != nil {
		return nil, err
	}
	ee, err := bigInt(e)
	if err != nil || !ee.IsInt64() || ee.Int64() < 3 {
		return nil, errors.New("bad RSA exponent")
	}
	if nn.BitLen() < 2048 {
		return nil, fmt.Errorf("RSA key of %d bits; want at least 2048", nn.BitLen())
	}
	return &rsa.PublicKey{N: nn, E: int(ee.Int64())}, nil
}

func ecKey(crv, x, y string) (crypto.PublicKey, error) {
	var c elliptic.Curve
	switch crv {
	case "P-256":
		c = elliptic.P256()
	case "P-384":
		c = elliptic.P384()
	case "P-521":
		c = elliptic.P521()
	default:
		return nil, fmt.Errorf("unsupported curve %q", crv)
	}
	xx, err := bigInt(x)
	if err != nil {
		return nil, err
	}
	yy, err := bigInt(y)
	if err != nil {
		return nil, err
	}
	if !c.IsOnCurve(xx, yy) {
		return nil, errors.New("point not on curve")
	}
	return &ecdsa.PublicKey{Curve: c, X: xx, Y: yy}, nil
}

// Rules are what a token must satisfy beyond its signature.
type Rules struct {
	Issuer   string // required "iss"; empty: any
	Audience string // required in "aud"; empty: any
	// PrincipalClaim names the claim that becomes the user ("sub" by default).
	PrincipalClaim string
	// Leeway tolerates clock skew on exp, nbf and iat.
	Leeway time.Duration
}

// Token is a validated token.
type Token struct {
	Principal string
	Expires   time.Time
	Scopes    []string
}

// Validate checks a compact JWS token against keys and rules at now.
func Validate(token string, keys *KeySet, r Rules, now time.Time) (Token, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Token{}, errors.New("token is not a compact JWS (header.payload.signature)")
	}
	var hdr struct {
		Alg, Kid, Typ string
	}
	if err := decodeJSON(parts[0], &hdr); err != nil {
		return Token{}, fmt.Errorf("token header: %w", err)
	}
	pub, ok := keys.keys[hdr.Kid]
	if !ok {
		return Token{}, fmt.Errorf("token signed with unknown key id %q", hdr.Kid)
	}
	sig, err := b64url.DecodeString(parts[2])
	if err != nil {
		return Token{}, errors.New("token signature is not base64url")
	}
	if err := verify(hdr.Alg, pub, parts[0]+"."+parts[1], sig); err != nil {
		return Token{}, err
	}
	var claims map[string]any
	if err := decodeJSON(parts[1], &claims); err != nil {
		return Token{}, fmt.Errorf("token claims: %w", err)
	}
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return Token{}, errors.New("token has no exp")
	}
	if now.After(exp.Add(r.Leeway)) {
		return Token{}, fmt.Errorf("token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if nbf, ok := numericDate(claims["nbf"]); ok && now.Add(r.Leeway).Before(nbf) {
		return Token{}, fmt.Errorf("token not valid before %s", nbf.UTC().Format(time.RFC3339))
	}
	if r.Issuer != "" && claims["iss"] != r.Issuer {
		return Token{}, fmt.Errorf("token issuer %v, want %q", claims["iss"], r.Issuer)
	}
	if r.Audience != "" && !hasAudience(claims["aud"], r.Audience) {
		return Token{}, fmt.Errorf("token audience %v lacks %q", claims["aud"], r.Audience)
	}
	claim := r.PrincipalClaim
	if claim == "" {
		claim = "sub"
	}
	principal, _ := claims[claim].(string)
	if principal == "" {
		return Token{}, fmt.Errorf("token has no string claim %q for the principal", claim)
	}
	t := Token{Principal: principal, Expires: exp}
	if s, ok := claims["scope"].(string); ok {
		t.Scopes = strings.Fields(s)
	}
	return t, nil
}

func decodeJSON(part string, v any) error {
	b, err := b64url.DecodeString(part)
	if err != nil {
		return errors.New("not base64url")
	}
	return json.Unmarshal(b, v)
}

func numericDate(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok {
		return time.Time{}, false
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), true
}

func hasAudience(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, x := range a {
			if x == want {
				return true
			}
		}
	}
	return false
}

// verify checks a JWS signature over signed with pub under alg.
func verify(alg string, pub crypto.PublicKey, signed string, sig []byte) error {
	var h crypto.Hash
	switch alg {
	case "RS256", "ES256":
		h = crypto.SHA256
	case "RS384", "ES384":
		h = crypto.SHA384
	case "RS512", "ES512":
		h = crypto.SHA512
	default:
		return fmt.Errorf("token algorithm %q is not accepted (RS256/384/512, ES256/384/512)", alg)
	}
	d := h.New()
	d.Write([]byte(signed))
	digest := d.Sum(nil)
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if alg[0] != 'R' {
			return fmt.Errorf("token algorithm %s does not fit an RSA key", alg)
		}
		if rsa.VerifyPKCS1v15(k, h, digest, sig) != nil {
			return errors.New("token signature does not verify")
		}
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		if alg[0] != 'E' || len(sig) != 2*size {
			return fmt.Errorf("token algorithm %s or signature size does not fit an EC key", alg)
		}
		rr, ss := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		if !ecdsa.Verify(k, digest, rr, ss) {
			return errors.New("token signature does not verify")
		}
	}
	return nil
}
