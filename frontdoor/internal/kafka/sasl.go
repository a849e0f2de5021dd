package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL: SaslHandshake v0-v1 and SaslAuthenticate v0-v2, mechanisms PLAIN
// and SCRAM-SHA-256/512. Handshake v0 is followed by a bare token frame
// (before KIP-152); some clients still in use (Sarama up to 1.40,
// kafka-python 2.0) send it, for PLAIN only here.
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

type saslHandler struct {
	auth  PlainAuthenticator // nil: no PLAIN
	scram ScramAuthenticator // nil: no SCRAM
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
	return out
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
	resp.SupportedMechanisms = h.mechanisms()
	switch {
	case s.authenticated || s.mechanism != "":
		// Re-authentication (KIP-368) is not offered: session lifetime 0.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return Reply{Resp: resp, CloseAfter: true}, nil
	case !slices.Contains(resp.SupportedMechanisms, r.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		s.Log.Info("sasl mechanism refused", "mechanism", r.Mechanism)
		return ready(resp), nil
	case r.Version == 0 && r.Mechanism != mechanismPlain:
		// A bare-token SCRAM conversation takes several frames; clients
		// that speak SCRAM all send SaslAuthenticate (handshake v1).
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		s.Log.Info("sasl mechanism refused after handshake v0: SCRAM needs SaslAuthenticate", "mechanism", r.Mechanism)
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
	var err error
	if s.mechanism == mechanismPlain {
		err = s.login(h.auth, r.SASLAuthBytes)
		resp.SASLAuthBytes = []byte{}
	} else {
		resp.SASLAuthBytes, err = s.scramStep(h.scram, r.SASLAuthBytes)
	}
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "authentication failed: " + err.Error()
		resp.ErrorMessage = &msg
		resp.SASLAuthBytes = []byte{}
		// Kafka closes after a failed authentication, once the client
		// has the reason.
		return Reply{Resp: resp, CloseAfter: true}, nil
	}
	return ready(resp), nil
}

// scramStep runs one step of the session's SCRAM conversation: the first
// message starts it, the second ends it authenticated.
func (s *Session) scramStep(auth ScramAuthenticator, msg []byte) ([]byte, error) {
	if s.scram == nil {
		ex, err := auth.Start(s.mechanism)
		if err == nil {
			var out []byte
			if out, err = ex.First(msg); err == nil {
				s.scram = ex
				return out, nil
			}
		}
		s.Log.Warn("sasl authentication failed", "mechanism", s.mechanism, "err", err)
		return nil, err
	}
	out, user, err := s.scram.Final(msg)
	s.scram = nil
	if err != nil {
		s.Log.Warn("sasl authentication failed", "mechanism", s.mechanism, "err", err)
		return nil, err
	}
	s.authenticated, s.User = true, user
	s.Log = s.Log.With("user", user)
	s.Log.Info("sasl authenticated", "mechanism", s.mechanism)
	return out, nil
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
