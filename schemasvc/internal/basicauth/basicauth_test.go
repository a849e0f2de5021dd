package basicauth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// scramLine builds a SCRAM-SHA-256 credential line as RFC 5802 defines
// the stored key.
func scramLine(t *testing.T, user, password string) string {
	t.Helper()
	salt := []byte("0123456789abcdef")
	salted, err := pbkdf2.Key(sha256.New, password, salt, 4096, 32)
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, salted)
	m.Write([]byte("Client Key"))
	stored := sha256.Sum256(m.Sum(nil))
	b := base64.StdEncoding.EncodeToString
	return user + ":SCRAM-SHA-256:4096:" + b(salt) + ":" + b(stored[:]) + ":" + b(stored[:]) + "\n"
}

func TestPlainAndSCRAMUsers(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("pw-a"), bcrypt.MinCost)
	users := write(t, "users", "# comment\nalice:"+string(hash)+":orders,payments\n")
	scram := write(t, "scram", scramLine(t, "bob", "pw-b"))
	u, err := Load(users, scram)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user, pw string
		ok       bool
	}{
		{"alice", "pw-a", true}, {"alice", "pw-b", false}, {"bob", "pw-b", true}, {"bob", "pw-a", false},
		{"carol", "pw-a", false}, {"alice", "", false},
	} {
		if got := u.Authenticate(tc.user, tc.pw); got != tc.ok {
			t.Errorf("%s/%s: %v, want %v", tc.user, tc.pw, got, tc.ok)
		}
	}
	if _, err := Load(write(t, "bad", "alice:not-a-hash\n"), ""); err == nil {
		t.Error("a users file without a bcrypt hash loaded")
	}
	if _, err := Load("", write(t, "bad", "bob:SCRAM-MD5:1:a:b:c\n")); err == nil {
		t.Error("a SCRAM file with an unknown mechanism loaded")
	}
}
