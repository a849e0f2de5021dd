package fluss

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

// saslServer is a fake SASL listener: it refuses every call before a
// successful AUTHENTICATE, as Fluss 0.9.1 does, and answers a login with
// answer (a nil answer: an empty challenge, Fluss's success).
func saslServer(t *testing.T, answer func(fc *fakeConn, id int32, token []byte) bool) *fakeServer {
	return newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		switch req.key {
		case APIAuthenticate:
			var in flussrpc.AuthenticateRequest
			if err := proto.Unmarshal(req.body, &in); err != nil || in.GetProtocol() != "PLAIN" {
				t.Errorf("bad AUTHENTICATE request: %v %v", err, &in)
			}
			if answer(fc, req.id, in.GetToken()) {
				fc.success(req.id, &flussrpc.AuthenticateResponse{Challenge: []byte{}})
			}
		case APIListDatabases:
			listDBs(fc, req, "fluss")
		default:
			fc.errorResp(req.id, CodeAuthenticate, "unexpected request")
		}
	})
}

func TestSASLPlainLogin(t *testing.T) {
	want := []byte("\x00ferry\x00s3cret")
	s := saslServer(t, func(fc *fakeConn, id int32, token []byte) bool {
		if !bytes.Equal(token, want) {
			fc.errorResp(id, CodeAuthenticate, "Authentication failed: Invalid username or password")
			return false
		}
		return true
	})
	c := dialFake(t, s, WithSASLPlain("ferry", "s3cret"))
	if dbs, err := c.ListDatabases(shortCtx(t)); err != nil || len(dbs) != 1 {
		t.Fatalf("ListDatabases after login = %v, %v", dbs, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Dial(ctx, s.addr(), WithLogger(quietLogger()), WithSASLPlain("ferry", "wrong"))
	if !IsAuthentication(err) || !strings.Contains(err.Error(), `user "ferry"`) {
		t.Fatalf("Dial with a wrong password = %v, want an authentication error naming the user", err)
	}
}

func TestSASLPlainRefusesAChallenge(t *testing.T) {
	s := saslServer(t, func(fc *fakeConn, id int32, _ []byte) bool {
		fc.success(id, &flussrpc.AuthenticateResponse{Challenge: []byte("more")})
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Dial(ctx, s.addr(), WithLogger(quietLogger()), WithSASLPlain("ferry", "s3cret"))
	if err == nil || !strings.Contains(err.Error(), "unexpected challenge") {
		t.Fatalf("Dial = %v, want the unexpected challenge refused", err)
	}
}

func TestSASLPlainOptionValidation(t *testing.T) {
	for _, o := range []Option{WithSASLPlain("", "p"), WithSASLPlain("u", ""), WithSASLPlain("u\x00x", "p")} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := Dial(ctx, "127.0.0.1:1", WithLogger(quietLogger()), o)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "SASL/PLAIN") {
			t.Errorf("Dial = %v, want the option refused", err)
		}
	}
}
