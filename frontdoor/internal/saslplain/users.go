// Package saslplain checks SASL/PLAIN credentials (RFC 4616) against a
// users file of bcrypt hashes, with an optional topic allow-list per user.
//
// File format, one user per line ('#' starts a comment):
//
//	user:bcrypt-hash[:topic,topic,...]
//
// Without the third field the user may use every topic; "*" in the list
// also means every topic. Hashes come from `ferry-hash-password`.
package saslplain

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// ErrBadCredentials is returned for an unknown user or a wrong password;
// the two are not told apart, so a client cannot probe for user names.
var ErrBadCredentials = errors.New("invalid username or password")

// ErrMalformed is returned for a PLAIN message that does not parse.
var ErrMalformed = errors.New("malformed SASL/PLAIN message")

type user struct {
	hash   []byte
	topics map[string]bool // nil: every topic
}

// Users is a parsed users file.
type Users struct {
	byName map[string]user
}

// dummyHash is compared against for unknown users so that they cost as
// much time as known ones.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("ferry-no-such-user"), bcrypt.MinCost)

// LoadFile reads a users file.
func LoadFile(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sasl users file: %w", err)
	}
	defer f.Close()
	u, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("sasl users file %s: %w", path, err)
	}
	return u, nil
}

// Parse reads the users file format; errors name the line.
func Parse(r io.Reader) (*Users, error) {
	u := &Users{byName: map[string]user{}}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		parts := strings.SplitN(text, ":", 3)
		if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
			return nil, fmt.Errorf("line %d: want user:bcrypt-hash[:topics]", line)
		}
		name, hash := parts[0], []byte(parts[1])
		if _, err := bcrypt.Cost(hash); err != nil {
			return nil, fmt.Errorf("line %d: user %q: not a bcrypt hash: %v", line, name, err)
		}
		if _, dup := u.byName[name]; dup {
			return nil, fmt.Errorf("line %d: user %q listed twice", line, name)
		}
		usr := user{hash: hash}
		if len(parts) == 3 {
			usr.topics = map[string]bool{}
			for _, t := range strings.Split(parts[2], ",") {
				t = strings.TrimSpace(t)
				if t == "*" {
					usr.topics = nil
					break
				}
				if t != "" {
					usr.topics[t] = true
				}
			}
		}
		u.byName[name] = usr
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(u.byName) == 0 {
		return nil, errors.New("no users")
	}
	return u, nil
}

// Len reports the number of users.
func (u *Users) Len() int { return len(u.byName) }

// Authenticate checks one PLAIN message (authzid NUL authcid NUL passwd).
// It returns the user and the topic filter (nil: every topic). An authzid
// other than empty or the user itself is refused: users cannot act for
// others.
func (u *Users) Authenticate(msg []byte) (string, func(topic string) bool, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", nil, fmt.Errorf("%w: want 3 NUL-separated fields, got %d", ErrMalformed, len(parts))
	}
	authz, name, pass := string(parts[0]), string(parts[1]), parts[2]
	if name == "" {
		return "", nil, fmt.Errorf("%w: empty username", ErrMalformed)
	}
	usr, ok := u.byName[name]
	hash := usr.hash
	if !ok {
		hash = dummyHash
	}
	if err := bcrypt.CompareHashAndPassword(hash, pass); err != nil || !ok {
		return "", nil, ErrBadCredentials
	}
	if authz != "" && authz != name {
		return "", nil, fmt.Errorf("user %q may not act as %q", name, authz)
	}
	if usr.topics == nil {
		return name, nil, nil
	}
	topics := usr.topics
	return name, func(t string) bool { return topics[t] }, nil
}

// Hash returns the users-file hash of password.
func Hash(password []byte, cost int) (string, error) {
	if len(password) == 0 {
		return "", errors.New("empty password")
	}
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	h, err := bcrypt.GenerateFromPassword(password, cost)
	if err != nil {
		return "", err
	}
	return string(h), nil
}
