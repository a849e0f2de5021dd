package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL: SaslHandshake v0-v1 and SaslAuthenticate v0-v2, mechanism PLAIN.
// Handshake v0 is followed by a bare token frame (before KIP-152); some
// clients still in use (Sarama up to 1.40, kafka-python 2.0) send it.
const (
	saslHandshakeMin    = 0
	saslHandshakeMax    = 1
	saslAuthenticateMin = 0
	saslAuthenticateMax = 2
	mechanismPlain      = "PLAIN"
)

// PlainAuthenticator checks a SASL/PLAIN message and returns the user and
// a topic filter (nil: every topic).
type PlainAuthenticator interface {
	Authenticate(msg []byte) (user string, allow func(topic string) bool, err error)
}

type saslHandler struct {
	auth PlainAuthenticator
}

func (h *saslHandler) apis() []API {
	return []API{
		{Key: saslHandshakeKey, MinVersion: saslHandshakeMin, MaxVersion: saslHandshakeMax, PreAuth: true, Serve: h.handshake},
		{Key: saslAuthenticateKey, MinVersion: saslAuthenticateMin, MaxVersion: saslAuthenticateMax, PreAuth: true, Serve: h.authenticate},
	}
}

func (h *saslHandler) handshake(_ context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = []string{mechanismPlain}
	switch {
	case s.authenticated || s.mechanism != "":
		// Re-authentication (KIP-368) is not offered: session lifetime 0.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return Reply{Resp: resp, CloseAfter: true}, nil
	case r.Mechanism != mechanismPlain:
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		s.Log.Info("sasl mechanism refused", "mechanism", r.Mechanism)
		return ready(resp), nil
	}
	s.mechanism = r.Mechanism
	if r.Version == 0 {
		s.rawSASLNext = true
	}
	return ready(resp), nil
}

func (h *saslHandler) authenticate(_ context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.SASLAuthenticateRequest)
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if s.mechanism == "" || s.authenticated {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate without a preceding SaslHandshake"
		resp.ErrorMessage = &msg
		return Reply{Resp: resp, CloseAfter: true}, nil
	}
	if err := s.login(h.auth, r.SASLAuthBytes); err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "authentication failed: " + err.Error()
		resp.ErrorMessage = &msg
		// Kafka closes after a failed authentication, once the client
		// has the reason.
		return Reply{Resp: resp, CloseAfter: true}, nil
	}
	resp.SASLAuthBytes = []byte{}
	return ready(resp), nil
}

// login applies a PLAIN message to the session.
func (s *Session) login(auth PlainAuthenticator, msg []byte) error {
	user, allow, err := auth.Authenticate(msg)
	if err != nil {
		s.Log.Warn("sasl authentication failed", "err", err)
		return err
	}
	s.authenticated, s.User, s.allowTopic = true, user, allow
	s.Log = s.Log.With("user", user)
	s.Log.Info("sasl authenticated", "mechanism", s.mechanism)
	return nil
}

var errNoSASL = errors.New("SASL is not enabled")

// authenticateRaw handles the token frame after a v0 handshake: success
// is an empty token frame, failure closes the connection without one.
func authenticateRaw(srv *Server, s *Session, token []byte) ([]byte, error) {
	if srv.plain == nil {
		return nil, errNoSASL
	}
	if err := s.login(srv.plain, token); err != nil {
		return nil, fmt.Errorf("handshake v0 token: %w", err)
	}
	return []byte{}, nil
}
