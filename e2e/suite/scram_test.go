package suite

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/e2e/stack"
)

// TestSCRAM runs a frontdoor with a SCRAM credentials file made by `frontdoor scram-users`: every
// real client produces with SCRAM-SHA-256 and SCRAM-SHA-512 and every row is
// read back; wrong passwords and unknown users get SASL_AUTHENTICATION_FAILED; a user added to
// the file while frontdoor runs can log in without a restart, and a removed one no longer can.
func TestSCRAM(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "scram")
	file := filepath.Join(t.TempDir(), "scram")
	scramUsers(t, file, "s3cret-a", "add", "alice")
	kafka := startSecuredFrontdoor(t, e, "scram", map[string]string{
		"FERRY_SASL_SCRAM_FILE": file, "FERRY_SASL_RELOAD_INTERVAL": "200ms"})

	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		for _, c := range selectedClients(t) {
			t.Run(mech+"/"+c.Name, func(t *testing.T) {
				produceWithClient(t, f, db, c, clientRun{kafka: kafka, records: 12, saslUser: "alice", saslPass: "s3cret-a",
					saslMechanism: mech, table: sanitize("scram_" + mech[len(mech)-3:] + "_" + c.Name)})
			})
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	refused := func(user, pass string) error {
		cl := newKgo(t, kafka, kgoSASL("SCRAM-SHA-512", user, pass), kgo.RequestRetries(0))
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	for _, bad := range [][2]string{{"alice", "wrong"}, {"mallory", "s3cret-a"}} {
		if err := refused(bad[0], bad[1]); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s with %q: %v, want SASL_AUTHENTICATION_FAILED", bad[0], bad[1], err)
		}
	}
	t.Run("java/wrong password", func(t *testing.T) {
		java, err := clients.ByName("java")
		if err != nil {
			t.Fatal(err)
		}
		res, err := java.Produce(ctx, clients.Options{Bootstrap: kafka, Topic: db + ".scram_256_java", Acks: "all",
			SASLUser: "alice", SASLPassword: "wrong", SASLMechanism: "SCRAM-SHA-256", Timeout: 20 * time.Second},
			[]clients.Record{{Value: `{"id": 1}`}})
		if err == nil && res.Err() == nil {
			t.Fatal("java: a record was acknowledged with a wrong password")
		}
		if !strings.Contains(res.Stderr, "failed authentication") {
			t.Errorf("java's error does not say the authentication failed:\n%s", tailString(res.Stderr, 1000))
		}
	})

	// Credentials change while frontdoor runs.
	scramUsers(t, file, "s3cret-b", "add", "bob")
	waitUntil(t, 20*time.Second, "bob's new credential in force", func() bool { return refused("bob", "s3cret-b") == nil })
	scramUsers(t, file, "", "remove", "alice")
	waitUntil(t, 20*time.Second, "alice's removal in force", func() bool {
		return errors.Is(refused("alice", "s3cret-a"), kerr.SaslAuthenticationFailed)
	})
}

// scramUsers runs `frontdoor scram-users -file file args...` with password on stdin.
func scramUsers(t *testing.T, file, password string, args ...string) {
	t.Helper()
	bin := filepath.Join(env.stack.Config().ServiceBinDir(), stack.Frontdoor)
	cmd := exec.Command(bin, append([]string{"scram-users", "-file", file, "-iterations", "4096"}, args...)...)
	cmd.Stdin = strings.NewReader(password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("frontdoor scram-users %v: %v\n%s", args, err, out)
	}
}

// kgoSASL is franz-go's SASL option for mechanism ("" or PLAIN, SCRAM-SHA-256/512).
func kgoSASL(mechanism, user, pass string) kgo.Opt {
	switch mechanism {
	case "SCRAM-SHA-256":
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())
	case "SCRAM-SHA-512":
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism())
	}
	return kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())
}

// waitUntil polls cond until it holds, failing the test after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
