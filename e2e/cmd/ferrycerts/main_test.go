package main

import (
	"bytes"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/ferrygw/ferry/services/testenv/devpki"
)

// TestIssueAndRenew: the issued certificates verify against the CA as the
// service names they carry; -renew keeps the CA and replaces the leaf; a
// second run without -renew does not overwrite the CA.
func TestIssueAndRenew(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run([]string{"-dir", dir}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	ca, err := devpki.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	serial := map[string]string{}
	for _, name := range defaultNames {
		cfg, err := devpki.ClientTLS(dir, name, name)
		if err != nil {
			t.Fatal(err)
		}
		leaf := cfg.Certificates[0].Leaf
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		serial[name] = leaf.SerialNumber.String()
	}

	if code := run([]string{"-dir", dir}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "-renew") {
		t.Errorf("second run without -renew: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"-dir", dir, "-renew", "-names", "appendsvc"}, &out, &errOut); code != 0 {
		t.Fatalf("renew: exit %d: %s", code, errOut.String())
	}
	again, err := devpki.LoadCA(dir)
	if err != nil || !again.Cert.Equal(ca.Cert) {
		t.Fatalf("renew replaced the CA (%v)", err)
	}
	cfg, err := devpki.ClientTLS(dir, "appendsvc", "appendsvc")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Certificates[0].Leaf.SerialNumber.String() == serial["appendsvc"] {
		t.Error("-renew kept the old appendsvc certificate")
	}
	if _, err := cfg.Certificates[0].Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "appendsvc"}); err != nil {
		t.Errorf("renewed certificate: %v", err)
	}
	if code := run([]string{"-names", "x"}, &out, &errOut); code != 2 {
		t.Errorf("missing -dir: exit %d", code)
	}
}
