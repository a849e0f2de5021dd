package broker

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestKcatProduce drives frontdoor with librdkafka (kcat), a second real
// client implementation. Skipped where kcat is not installed (failed under
// FERRY_TEST_REQUIRE_CLIENTS=1).
func TestKcatProduce(t *testing.T) {
	kcat := kcatPath(t)
	h := newHarness(t, harnessOpts{})
	for _, tc := range []struct {
		name  string
		args  []string
		codec int16 // what must reach the transcoder: librdkafka gates codecs on ApiVersions
	}{
		{"acks=all none", []string{"-X", "acks=all"}, 0},
		{"acks=1 gzip", []string{"-X", "acks=1", "-X", "compression.codec=gzip"}, 1},
		{"acks=0 snappy", []string{"-X", "acks=0", "-X", "compression.codec=snappy"}, 2},
		{"lz4", []string{"-X", "compression.codec=lz4"}, 3},
		{"zstd", []string{"-X", "compression.codec=zstd"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.ap.Log(200, 1))
			var in bytes.Buffer
			for i := 0; i < 5; i++ {
				// Compressible, or librdkafka sends the batch uncompressed.
				fmt.Fprintf(&in, "%s-%d-%s\n", tc.name, i, strings.Repeat("abc", 100))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			args := append([]string{"-P", "-b", h.addr, "-t", "events", "-p", "1", "-X", "client.id=kcat-test"}, tc.args...)
			cmd := exec.CommandContext(ctx, kcat, args...)
			cmd.Stdin = &in
			out, err := cmd.CombinedOutput()
			if err != nil || strings.Contains(string(out), "failed") {
				t.Fatalf("kcat: %v\n%s", err, out)
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(h.ap.Log(200, 1)) < before+5 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := len(h.ap.Log(200, 1)) - before; got != 5 {
				t.Fatalf("appended %d records, want 5; kcat said:\n%s", got, out)
			}
			if n, ok := h.tcs[0].Codecs.Load(tc.codec); !ok || n.(interface{ Load() int64 }).Load() == 0 {
				var seen []int16
				h.tcs[0].Codecs.Range(func(k, _ any) bool { seen = append(seen, k.(int16)); return true })
				t.Fatalf("no batch with codec %d reached the transcoder (codecs seen: %v)\n%s", tc.codec, seen, out)
			}
		})
	}
	t.Run("metadata list", func(t *testing.T) {
		out, err := exec.Command(kcat, "-L", "-b", h.addr).CombinedOutput()
		if err != nil || !strings.Contains(string(out), `topic "orders" with 4 partitions`) {
			t.Fatalf("kcat -L: %v\n%s", err, out)
		}
	})
}

// TestKcatSASLPlain authenticates librdkafka with SASL/PLAIN.
func TestKcatSASLPlain(t *testing.T) {
	kcat := kcatPath(t)
	h := newHarness(t, harnessOpts{sasl: testUsers(t)})
	for _, tc := range []struct {
		pass string
		ok   bool
	}{{"alice-pw", true}, {"wrong", false}} {
		t.Run(tc.pass, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, kcat, "-P", "-b", h.addr, "-t", "orders", "-p", "3",
				"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
				"-X", "sasl.username=alice", "-X", "sasl.password="+tc.pass, "-X", "message.timeout.ms=3000")
			cmd.Stdin = strings.NewReader("sasl-kcat\n")
			out, err := cmd.CombinedOutput()
			got := len(h.ap.Log(100, 3))
			if tc.ok && (err != nil || got != 1) {
				t.Fatalf("kcat: %v, %d records\n%s", err, got, out)
			}
			if !tc.ok && (err == nil || !strings.Contains(string(out), "invalid username or password")) {
				t.Fatalf("wrong password not refused clearly: %v\n%q", err, out)
			}
		})
	}
}
