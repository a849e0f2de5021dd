package certprincipal

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"testing"
)

func TestName(t *testing.T) {
	r, err := Parse(`RULE:^CN=([^,]+),OU=clients,.*$/$1/L, RULE:^CN=svc\/([a-z]+)$/service-$1/U,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for subject, want := range map[string]string{
		"CN=Alice,OU=clients,O=Acme": "alice",
		"CN=svc/etl":                 "SERVICE-ETL",
		"CN=bob,O=Acme":              "CN=bob,O=Acme", // DEFAULT
	} {
		if got, err := r.Name(subject); err != nil || got != want {
			t.Errorf("Name(%q) = %q, %v; want %q", subject, got, err, want)
		}
	}
	strict, err := Parse("RULE:^CN=([^,]+)$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	// Patterns match the whole subject, as Kafka's do.
	if _, err := strict.Name("CN=x,O=y"); !errors.Is(err, ErrNoRule) {
		t.Errorf("partial match accepted: %v", err)
	}
	if got, err := strict.Name("CN=x"); err != nil || got != "x" {
		t.Errorf("Name = %q, %v", got, err)
	}
}

func TestDefaultAndErrors(t *testing.T) {
	r, err := Parse("")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Name("CN=a,O=b"); got != "CN=a,O=b" {
		t.Errorf("empty rules: %q", got)
	}
	for _, bad := range []string{"RULE:(/x/", "RULE:a/b", "SOMETHING", "RULE:a/b/X", "DEFAULT junk"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	empty, err := Parse("RULE:^CN=([^,]*)$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := empty.Name("CN="); err == nil {
		t.Error("empty name accepted")
	}
}

func TestSubjectIsRFC2253(t *testing.T) {
	c := &x509.Certificate{Subject: pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"clients"}, Organization: []string{"Acme"}, Country: []string{"DE"}}}
	if got := Subject(c); got != "CN=alice,OU=clients,O=Acme,C=DE" {
		t.Errorf("Subject = %q", got)
	}
}
