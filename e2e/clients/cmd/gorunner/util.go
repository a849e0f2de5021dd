package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// tlsConfig is the TLS set-up the options ask for (nil: plaintext): the CA
// to trust and, for mTLS, the client certificate.
func tlsConfig(sec protocol.Security) (*tls.Config, error) {
	if sec.TLSCA == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(sec.TLSCA)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("--tls-ca: no PEM certificate")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if sec.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(sec.TLSCert, sec.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// bounded runs a constructor that connects synchronously with its own retry budget (sarama's),
// giving up when ctx ends; what the constructor eventually returns is then closed.
func bounded[T any](ctx context.Context, create func() (T, error), closeIt func(T)) (T, error) {
	type made struct {
		v   T
		err error
	}
	mc := make(chan made, 1)
	go func() {
		v, err := create()
		mc <- made{v, err}
	}()
	select {
	case m := <-mc:
		return m.v, m.err
	case <-ctx.Done():
		go func() {
			if m := <-mc; m.err == nil {
				closeIt(m.v)
			}
		}()
		var zero T
		return zero, fmt.Errorf("connecting: %w", ctx.Err())
	}
}
