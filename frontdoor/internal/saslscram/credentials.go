// Package saslscram authenticates Kafka clients with SASL/SCRAM-SHA-256 and
// SCRAM-SHA-512 (RFC 5802, RFC 7677; Kafka's KIP-84) against a credentials
// file of salted keys, never passwords.
//
// File format, one credential per line ('#' starts a comment):
//
//	user:SCRAM-SHA-256:iterations:salt:stored-key:server-key
//
// with salt and keys in standard base64. A user may have a line for each
// mechanism. Lines come from `frontdoor scram-users add`.
package saslscram

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"sort"
	"strconv"
	"strings"
)

// The mechanisms, as Kafka names them in SaslHandshake.
const (
	SHA256 = "SCRAM-SHA-256"
	SHA512 = "SCRAM-SHA-512"
)

// MinIterations is Kafka's floor for SCRAM iteration counts.
const MinIterations = 4096

// Mechanisms lists the supported mechanisms.
var Mechanisms = []string{SHA256, SHA512}

func hashFor(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case SHA256:
		return sha256.New, nil
	case SHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("unknown SCRAM mechanism %q (want %s or %s)", mechanism, SHA256, SHA512)
}

// Credential is what the server keeps of a password (RFC 5802 section 3).
type Credential struct {
	Mechanism  string
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// NewCredential salts and derives a credential for password.
func NewCredential(mechanism, password string, iterations int) (Credential, error) {
	salt := make([]byte, 24)
	if _, err := rand.Read(salt); err != nil {
		return Credential{}, err
	}
	return deriveCredential(mechanism, password, salt, iterations)
}

func deriveCredential(mechanism, password string, salt []byte, iterations int) (Credential, error) {
	h, err := hashFor(mechanism)
	if err != nil {
		return Credential{}, err
	}
	if iterations < MinIterations {
		return Credential{}, fmt.Errorf("iterations %d below %d", iterations, MinIterations)
	}
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return Credential{}, err
	}
	clientKey := mac(h, salted, "Client Key")
	return Credential{
		Mechanism: mechanism, Iterations: iterations, Salt: salt,
		StoredKey: digest(h, clientKey), ServerKey: mac(h, salted, "Server Key"),
	}, nil
}

func mac(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func digest(h func() hash.Hash, b []byte) []byte {
	d := h()
	d.Write(b)
	return d.Sum(nil)
}

var b64 = base64.StdEncoding

// Line is the credentials-file line of user's credential.
func (c Credential) Line(user string) string {
	return strings.Join([]string{user, c.Mechanism, strconv.Itoa(c.Iterations),
		b64.EncodeToString(c.Salt), b64.EncodeToString(c.StoredKey), b64.EncodeToString(c.ServerKey)}, ":")
}

// Store holds the credentials of a file, by user and mechanism.
type Store struct {
	byUser map[string]map[string]Credential
}

// Lookup returns user's credential for mechanism.
func (s *Store) Lookup(user, mechanism string) (Credential, bool) {
	c, ok := s.byUser[user][mechanism]
	return c, ok
}

// Len is the number of users.
func (s *Store) Len() int { return len(s.byUser) }

// Users lists the users, sorted.
func (s *Store) Users() []string {
	out := make([]string, 0, len(s.byUser))
	for u := range s.byUser {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// Set adds or replaces user's credential for its mechanism.
func (s *Store) Set(user string, c Credential) {
	if s.byUser == nil {
		s.byUser = map[string]map[string]Credential{}
	}
	if s.byUser[user] == nil {
		s.byUser[user] = map[string]Credential{}
	}
	s.byUser[user][c.Mechanism] = c
}

// Remove drops every credential of user and reports whether there was one.
func (s *Store) Remove(user string) bool {
	_, ok := s.byUser[user]
	delete(s.byUser, user)
	return ok
}

// Bytes is the store in the file format, sorted by user and mechanism.
func (s *Store) Bytes() []byte {
	var b bytes.Buffer
	b.WriteString("# SCRAM credentials (frontdoor scram-users); user:mechanism:iterations:salt:stored-key:server-key\n")
	for _, u := range s.Users() {
		for _, m := range Mechanisms {
			if c, ok := s.byUser[u][m]; ok {
				b.WriteString(c.Line(u) + "\n")
			}
		}
	}
	return b.Bytes()
}

// Parse reads the file format; errors name the line. An empty file is a
// valid store without users.
func Parse(data []byte) (*Store, error) {
	s := &Store{byUser: map[string]map[string]Credential{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		user, c, err := parseLine(text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if _, dup := s.byUser[user][c.Mechanism]; dup {
			return nil, fmt.Errorf("line %d: user %q has a second %s credential", line, user, c.Mechanism)
		}
		s.Set(user, c)
	}
	return s, sc.Err()
}

func parseLine(text string) (string, Credential, error) {
	f := strings.Split(text, ":")
	if len(f) != 6 || f[0] == "" {
		return "", Credential{}, errors.New("want user:mechanism:iterations:salt:stored-key:server-key")
	}
	h, err := hashFor(f[1])
	if err != nil {
		return "", Credential{}, err
	}
	c := Credential{Mechanism: f[1]}
	if c.Iterations, err = strconv.Atoi(f[2]); err != nil || c.Iterations < MinIterations {
		return "", Credential{}, fmt.Errorf("iterations %q: want a number of at least %d", f[2], MinIterations)
	}
	for i, dst := range []*[]byte{&c.Salt, &c.StoredKey, &c.ServerKey} {
		if *dst, err = b64.DecodeString(f[3+i]); err != nil {
			return "", Credential{}, fmt.Errorf("field %d: %w", 4+i, err)
		}
	}
	if len(c.Salt) == 0 || len(c.StoredKey) != h().Size() || len(c.ServerKey) != h().Size() {
		return "", Credential{}, fmt.Errorf("salt or key sizes do not fit %s", c.Mechanism)
	}
	return f[0], c, nil
}
