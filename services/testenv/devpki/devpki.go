// Package devpki issues the certificates of Ferry's internal mutual TLS for
// local stacks and tests: a throw-away CA and one certificate per service,
// written as PEM files in a directory. It is not a production PKI: keys are
// unencrypted files and nothing is revoked.
//
// Every service certificate serves both ends of a connection (server and
// client auth) and carries the service's name as a DNS SAN, which is the
// name Ferry's clients verify (services/runtime), so it matches however
// the service is reached: by IP after DNS expansion, through localhost or
// a Compose service name.
package devpki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File names inside a PKI directory: ca.pem (and ca-key.pem) for the CA,
// <name>.pem and <name>-key.pem for each issued certificate.
const (
	CAFile    = "ca.pem"
	CAKeyFile = "ca-key.pem"
)

// CertFile and KeyFile name the files of the certificate issued to name.
func CertFile(dir, name string) string { return filepath.Join(dir, name+".pem") }
func KeyFile(dir, name string) string  { return filepath.Join(dir, name+"-key.pem") }

// Validity of issued certificates: long enough for any local stack, short
// enough that a leaked dev key does not live for years.
const defaultValidity = 90 * 24 * time.Hour

// CA is a certificate authority that can issue service certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	PEM  []byte
}

// NewCA creates a self-signed CA named cn.
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Ferry development"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(defaultValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: pemBlock("CERTIFICATE", der)}, nil
}

// Leaf is an issued certificate and its key, PEM encoded.
type Leaf struct {
	CertPEM, KeyPEM []byte
}

// TLSCertificate parses the pair for crypto/tls.
func (l Leaf) TLSCertificate() (tls.Certificate, error) { return tls.X509KeyPair(l.CertPEM, l.KeyPEM) }

// Issue signs a certificate for the service name, valid for server and
// client authentication. Its SANs are name and every entry of hosts (an IP
// literal becomes an IP SAN, anything else a DNS SAN).
func (ca *CA) Issue(name string, hosts ...string) (Leaf, error) {
	return ca.IssueValid(name, time.Now().Add(-time.Hour), time.Now().Add(defaultValidity), hosts...)
}

// IssueValid is Issue with an explicit validity window (tests use it for
// expired certificates).
func (ca *CA) IssueValid(name string, notBefore, notAfter time.Time, hosts ...string) (Leaf, error) {
	if name == "" {
		return Leaf{}, errors.New("devpki: empty certificate name")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Leaf{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"Ferry development"}},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{name},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" && h != name {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return Leaf{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Leaf{}, err
	}
	return Leaf{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", keyDER)}, nil
}

// WriteCA writes ca.pem and ca-key.pem into dir (created if missing).
func (ca *CA) WriteCA(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, CAFile), ca.PEM, 0o644); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, CAKeyFile), pemBlock("PRIVATE KEY", keyDER), 0o600)
}

// Write writes the leaf as <name>.pem and <name>-key.pem into dir. Each file
// is replaced by a rename, so a service reloading its certificate never
// reads a half-written one.
func (l Leaf) Write(dir, name string) error {
	if err := writeFile(KeyFile(dir, name), l.KeyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(CertFile(dir, name), l.CertPEM, 0o644)
}

// LoadCA reads a CA written by WriteCA, to issue more certificates from it.
func LoadCA(dir string) (*CA, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("devpki: %s is not a CA certificate", filepath.Join(dir, CAFile))
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("devpki: CA key cannot sign")
	}
	return &CA{Cert: cert, Key: signer, PEM: pemBlock("CERTIFICATE", cert.Raw)}, nil
}

// Generate creates a CA in dir and a certificate for each name, with hosts
// as extra SANs on all of them. It is what ferrycerts and the local stack run.
func Generate(dir string, names []string, hosts ...string) error {
	ca, err := NewCA("Ferry internal CA")
	if err != nil {
		return err
	}
	if err := ca.WriteCA(dir); err != nil {
		return err
	}
	for _, n := range names {
		leaf, err := ca.Issue(n, hosts...)
		if err != nil {
			return fmt.Errorf("devpki: issue %s: %w", n, err)
		}
		if err := leaf.Write(dir, n); err != nil {
			return err
		}
	}
	return nil
}

// ClientTLS is a client configuration for test code and tools that call a
// Ferry service directly: it presents the certificate issued to name from
// dir and verifies that the server's certificate comes from dir's CA and
// names serverName (the service's name, e.g. "appendsvc").
func ClientTLS(dir, name, serverName string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(CertFile(dir, name), KeyFile(dir, name))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("devpki: no certificate in %s", filepath.Join(dir, CAFile))
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic("devpki: crypto/rand failed: " + err.Error())
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// writeFile replaces path atomically (temporary file and rename).
func writeFile(path string, data []byte, perm os.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+strings.TrimSuffix(base, ".pem")+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
