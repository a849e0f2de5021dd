// Package basicauth checks the HTTP Basic credentials of Schema Registry
// clients against the same user files frontdoor's Kafka listener uses:
// the SASL/PLAIN users file (user:bcrypt-hash[:topics]) and the SCRAM
// credentials file (user:mechanism:iterations:salt:stored-key:server-key,
// base64). A password is accepted when it matches either. The topic lists
// of the PLAIN file are not applied: registry subjects are not topics'
// records.
package basicauth

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// Users are the accepted credentials.
type Users struct {
	bcrypt map[string][]byte
	scram  map[string][]scramCredential
}

type scramCredential struct {
	h          func() hash.Hash
	iterations int
	salt       []byte
	storedKey  []byte
}

// dummyHash is compared against for unknown users so that they cost as
// much time as known ones.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("ferry-no-such-user"), bcrypt.MinCost)

// Load reads the users file and the SCRAM file; either path may be empty,
// not both.
func Load(usersFile, scramFile string) (*Users, error) {
	u := &Users{bcrypt: map[string][]byte{}, scram: map[string][]scramCredential{}}
	if usersFile == "" && scramFile == "" {
		return nil, errors.New("basicauth: no users file")
	}
	if usersFile != "" {
		data, err := os.ReadFile(usersFile)
		if err != nil {
			return nil, fmt.Errorf("users file: %w", err)
		}
		if err := u.parsePlain(data); err != nil {
			return nil, fmt.Errorf("users file %s: %w", usersFile, err)
		}
	}
	if scramFile != "" {
		data, err := os.ReadFile(scramFile)
		if err != nil {
			return nil, fmt.Errorf("scram file: %w", err)
		}
		if err := u.parseSCRAM(data); err != nil {
			return nil, fmt.Errorf("scram file %s: %w", scramFile, err)
		}
	}
	return u, nil
}

func lines(data []byte, fn func(line int, text string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if err := fn(n, text); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	return sc.Err()
}

func (u *Users) parsePlain(data []byte) error {
	return lines(data, func(_ int, text string) error {
		parts := strings.SplitN(text, ":", 3)
		if len(parts) < 2 || parts[0] == "" {
			return errors.New("want user:bcrypt-hash[:topics]")
		}
		if _, err := bcrypt.Cost([]byte(parts[1])); err != nil {
			return fmt.Errorf("user %q: not a bcrypt hash: %v", parts[0], err)
		}
		u.bcrypt[parts[0]] = []byte(parts[1])
		return nil
	})
}

func (u *Users) parseSCRAM(data []byte) error {
	return lines(data, func(_ int, text string) error {
		f := strings.Split(text, ":")
		if len(f) != 6 || f[0] == "" {
			return errors.New("want user:mechanism:iterations:salt:stored-key:server-key")
		}
		c := scramCredential{}
		switch f[1] {
		case "SCRAM-SHA-256":
			c.h = sha256.New
		case "SCRAM-SHA-512":
			c.h = sha512.New
		default:
			return fmt.Errorf("unknown mechanism %q", f[1])
		}
		var err error
		if c.iterations, err = strconv.Atoi(f[2]); err != nil || c.iterations < 1 {
			return fmt.Errorf("iterations %q", f[2])
		}
		if c.salt, err = base64.StdEncoding.DecodeString(f[3]); err != nil {
			return fmt.Errorf("salt: %w", err)
		}
		if c.storedKey, err = base64.StdEncoding.DecodeString(f[4]); err != nil {
			return fmt.Errorf("stored key: %w", err)
		}
		u.scram[f[0]] = append(u.scram[f[0]], c)
		return nil
	})
}

// Authenticate reports whether password is user's.
func (u *Users) Authenticate(user, password string) bool {
	if user == "" || password == "" {
		return false
	}
	if h, ok := u.bcrypt[user]; ok {
		if bcrypt.CompareHashAndPassword(h, []byte(password)) == nil {
			return true
		}
	} else if len(u.scram[user]) == 0 {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return false
	}
	for _, c := range u.scram[user] {
		// RFC 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")).
		salted, err := pbkdf2.Key(c.h, password, c.salt, c.iterations, c.h().Size())
		if err != nil {
			continue
		}
		m := hmac.New(c.h, salted)
		m.Write([]byte("Client Key"))
		d := c.h()
		d.Write(m.Sum(nil))
		if subtle.ConstantTimeCompare(d.Sum(nil), c.storedKey) == 1 {
			return true
		}
	}
	return false
}
