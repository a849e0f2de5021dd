package saslscram

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
)

// ErrBadCredentials is the one answer to an unknown user or a wrong
// password, so that clients cannot probe for user names.
var ErrBadCredentials = errors.New("invalid username or password")

// ErrMalformed is returned for a SCRAM message that does not parse.
var ErrMalformed = errors.New("malformed SCRAM message")

// Server is one SCRAM exchange on a connection: First answers the
// client-first message, Final the client-final one.
type Server struct {
	mechanism string
	lookup    func(user, mechanism string) (Credential, bool)
	// fakeKey derives the salt of users that do not exist.
	fakeKey []byte
	// newNonce makes the server's part of the nonce (tests fix it).
	newNonce func() (string, error)

	user, gs2, clientFirstBare, serverFirst, nonce string
	cred                                           Credential
	known                                          bool
	done                                           bool
}

// NewServer starts an exchange for mechanism against the credentials that
// lookup finds. fakeKey (secret, per process) makes the salt sent for an
// unknown user stable, so the answer for a missing user looks like the one
// for a present user.
func NewServer(mechanism string, lookup func(user, mechanism string) (Credential, bool), fakeKey []byte) (*Server, error) {
	if _, err := hashFor(mechanism); err != nil {
		return nil, err
	}
	return &Server{mechanism: mechanism, lookup: lookup, fakeKey: fakeKey, newNonce: randomNonce}, nil
}

func randomNonce() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return b64.EncodeToString(b), nil
}

// First answers client-first-message ("n,,n=user,r=nonce").
func (s *Server) First(msg []byte) ([]byte, error) {
	if s.serverFirst != "" {
		return nil, fmt.Errorf("%w: a second client-first message", ErrMalformed)
	}
	text := string(msg)
	// gs2-header: channel binding flag, optional authzid.
	parts := strings.SplitN(text, ",", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: no gs2 header", ErrMalformed)
	}
	switch {
	case parts[0] == "n" || parts[0] == "y":
	case strings.HasPrefix(parts[0], "p="):
		return nil, fmt.Errorf("%w: channel binding is not supported", ErrMalformed)
	default:
		return nil, fmt.Errorf("%w: bad channel binding flag %q", ErrMalformed, parts[0])
	}
	authzid := ""
	if parts[1] != "" {
		a, ok := strings.CutPrefix(parts[1], "a=")
		if !ok {
			return nil, fmt.Errorf("%w: bad authzid %q", ErrMalformed, parts[1])
		}
		authzid = a
	}
	s.gs2 = parts[0] + "," + parts[1] + ","
	s.clientFirstBare = parts[2]
	attrs, err := attributes(parts[2])
	if err != nil {
		return nil, err
	}
	if _, ok := attrs["m"]; ok {
		return nil, fmt.Errorf("%w: mandatory extensions are not supported", ErrMalformed)
	}
	// Kafka's delegation-token extension (tokenauth=true) has no tokens to
	// check here.
	if attrs["tokenauth"] == "true" {
		return nil, errors.New("delegation tokens are not supported")
	}
	user, err := saslName(attrs["n"])
	if err != nil || user == "" {
		return nil, fmt.Errorf("%w: bad username", ErrMalformed)
	}
	if authzid != "" {
		if a, err := saslName(authzid); err != nil || a != user {
			return nil, fmt.Errorf("user %q may not act as %q", user, authzid)
		}
	}
	cnonce := attrs["r"]
	if cnonce == "" || strings.ContainsAny(cnonce, ",") {
		return nil, fmt.Errorf("%w: bad client nonce", ErrMalformed)
	}
	s.user = user
	s.cred, s.known = s.lookup(user, s.mechanism)
	if !s.known {
		// Same shape of answer as for a real user; the final message fails.
		s.cred = s.fakeCredential(user)
	}
	snonce, err := s.newNonce()
	if err != nil {
		return nil, err
	}
	s.nonce = cnonce + snonce
	s.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, b64.EncodeToString(s.cred.Salt), s.cred.Iterations)
	return []byte(s.serverFirst), nil
}

// Final checks client-final-message ("c=..,r=..,p=..") and returns the
// server-final message and the authenticated user.
func (s *Server) Final(msg []byte) ([]byte, string, error) {
	if s.serverFirst == "" || s.done {
		return nil, "", fmt.Errorf("%w: client-final message out of order", ErrMalformed)
	}
	s.done = true
	text := string(msg)
	i := strings.LastIndex(text, ",p=")
	if i < 0 {
		return nil, "", fmt.Errorf("%w: no proof", ErrMalformed)
	}
	withoutProof := text[:i]
	attrs, err := attributes(text)
	if err != nil {
		return nil, "", err
	}
	if attrs["c"] != b64.EncodeToString([]byte(s.gs2)) {
		return nil, "", fmt.Errorf("%w: channel binding does not match the gs2 header", ErrMalformed)
	}
	// Kafka accepts a nonce that ends with the one it sent, because
	// librdkafka puts its own client nonce in front of the server's whole
	// nonce; the proof still covers the message as sent.
	if !strings.HasSuffix(attrs["r"], s.nonce) {
		return nil, "", fmt.Errorf("%w: nonce does not match", ErrMalformed)
	}
	proof, err := b64.DecodeString(attrs["p"])
	h, _ := hashFor(s.mechanism)
	if err != nil || len(proof) != h().Size() {
		return nil, "", fmt.Errorf("%w: bad proof", ErrMalformed)
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	clientSig := mac(h, s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, clientSig)
	if !hmac.Equal(digest(h, clientKey), s.cred.StoredKey) || !s.known {
		return nil, "", ErrBadCredentials
	}
	serverSig := mac(h, s.cred.ServerKey, authMessage)
	return []byte("v=" + b64.EncodeToString(serverSig)), s.user, nil
}

// fakeCredential is a stable credential for a user that does not exist.
func (s *Server) fakeCredential(user string) Credential {
	h, _ := hashFor(s.mechanism)
	salt := mac(h, s.fakeKey, s.mechanism+"\x00"+user)[:24]
	key := mac(h, s.fakeKey, "key\x00"+user)
	return Credential{Mechanism: s.mechanism, Iterations: MinIterations, Salt: salt, StoredKey: key, ServerKey: key}
}

// attributes splits "a=x,b=y" (values may contain '=').
func attributes(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: attribute %q", ErrMalformed, kv)
		}
		out[k] = v
	}
	return out, nil
}

// saslName decodes a SCRAM user name: "=2C" is ',' and "=3D" is '='.
func saslName(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: bad escape in name", ErrMalformed)
		}
		i += 2
	}
	return b.String(), nil
}
