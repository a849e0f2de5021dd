package saslplain

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func hashOf(t *testing.T, pw string) string {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func TestParseErrors(t *testing.T) {
	h := hashOf(t, "pw")
	for _, tc := range []struct{ name, in, want string }{
		{"no hash", "alice\n", "line 1"},
		{"empty user", ":" + h + "\n", "line 1"},
		{"not bcrypt", "# c\nalice:plaintext\n", "line 2"},
		{"duplicate", "a:" + h + "\na:" + h + "\n", "twice"},
		{"empty file", "# only a comment\n\n", "no users"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
	u, err := Parse(strings.NewReader("alice:" + hashOf(t, "a-pw") + "\nbob:" + hashOf(t, "b-pw") + ":events, logs\ncarol:" + hashOf(t, "c-pw") + ":*\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		msg     string
		user    string
		err     error
		allowed map[string]bool // topic -> allowed; nil: no filter expected
	}{
		{"alice", "\x00alice\x00a-pw", "alice", nil, nil},
		{"alice as herself", "alice\x00alice\x00a-pw", "alice", nil, nil},
		{"bob filtered", "\x00bob\x00b-pw", "bob", nil, map[string]bool{"events": true, "logs": true, "orders": false}},
		{"carol star", "\x00carol\x00c-pw", "carol", nil, nil},
		{"wrong password", "\x00alice\x00b-pw", "", ErrBadCredentials, nil},
		{"unknown user", "\x00mallory\x00x", "", ErrBadCredentials, nil},
		{"two fields", "alice\x00a-pw", "", ErrMalformed, nil},
		{"four fields", "\x00alice\x00a-pw\x00", "", ErrMalformed, nil},
		{"empty user", "\x00\x00a-pw", "", ErrMalformed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, allow, err := u.Authenticate([]byte(tc.msg))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || user != tc.user {
				t.Fatalf("user %q err %v", user, err)
			}
			if (allow == nil) != (tc.allowed == nil) {
				t.Fatalf("filter present = %v, want %v", allow != nil, tc.allowed != nil)
			}
			for topic, want := range tc.allowed {
				if allow(topic) != want {
					t.Errorf("topic %s allowed = %v", topic, !want)
				}
			}
		})
	}
	if _, _, err := u.Authenticate([]byte("bob\x00alice\x00a-pw")); err == nil {
		t.Fatal("alice acted as bob")
	}
}

func TestHashPasswordCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := HashPasswordCommand([]string{"-user", "dave", "-cost", "4"}, strings.NewReader("s3cret\n"), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	u, err := Parse(&out)
	if err != nil {
		t.Fatalf("output is not a users file: %v (%q)", err, out.String())
	}
	if user, _, err := u.Authenticate([]byte("\x00dave\x00s3cret")); err != nil || user != "dave" {
		t.Fatalf("generated line does not authenticate: %v", err)
	}
	for _, args := range [][]string{{"-cost", "99"}, {"-user", "a:b"}, {"-nope"}} {
		if code := HashPasswordCommand(args, strings.NewReader("x\n"), &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code := HashPasswordCommand(nil, strings.NewReader(""), &out, &errOut); code != 1 {
		t.Errorf("empty password: exit %d, want 1", code)
	}
}
