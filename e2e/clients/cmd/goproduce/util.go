package main

import (
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
func tlsConfig(o protocol.Options) (*tls.Config, error) {
	if o.TLSCA == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(o.TLSCA)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("--tls-ca: no PEM certificate")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if o.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
