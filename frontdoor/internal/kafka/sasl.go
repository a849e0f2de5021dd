package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL: SaslHandshake v0-v1 and SaslAuthenticate v0-v2, mechanisms PLAIN,
// SCRAM-SHA-256/512 and OAUTHBEARER, with re-authentication (KIP-368). Handshake v0 is followed by a bare token frame
// (before KIP-152); some clients still in use (Sarama up to 1.40,
// kafka-python 2.0) send it, for PLAIN only here.
const (
	SASLHandshakeMin    = 0
	SASLHandshakeMax    = 1
	SASLAuthenticateMin = 0
	SASLAuthenticateMax = 2
	mechanismPlain      = "PLAIN"
	// mechanismOAuthBearer is SASL/OAUTHBEARER (KIP-255).
	mechanismOAuthBearer = "OAUTHBEARER"
)

// PlainAuthenticator checks a SASL/PLAIN message and returns the user and
// a topic filter (nil: every topic).
type PlainAuthenticator interface {
	Authenticate(msg []byte) (user string, allow func(topic string) bool, err error)
}

// ScramAuthenticator starts SCRAM exchanges (saslscram).
type ScramAuthenticator interface {
	Mechanisms() []string
	Start(mechanism string) (ScramExchange, error)
}

// ScramExchange is one connection's SCRAM conversation: First answers the
// client-first message, Final the client-final one with the user.
type ScramExchange interface {
	First(msg []byte) ([]byte, error)
	Final(msg []byte) (serverFinal []byte, user string, err error)
}

// TokenAuthenticator checks an OAUTHBEARER initial response (RFC 7628) and
// returns the user and when its token expires.
type TokenAuthenticator interface {
	Authenticate(msg []byte) (user string, expires time.Time, err error)
}

type saslHandler struct {
	auth  PlainAuthenticator // nil: no PLAIN
	scram ScramAuthenticator // nil: no SCRAM
	token TokenAuthenticator // nil: no OAUTHBEARER
}

// mechanisms lists what the handshake offers.
func (h *saslHandler) mechanisms() []string {
	var out []string
	if h.auth != nil {
		out = append(out, mechanismPlain)
	}
	if h.scram != nil {
		out = append(out, h.scram.Mechanisms()...)
	}
	if h.token != nil {
		out = append(out, mechanismOAuthBearer)
	}
	return out
}

func (h *saslHandler) apis() []API {
	return []API{
		{Key: SASLHandshakeKey, MinVersion: SASLHandshakeMin, MaxVersion: SASLHandshakeMax, PreAuth: true, Serve: h.handshake},
		{Key: SASLAuthenticateKey, MinVersion: SASLAuthenticateMin, MaxVersion: SASLAuthenticateMax, PreAuth: true, Serve: h.authenticate},
	}
}

func (h *saslHandler) handshake(_ context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = h.mechanisms()
	switch {
	case s.pending:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return Reply{Resp: resp, CloseAfter: true}, nil
	case s.authenticated && (s.mechanism == "" || r.Mechanism != s.mechanism || r.Version == 0):
		// Re-authentication (KIP-368) keeps the mechanism of the first
		// authentication and needs SaslAuthenticate.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		s.Log.Info("sasl re-authentication refused", "mechanism", r.Mechanism, "authenticated_with", s.mechanism)
		return Reply{Resp: resp, CloseAfter: true}, nil
	case !slices.Contains(resp.SupportedMechanisms, r.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		s.Log.Info("sasl mechanism refused", "mechanism", r.Mechanism)
		return Ready(resp), nil
	case r.Version == 0 && r.Mechanism != mechanismPlain:
		// A bare-token conversation is PLAIN's: clients that speak SCRAM
		// or OAUTHBEARER all send SaslAuthenticate (handshake v1).
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		s.Log.Info("sasl mechanism refused after handshake v0: it needs SaslAuthenticate", "mechanism", r.Mechanism)
		return Ready(resp), nil
	}
	s.mechanism, s.pending = r.Mechanism, true
	if r.Version == 0 {
		s.rawSASLNext = true
	}
	return Ready(resp), nil
}

func (h *saslHandler) authenticate(_ context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.SASLAuthenticateRequest)
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if !s.pending {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate without a preceding SaslHandshake"
		resp.ErrorMessage = &msg
		return Reply{Resp: resp, CloseAfter: true}, nil
	}
	resp.SASLAuthBytes = []byte{}
	var (
		id   identity
		done = true
		err  error
	)
	switch s.mechanism {
	case mechanismPlain:
		id.user, id.allow, err = h.auth.Authenticate(r.SASLAuthBytes)
	case mechanismOAuthBearer:
		id.user, id.expires, err = h.token.Authenticate(r.SASLAuthBytes)
	default:
		resp.SASLAuthBytes, id.user, done, err = s.scramStep(h.scram, r.SASLAuthBytes)
	}
	if err == nil && done {
		err = s.finishLogin(id)
	}
	if err != nil {
		s.Log.Warn("sasl authentication failed", "mechanism", s.mechanism, "err", err)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "authentication failed: " + err.Error()
		resp.ErrorMessage = &msg
		resp.SASLAuthBytes = []byte{}
		// Kafka closes after a failed authentication, once the client
		// has the reason.
		return Reply{Resp: resp, CloseAfter: true}, nil
	}
	if done && !s.expires.IsZero() {
		// KIP-368: the client re-authenticates before this runs out.
		resp.SessionLifetimeMillis = max(time.Until(s.expires).Milliseconds(), 1)
	}
	return Ready(resp), nil
}

// identity is what a finished SASL exchange established.
type identity struct {
	user    string
	allow   func(topic string) bool // nil: every topic
	expires time.Time               // zero: the session never expires
}

// finishLogin makes the session authenticated as id. A re-authentication
// must name the same user, as in Kafka.
func (s *Session) finishLogin(id identity) error {
	if s.authenticated && id.user != s.User {
		return fmt.Errorf("re-authentication as %q on a connection of %q", id.user, s.User)
	}
	again := s.authenticated
	s.authenticated, s.pending, s.allowTopic, s.expires = true, false, id.allow, id.expires
	if !again {
		s.User = id.user
		s.Log = s.Log.With("user", id.user)
	}
	s.Log.Info("sasl authenticated", "mechanism", s.mechanism, "reauthentication", again, "expires", id.expires)
	return nil
}

// expired reports whether the session's credential has run out; the
// connection serves nothing but re-authentication then.
func (s *Session) expired(now time.Time) bool {
	return !s.expires.IsZero() && now.After(s.expires)
}

// scramStep runs one step of the session's SCRAM conversation: the first
// message starts it, the second ends it (done) with the user.
func (s *Session) scramStep(auth ScramAuthenticator, msg []byte) (out []byte, user string, done bool, err error) {
	if s.scram == nil {
		ex, err := auth.Start(s.mechanism)
		if err != nil {
			return nil, "", false, err
		}
		if out, err = ex.First(msg); err != nil {
			return nil, "", false, err
		}
		s.scram = ex
		return out, "", false, nil
	}
	out, user, err = s.scram.Final(msg)
	s.scram = nil
	return out, user, err == nil, err
}

var errNoSASL = errors.New("SASL is not enabled")

// authenticateRaw handles the token frame after a v0 handshake: success
// is an empty token frame, failure closes the connection without one.
func authenticateRaw(srv *Server, s *Session, token []byte) ([]byte, error) {
	if srv.plain == nil {
		return nil, errNoSASL
	}
	var id identity
	var err error
	if id.user, id.allow, err = srv.plain.Authenticate(token); err == nil {
		err = s.finishLogin(id)
	}
	if err != nil {
		s.Log.Warn("sasl authentication failed", "mechanism", mechanismPlain, "err", err)
		return nil, fmt.Errorf("handshake v0 token: %w", err)
	}
	return []byte{}, nil
}
