package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/certprincipal"
)

// testCA is a certificate authority for tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key}
}

// issue signs a leaf certificate for subject: a server one (with the
// loopback address) or a client one.
func (ca *testCA) issue(t *testing.T, subject pkix.Name, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// TestMutualTLS: a client certificate from the trusted CA authenticates its
// connection as the user the mapping rules name, and the ACLs apply to that
// user; a certificate from another CA, or none, gets no request served.
func TestMutualTLS(t *testing.T) {
	ca, other := newTestCA(t, "ferry-test-ca"), newTestCA(t, "someone-else")
	serverCfg := &tls.Config{
		Certificates: []tls.Certificate{ca.issue(t, pkix.Name{CommonName: "frontdoor"}, true)},
		ClientCAs:    ca.pool(), ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}
	rules, err := certprincipal.Parse(`RULE:^CN=([^,]+),OU=clients$/$1/L,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	acls, err := acl.Parse(strings.NewReader("allow User:alice WRITE topic:orders\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := newMeters(t)
	h := newHarness(t, harnessOpts{
		cfg: func(c *kafka.Config) { c.TLS = serverCfg }, authz: acls, mp: m.mp,
		certName: func(c *x509.Certificate) (string, error) { return rules.Name(certprincipal.Subject(c)) },
	})
	client := func(cert *tls.Certificate) *kgo.Client {
		cfg := &tls.Config{RootCAs: ca.pool(), MinVersion: tls.VersionTLS12}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		return newClient(t, h.addr, kgo.DialTLSConfig(cfg), kgo.RecordDeliveryTimeout(3*time.Second), kgo.RequestRetries(0))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	alice := ca.issue(t, pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"clients"}}, false)
	cl := client(&alice)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("by cert")}).FirstErr(); err != nil {
		t.Fatalf("trusted client certificate: %v", err)
	}
	// The ACLs see User:alice: events is not hers.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("no")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice to events: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	for name, cert := range map[string]*tls.Certificate{
		"untrusted certificate": ptr(other.issue(t, pkix.Name{CommonName: "mallory", OrganizationalUnit: []string{"clients"}}, false)),
		"no certificate":        nil,
	} {
		t.Run(name, func(t *testing.T) {
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
			defer rcancel()
			if _, err := client(cert).Request(rctx, kmsg.NewPtrMetadataRequest()); err == nil {
				t.Fatal("metadata served")
			}
		})
	}
	m.waitValue(2, "ferry.frontdoor.tls.handshake_failures")
	stored := 0
	for b := range int32(4) {
		stored += len(h.ap.Log(100, b))
	}
	for b := range int32(2) {
		stored += len(h.ap.Log(200, b))
	}
	if stored != 1 {
		t.Errorf("%d records stored, want alice's one", stored)
	}
}

func ptr[T any](v T) *T { return &v }
