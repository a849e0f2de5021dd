package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
)

// TestJavaProduce drives frontdoor with the Java kafka-clients producer.
// It needs javac/java and FERRY_TEST_KAFKA_CLIENTS_CP, a classpath with
// kafka-clients and its compression libraries (lz4-java, snappy-java,
// zstd-jni, slf4j-api); it is skipped without them (failed under
// FERRY_TEST_REQUIRE_CLIENTS=1).
func TestJavaProduce(t *testing.T) {
	cp, javac, java := javaClients(t)
	classes := t.TempDir()
	if out, err := exec.Command(javac, "-cp", cp, "-d", classes, filepath.Join("testdata", "FerryJavaProducer.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	h := newHarness(t, harnessOpts{sasl: nil})
	run := func(t *testing.T, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, java, append([]string{"-cp", cp + string(os.PathListSeparator) + classes, "FerryJavaProducer"}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	for _, tc := range []struct {
		name, acks, codec string
		codecNum          int16
	}{
		{"acks=all none", "all", "none", 0},
		{"acks=1 gzip", "1", "gzip", 1},
		{"acks=1 snappy", "1", "snappy", 2},
		{"acks=all lz4", "all", "lz4", 3},
		{"acks=all zstd", "all", "zstd", 4},
		{"acks=0 none", "0", "none", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.ap.Log(100, 2))
			out, err := run(t, h.addr, "orders", "2", "10", tc.acks, tc.codec, "false")
			if err != nil || !strings.HasPrefix(out, "OK") {
				t.Fatalf("java producer: %v: %s", err, out)
			}
			waitFor(t, func() bool { return len(h.ap.Log(100, 2)) == before+10 })
			if n, ok := h.tcs[0].Codecs.Load(tc.codecNum); !ok || n.(interface{ Load() int64 }).Load() == 0 {
				t.Fatalf("no batch with codec %d reached the transcoder", tc.codecNum)
			}
		})
	}
	// Idempotence, the Java producer's default since 3.0: InitProducerId
	// gives it a producer id, its batches reach appendsvc with a Fluss
	// writer id, and the offsets it is told are the ones stored.
	for _, idem := range []string{"default", "true"} {
		t.Run("idempotence "+idem, func(t *testing.T) {
			before := len(h.ap.Log(100, 2))
			calls := h.ap.WriterCalls.Load()
			out, err := run(t, h.addr, "orders", "2", "20", "all", "none", idem)
			if err != nil || !strings.HasPrefix(out, "OK") {
				t.Fatalf("java producer: %v: %s", err, out)
			}
			if got := len(h.ap.Log(100, 2)) - before; got != 20 {
				t.Fatalf("appended %d records, want 20", got)
			}
			if h.ap.WriterCalls.Load() == calls {
				t.Fatal("no append carried a writer id: the batches were not idempotent")
			}
			wantOffsets(t, out, before, 20)
		})
	}
	// Lost acknowledgements: every second batch is stored but answered
	// with a retriable timeout. The Java producer retries with the same
	// sequence; each record is stored once and acknowledged at the offset
	// it was stored at.
	t.Run("idempotence lost acks", func(t *testing.T) {
		var mu sync.Mutex
		seen := map[[3]int64]bool{}
		n := 0
		h.ap.Mu.Lock()
		h.ap.StoreThenFail = func(r *appendv1.AppendRequest) bool {
			mu.Lock()
			defer mu.Unlock()
			k := [3]int64{int64(r.BucketId), r.WriterId, int64(r.BatchSequence)}
			if r.WriterId < 0 || seen[k] {
				return false
			}
			seen[k] = true
			n++
			return n%2 == 1
		}
		h.ap.Mu.Unlock()
		defer func() { h.ap.Mu.Lock(); h.ap.StoreThenFail = nil; h.ap.Mu.Unlock() }()
		before := len(h.ap.Log(100, 3))
		dups := h.ap.Duplicates.Load()
		out, err := run(t, h.addr, "orders", "3", "30", "all", "none", "default")
		if err != nil || !strings.HasPrefix(out, "OK") {
			t.Fatalf("java producer: %v: %s", err, out)
		}
		if got := len(h.ap.Log(100, 3)) - before; got != 30 {
			t.Fatalf("appended %d records, want 30 exactly once", got)
		}
		if h.ap.Duplicates.Load() == dups {
			t.Fatal("no batch was resent: the fault did not take")
		}
		wantOffsets(t, out, before, 30)
	})
	// With idempotence disabled in Ferry, InitProducerId is not advertised:
	// the Java producer with idempotence fails fast and says why.
	hOff := newHarness(t, harnessOpts{noIdempotence: true})
	for _, idem := range []string{"default", "true"} {
		t.Run("idempotence disabled in ferry, producer "+idem, func(t *testing.T) {
			out, err := run(t, hOff.addr, "orders", "2", "1", "all", "none", idem)
			if err == nil || !strings.Contains(out, "UnsupportedVersionException") || !strings.Contains(out, "INIT_PRODUCER_ID") {
				t.Fatalf("want a clear INIT_PRODUCER_ID failure, got err=%v: %s", err, out)
			}
		})
	}
}

// wantOffsets checks the producer's "OK o1 o2 ..." line lists n
// consecutive offsets from first.
func wantOffsets(t *testing.T, out string, first, n int) {
	t.Helper()
	f := strings.Fields(strings.TrimPrefix(out, "OK"))
	if len(f) != n {
		t.Fatalf("%d offsets reported, want %d: %s", len(f), n, out)
	}
	for i, o := range f {
		if o != strconv.Itoa(first+i) {
			t.Fatalf("record %d acknowledged at offset %s, want %d: %s", i, o, first+i, out)
		}
	}
}

// TestJavaIdempotentStateLost: frontdoor forgets its producers (a restart,
// a partition moving) between two halves of one Java producer's run. The
// producer gets UNKNOWN_PRODUCER_ID, bumps its epoch, starts the partition
// over on a fresh Fluss writer and carries on; every record is stored once
// and acknowledged at its offset.
func TestJavaIdempotentStateLost(t *testing.T) {
	cp, javac, java := javaClients(t)
	classes := t.TempDir()
	if out, err := exec.Command(javac, "-cp", cp, "-d", classes, filepath.Join("testdata", "FerryJavaStateLoss.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	h := newHarness(t, harnessOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, "-cp", cp+string(os.PathListSeparator)+classes, "FerryJavaStateLoss", h.addr, "orders", "1", "10")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "HALF" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("java producer: %q", lines.Text())
	}
	if h.srv.ProducerCount() != 1 {
		t.Errorf("%d producers with state, want 1", h.srv.ProducerCount())
	}
	h.srv.Producers.ForgetAll()
	if n := h.srv.ProducerCount(); n != 0 {
		t.Fatalf("%d producers with state after forgetting", n)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	var out string
	if lines.Scan() {
		out = lines.Text()
	}
	if err := cmd.Wait(); err != nil || !strings.HasPrefix(out, "OK") {
		t.Fatalf("java producer: %v: %s", err, out)
	}
	log := h.ap.Log(100, 1)
	if len(log) != 20 {
		t.Fatalf("partition holds %d records, want 20", len(log))
	}
	for i, v := range log {
		if v != fmt.Sprintf("java-%04d", i) {
			t.Fatalf("offset %d holds %q", i, v)
		}
	}
	wantOffsets(t, out, 0, 20)
	// The second half could only be stored on new state, started at
	// sequence 0: the client did start over.
	if n := h.srv.ProducerCount(); n != 1 {
		t.Fatalf("%d producers with state, want 1", n)
	}
}
