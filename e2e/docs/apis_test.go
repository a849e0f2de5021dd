package docs

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// indexDoc holds the "Supported Kafka APIs at a glance" table.
const indexDoc = "docs/README.md"

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startFrontdoor runs the built frontdoor on a free Kafka port with SASL on
// (so the SASL APIs are listed) and idempotence at its default, pointing at
// backends that do not exist: ApiVersions is answered from frontdoor's own
// registry and needs none of them. It returns the Kafka address.
func startFrontdoor(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(buildServices(t), "frontdoor")
	dir := t.TempDir()

	hash := exec.Command(bin, "hash-password", "-user", "docs", "-cost", "4")
	hash.Stdin = strings.NewReader("docs-secret\n")
	line, err := hash.Output()
	if err != nil {
		t.Fatalf("frontdoor hash-password: %v", err)
	}
	users := filepath.Join(dir, "users.txt")
	if err := os.WriteFile(users, line, 0o600); err != nil {
		t.Fatal(err)
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	// Port 9 (discard) on loopback: nothing listens, dials are lazy.
	const nowhere = "127.0.0.1:9"
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"FERRY_KAFKA_LISTEN=" + addr, "FERRY_LISTEN=127.0.0.1:0", "FERRY_SASL_USERS_FILE=" + users,
		"FERRY_CATALOG_ADDR=" + nowhere, "FERRY_TRANSCODE_ADDR=" + nowhere, "FERRY_APPEND_ADDR=" + nowhere,
		"FERRY_LOG_LEVEL=error", "FERRY_SHUTDOWN_TIMEOUT=2s"}
	logPath := filepath.Join(dir, "frontdoor.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logPath)
			t.Fatalf("frontdoor exited before listening: %v\n%s", err, out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			t.Fatalf("frontdoor did not listen on %s within 30s\n%s", addr, out)
		}
	}
}

// apiVersions asks addr for its ApiVersions (v3) and returns the listed ranges.
func apiVersions(t *testing.T, addr string) []kmsg.ApiVersionsResponseApiKey {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)

	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "ferry-docs", "1"
	const correlation = 7
	if _, err := conn.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("ferry-docs")).AppendRequest(nil, req, correlation)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	var size int32
	if err := binary.Read(r, binary.BigEndian, &size); err != nil {
		t.Fatalf("reading the ApiVersions answer: %v", err)
	}
	if size < 4 || size > 1<<20 {
		t.Fatalf("ApiVersions answer of %d bytes", size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	// The ApiVersions response header is always v0: just the correlation id.
	if got := int32(binary.BigEndian.Uint32(body)); got != correlation {
		t.Fatalf("correlation id %d, want %d", got, correlation)
	}
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.Version = req.Version
	if err := resp.ReadFrom(body[4:]); err != nil {
		t.Fatalf("decoding ApiVersions: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions error code %d", resp.ErrorCode)
	}
	return resp.ApiKeys
}

// apiRow is a row of the index's API table: "| Name (key) | versions | notes |".
var apiRow = regexp.MustCompile(`^\| [A-Za-z]+ \((\d+)\) \| ([^|]*) \|`)

// TestIndexAPITableMatchesFrontdoor compares the API table of docs/README.md
// with what a running frontdoor lists in ApiVersions: every listed API has a
// row naming its highest version and its advertised lowest one, and every
// row is a listed API.
func TestIndexAPITableMatchesFrontdoor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts frontdoor")
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), indexDoc))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[int16]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		if m := apiRow.FindStringSubmatch(l); m != nil {
			k, _ := strconv.Atoi(m[1])
			rows[int16(k)] = m[2]
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no API table rows like %q", indexDoc, "| Produce (0) | 3–12 | ... |")
	}
	listed := apiVersions(t, startFrontdoor(t))
	seen := map[int16]bool{}
	for _, k := range listed {
		seen[k.ApiKey] = true
		name := kmsg.NameForKey(k.ApiKey)
		cell, ok := rows[k.ApiKey]
		if !ok {
			t.Errorf("%s: frontdoor lists %s (%d) v%d–%d, the table has no row for it", indexDoc, name, k.ApiKey, k.MinVersion, k.MaxVersion)
			continue
		}
		span := fmt.Sprintf("%d–%d", k.MinVersion, k.MaxVersion)
		if !strings.Contains(cell, "–"+strconv.Itoa(int(k.MaxVersion))) ||
			!(strings.Contains(cell, span) || strings.Contains(cell, fmt.Sprintf("listed from %d", k.MinVersion))) {
			t.Errorf("%s: %s (%d) row says %q; frontdoor lists v%s", indexDoc, name, k.ApiKey, strings.TrimSpace(cell), span)
		}
	}
	for k := range rows {
		if !seen[k] {
			t.Errorf("%s: the table has a row for %s (%d), which frontdoor does not list", indexDoc, kmsg.NameForKey(k), k)
		}
	}
}
