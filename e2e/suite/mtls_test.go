package suite

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/e2e/clients"
)

// TestMutualTLSClients runs a frontdoor that requires client certificates
// (FERRY_KAFKA_TLS_CLIENT_CA) and names users from them; its ACL file lets only
// the certificate's user (alice) write. Java kafka-clients, librdkafka (kcat) and
// franz-go produce with alice's certificate and every row is read back; a
// certificate from another CA, and no certificate, are refused before any
// request is served.
func TestMutualTLSClients(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "mtls")
	dir := t.TempDir()
	ca, other := newPEMCA(t, dir, "ferry-e2e-ca"), newPEMCA(t, dir, "someone-else")
	serverCert, serverKey := ca.issue(t, dir, "frontdoor", pkix.Name{CommonName: "frontdoor"}, true)
	aliceCert, aliceKey := ca.issue(t, dir, "alice", pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"clients"}}, false)
	malloryCert, malloryKey := other.issue(t, dir, "mallory", pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"clients"}}, false)
	aclFile := filepath.Join(dir, "acl")
	if err := os.WriteFile(aclFile, []byte("allow User:alice ALL topic:"+db+".*\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kafka := startSecuredFrontdoor(t, e, "mtls", map[string]string{
		"FERRY_KAFKA_TLS_CERT": serverCert, "FERRY_KAFKA_TLS_KEY": serverKey,
		"FERRY_KAFKA_TLS_CLIENT_CA":       ca.certFile,
		"FERRY_KAFKA_TLS_PRINCIPAL_RULES": "RULE:^CN=([^,]+),OU=clients$/$1/,DEFAULT",
		"FERRY_ACL_FILE":                  aclFile,
	})

	for _, c := range selectedClients(t) {
		switch c.Name {
		case "java", "kcat", "franz", "kafka-python":
		default:
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			produceWithClient(t, f, db, c, clientRun{kafka: kafka, records: 12, table: "mtls_" + sanitize(c.Name),
				tlsCA: ca.certFile, tlsCert: aliceCert, tlsKey: aliceKey})
		})
	}

	// Refused certificates: not even Metadata is served, with franz-go and with the Java client.
	for name, cert := range map[string][2]string{"untrusted certificate": {malloryCert, malloryKey}, "no certificate": {}} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cl := newKgo(t, kafka, kgo.DialTLSConfig(clientTLS(t, ca.certFile, cert[0], cert[1])), kgo.RequestRetries(0))
			if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err == nil {
				t.Fatal("franz-go: metadata served")
			}
		})
	}
	t.Run("java/untrusted certificate", func(t *testing.T) {
		java, err := clients.ByName("java")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		res, err := java.Produce(ctx, clients.Options{Bootstrap: kafka, Topic: db + ".mtls_java", Acks: "all",
			TLSCA: ca.certFile, TLSCert: malloryCert, TLSKey: malloryKey, Timeout: 20 * time.Second},
			[]clients.Record{{Value: `{"id": 1}`}})
		if err == nil && res.Err() == nil {
			t.Fatal("java: a record was acknowledged with an untrusted certificate")
		}
	})
}

// clientTLS is a TLS client configuration trusting caFile, with a client
// certificate when certFile is set.
func clientTLS(t *testing.T, caFile, certFile, keyFile string) *tls.Config {
	t.Helper()
	b, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// pemCA is a test certificate authority whose certificate is in certFile.
type pemCA struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	certFile string
}

func newPEMCA(t *testing.T, dir, name string) *pemCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &pemCA{cert: cert, key: key, certFile: filepath.Join(dir, name+"-ca.pem")}
	writePEM(t, ca.certFile, "CERTIFICATE", der)
	return ca
}

// issue writes a certificate signed by ca and its PKCS#8 key (the form every
// client reads) and returns both paths.
func (ca *pemCA) issue(t *testing.T, dir, name string, subject pkix.Name, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", pkcs8)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
