package saslscram

import (
	"crypto/pbkdf2"
	"hash"
	"testing"
)

func pbkdf2Key(t *testing.T, h func() hash.Hash, password string, salt []byte, iters int) []byte {
	t.Helper()
	k, err := pbkdf2.Key(h, password, salt, iters, h().Size())
	if err != nil {
		t.Fatal(err)
	}
	return k
}
