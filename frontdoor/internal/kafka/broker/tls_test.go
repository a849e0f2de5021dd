package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// selfSigned returns a server config and a client config trusting it.
func selfSigned(t *testing.T) (*tls.Config, *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ferry-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12},
		&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// TestTLSWithSASL produces over SASL_SSL.
func TestTLSWithSASL(t *testing.T) {
	server, client := selfSigned(t)
	h := newHarness(t, harnessOpts{sasl: testUsers(t), cfg: func(c *kafka.Config) { c.TLS = server }})
	cl := newClient(t, h.addr, kgo.DialTLSConfig(client), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 3, Value: []byte("over tls")}).FirstErr(); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	if log := h.ap.Log(100, 3); len(log) != 1 || log[0] != "over tls" {
		t.Fatalf("log %q", log)
	}
	// A plaintext client cannot talk to the TLS listener.
	c := dialRaw(t, h.addr)
	c.send(mdReq(12))
	c.expectClosed()
}
