package saslscram

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// The SCRAM-SHA-256 example exchange of RFC 7677 section 3.
func TestRFC7677Exchange(t *testing.T) {
	salt, _ := b64.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := deriveCredential(SHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(SHA256, func(u, m string) (Credential, bool) { return cred, u == "user" && m == SHA256 }, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	srv.newNonce = func() (string, error) { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", nil }
	first, err := srv.First([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(first) != want {
		t.Fatalf("server-first %q, want %q", first, want)
	}
	final, user, err := srv.Final([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil {
		t.Fatal(err)
	}
	if user != "user" || string(final) != "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("server-final %q for %q", final, user)
	}
}

func TestRefusals(t *testing.T) {
	cred, err := NewCredential(SHA512, "right", 4096)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(u, m string) (Credential, bool) { return cred, u == "alice" && m == SHA512 }
	start := func(t *testing.T, first string) (*Server, []byte, error) {
		srv, err := NewServer(SHA512, lookup, []byte("fake-key"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := srv.First([]byte(first))
		return srv, out, err
	}
	for _, bad := range []string{"", "x,,n=a,r=1", "p=tls-unique,,n=alice,r=1", "n,,n=,r=1", "n,,n=alice", "n,,m=ext,n=alice,r=1",
		"n,,n=alice,r=1,tokenauth=true", "n,a=bob,n=alice,r=1", "n,,n=al=ZZice,r=1"} {
		if _, _, err := start(t, bad); err == nil {
			t.Errorf("client-first %q accepted", bad)
		}
	}
	// Unknown users get a salt like a real one, the same one each time, and fail at the end.
	_, a1, err := start(t, "n,,n=nobody,r=abc")
	if err != nil {
		t.Fatal(err)
	}
	_, a2, _ := start(t, "n,,n=nobody,r=abc")
	salt := func(b []byte) string { return strings.Split(string(b), ",")[1] }
	if salt(a1) != salt(a2) || !strings.HasPrefix(salt(a1), "s=") {
		t.Fatalf("unknown user's salt not stable: %q %q", a1, a2)
	}
	srv, first, _ := start(t, "n,,n=nobody,r=abc")
	if _, _, err := srv.Final(clientFinal(t, SHA512, "whatever", "n,,", "n=nobody,r=abc", first)); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("unknown user: %v", err)
	}
	srv, first, _ = start(t, "n,,n=alice,r=abc")
	if _, _, err := srv.Final(clientFinal(t, SHA512, "wrong", "n,,", "n=alice,r=abc", first)); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("wrong password: %v", err)
	}
	srv, first, _ = start(t, "n,,n=alice,r=abc")
	final, user, err := srv.Final(clientFinal(t, SHA512, "right", "n,,", "n=alice,r=abc", first))
	if err != nil || user != "alice" || !bytes.HasPrefix(final, []byte("v=")) {
		t.Fatalf("right password: %q %q %v", final, user, err)
	}
	if _, _, err := srv.Final([]byte("c=biws,r=x,p=AA==")); err == nil {
		t.Fatal("a second client-final accepted")
	}
	// librdkafka's client-final repeats its nonce in front of the server's; Kafka accepts it.
	srv, first, _ = start(t, "n,,n=alice,r=abc")
	if _, user, err := srv.Final(librdkafkaFinal(t, SHA512, "right", "n=alice,r=abc", first)); err != nil || user != "alice" {
		t.Fatalf("librdkafka's client-final: %q %v", user, err)
	}
	srv, first, _ = start(t, "n,,n=alice,r=abc")
	bad := strings.Replace(string(librdkafkaFinal(t, SHA512, "right", "n=alice,r=abc", first)), ",r=abc", ",r=abX", 1)
	if _, _, err := srv.Final([]byte(bad)); err == nil {
		t.Fatal("a changed nonce prefix passed the proof check")
	}
	// Tampered nonce and channel binding.
	srv, first, _ = start(t, "n,,n=alice,r=abc")
	msg := strings.Replace(string(clientFinal(t, SHA512, "right", "n,,", "n=alice,r=abc", first)), "c=biws", "c=eSws", 1)
	if _, _, err := srv.Final([]byte(msg)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("tampered channel binding: %v", err)
	}
}

// clientFinal computes a client's final message for password (the client
// side of RFC 5802, written out for the test).
func clientFinal(t *testing.T, mechanism, password, gs2, clientFirstBare string, serverFirst []byte) []byte {
	t.Helper()
	attrs, err := attributes(string(serverFirst))
	if err != nil {
		t.Fatal(err)
	}
	salt, _ := b64.DecodeString(attrs["s"])
	var iters int
	for _, c := range attrs["i"] {
		iters = iters*10 + int(c-'0')
	}
	cred, err := deriveCredential(mechanism, password, salt, iters)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := hashFor(mechanism)
	withoutProof := "c=" + b64.EncodeToString([]byte(gs2)) + ",r=" + attrs["r"]
	authMessage := clientFirstBare + "," + string(serverFirst) + "," + withoutProof
	// ClientKey is not kept in a Credential: derive it again.
	sig := mac(h, cred.StoredKey, authMessage)
	clientKey := clientKeyOf(t, mechanism, password, salt, iters)
	proof := make([]byte, len(sig))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	return []byte(withoutProof + ",p=" + b64.EncodeToString(proof))
}

func clientKeyOf(t *testing.T, mechanism, password string, salt []byte, iters int) []byte {
	t.Helper()
	h, _ := hashFor(mechanism)
	salted := pbkdf2Key(t, h, password, salt, iters)
	return mac(h, salted, "Client Key")
}

func TestStoreRoundTrip(t *testing.T) {
	var s Store
	for _, m := range Mechanisms {
		c, err := NewCredential(m, "pw", 8192)
		if err != nil {
			t.Fatal(err)
		}
		s.Set("alice", c)
	}
	c, _ := NewCredential(SHA256, "pw2", 4096)
	s.Set("bob", c)
	back, err := Parse(s.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if back.Len() != 2 {
		t.Fatalf("%d users", back.Len())
	}
	got, ok := back.Lookup("alice", SHA512)
	if !ok || got.Iterations != 8192 || !bytes.Equal(got.StoredKey, s.byUser["alice"][SHA512].StoredKey) {
		t.Fatalf("alice SHA-512 credential lost: %+v", got)
	}
	if !back.Remove("bob") || back.Remove("bob") || back.Len() != 1 {
		t.Fatal("Remove")
	}
	for _, bad := range []string{
		"alice:SCRAM-SHA-1:4096:AAAA:AAAA:AAAA",
		"alice:SCRAM-SHA-256:100:AAAA:AAAA:AAAA",
		"alice:SCRAM-SHA-256:4096:AAAA:AAAA",
		"alice:SCRAM-SHA-256:4096:!!:AAAA:AAAA",
		"alice:SCRAM-SHA-256:4096:AAAA:AAAA:AAAA", // key sizes
	} {
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("Parse(%q) = %v", bad, err)
		}
	}
	line := s.byUser["alice"][SHA256].Line("alice")
	if _, err := Parse([]byte(line + "\n" + line)); err == nil {
		t.Error("a second credential for one mechanism accepted")
	}
}

func TestUsersCommand(t *testing.T) {
	file := t.TempDir() + "/scram"
	run := func(stdin string, args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := UsersCommand(append([]string{"-file", file}, args...), strings.NewReader(stdin), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	if code, out := run("s3cret\n", "-iterations", "5000", "add", "alice"); code != 0 {
		t.Fatalf("add: %d %s", code, out)
	}
	if code, out := run("pw\n", "-mechanism", SHA256, "add", "bob"); code != 0 {
		t.Fatalf("add bob: %d %s", code, out)
	}
	if code, out := run("", "list"); code != 0 || !strings.Contains(out, "alice SCRAM-SHA-256(5000) SCRAM-SHA-512(5000)") || !strings.Contains(out, "bob SCRAM-SHA-256(8192)\n") {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, _ := run("", "remove", "bob"); code != 0 {
		t.Fatal("remove bob")
	}
	if code, _ := run("", "remove", "bob"); code == 0 {
		t.Fatal("removing a missing user succeeded")
	}
	for _, bad := range [][]string{{"add", "a:b"}, {"-iterations", "10", "add", "x"}, {"-mechanism", "MD5", "add", "x"}, {"frobnicate"}} {
		if code, _ := run("pw\n", bad...); code == 0 {
			t.Errorf("%v succeeded", bad)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(b)
	if err != nil || s.Len() != 1 {
		t.Fatalf("file after the commands: %v, %d users", err, s.Len())
	}
	if strings.Contains(string(b), "s3cret") {
		t.Fatal("the password is in the file")
	}
}

// librdkafkaFinal is the client-final message librdkafka sends: its client
// nonce ("abc") in front of the server's whole nonce, the proof over that.
func librdkafkaFinal(t *testing.T, mechanism, password, clientFirstBare string, serverFirst []byte) []byte {
	t.Helper()
	attrs, _ := attributes(string(serverFirst))
	salt, _ := b64.DecodeString(attrs["s"])
	h, _ := hashFor(mechanism)
	cred, err := deriveCredential(mechanism, password, salt, MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	withoutProof := "c=biws,r=abc" + attrs["r"]
	sig := mac(h, cred.StoredKey, clientFirstBare+","+string(serverFirst)+","+withoutProof)
	key := clientKeyOf(t, mechanism, password, salt, MinIterations)
	for i := range sig {
		sig[i] ^= key[i]
	}
	return []byte(withoutProof + ",p=" + b64.EncodeToString(sig))
}
