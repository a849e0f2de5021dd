package docs

import (
	"bufio"
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

// apiTables are the documents with a table of the Kafka APIs frontdoor
// lists, and the shape of their rows: API name, key, versions.
var apiTables = []struct {
	doc string
	row *regexp.Regexp
}{
	{"docs/README.md", regexp.MustCompile(`^\| ([A-Za-z]+) \((\d+)\) \| ([^|]*) \|`)},
	{"docs/kafka-api.md", regexp.MustCompile(`^\| ([A-Za-z]+) \| (\d+) \| ([^|]*) \|`)},
}

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
		"FERRY_CATALOG_ADDR=" + nowhere, "FERRY_TRANSCODE_ADDR=" + nowhere, "FERRY_APPEND_ADDR=" + nowhere, "FERRY_FETCH_ADDR=" + nowhere,
		"FERRY_LOG_LEVEL=error", "FERRY_SHUTDOWN_TIMEOUT=2s", "FERRY_GRPC_PLAINTEXT=true"}
	logPath := filepath.Join(dir, "frontdoor.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// done is closed (not sent on) so that both the wait for listening and the cleanup see it.
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
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
		case <-done:
			out, _ := os.ReadFile(logPath)
			t.Fatalf("frontdoor exited before listening: %v\n%s", waitErr, out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			t.Fatalf("frontdoor did not listen on %s within 30s\n%s", addr, out)
		}
	}
}

// kafkaConn is one client connection to frontdoor.
type kafkaConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	corr int32
}

func dialKafka(t *testing.T, addr string) *kafkaConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	return &kafkaConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// send writes req and returns its response body, or the error that ended
// the connection instead (frontdoor closes it on a request it does not serve).
func (c *kafkaConn) send(req kmsg.Request) ([]byte, error) {
	c.corr++
	if _, err := c.conn.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("ferry-docs")).AppendRequest(nil, req, c.corr)); err != nil {
		return nil, err
	}
	var size int32
	if err := binary.Read(c.r, binary.BigEndian, &size); err != nil {
		return nil, err
	}
	if size < 4 || size > 1<<20 {
		return nil, fmt.Errorf("response frame of %d bytes", size)
	}
	frame := make([]byte, size)
	if _, err := io.ReadFull(c.r, frame); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != c.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, c.corr)
	}
	body := frame[4:]
	// Flexible responses have header v1 (tagged fields; frontdoor writes
	// none), except ApiVersions, whose response header is always v0.
	if req.IsFlexible() && req.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			return nil, fmt.Errorf("response header tags %x", body[:min(len(body), 1)])
		}
		body = body[1:]
	}
	return body, nil
}

// decode sends req and decodes its response.
func (c *kafkaConn) decode(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	body, err := c.send(req)
	if err != nil {
		c.t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decoding %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// apiVersions asks addr for its ApiVersions (v3) and returns the listed ranges.
func apiVersions(t *testing.T, addr string) []kmsg.ApiVersionsResponseApiKey {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "ferry-docs", "1"
	resp := dialKafka(t, addr).decode(req).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions error code %d", resp.ErrorCode)
	}
	return resp.ApiKeys
}

// authenticated is a connection past SASL/PLAIN as the user startFrontdoor
// created, so any API may be sent on it.
func authenticated(t *testing.T, addr string) *kafkaConn {
	t.Helper()
	c := dialKafka(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if r := c.decode(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake error code %d", r.ErrorCode)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, []byte("\x00docs\x00docs-secret")
	if r := c.decode(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslAuthenticate error code %d", r.ErrorCode)
	}
	return c
}

// served reports whether frontdoor answers a request for key at version
// (true) or closes the connection (false), on a fresh authenticated
// connection. The request has kmsg's defaults: no topics, no ids.
func served(t *testing.T, addr string, key, version int16) bool {
	t.Helper()
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if p, ok := req.(*kmsg.ProduceRequest); ok {
		p.Acks, p.TimeoutMillis = -1, 1000 // acks=0 would get no answer either way
	}
	_, err := authenticated(t, addr).send(req)
	return err == nil
}

// versions is a range of API versions.
type versions struct{ min, max int16 }

func (v versions) String() string { return fmt.Sprintf("%d–%d", v.min, v.max) }

// apiRow is what a table row says of one API: the versions ApiVersions
// lists, and those served (nil: listed only, never served).
type apiRow struct {
	name   string
	listed versions
	served *versions
}

var (
	leadingRange = regexp.MustCompile(`^(?:listed )?(\d+)–(\d+)`)
	listedFrom   = regexp.MustCompile(`\(listed from (\d+)\)`)
	listedAs     = regexp.MustCompile(`\(listed as (\d+)–(\d+)\)`)
)

// parseVersions reads a versions cell as the tables write it: "0–13",
// "3–12 (listed from 0)", "3–12 (listed as 0–12)", "0–5 (flexible from
// v2)", "listed 4–10, never served", "4–10, advertised only".
func parseVersions(cell string) (listed versions, served *versions, err error) {
	num := func(s string) int16 { n, _ := strconv.ParseInt(s, 10, 16); return int16(n) }
	m := leadingRange.FindStringSubmatch(cell)
	if m == nil {
		return listed, nil, fmt.Errorf("versions %q do not start with a range like 0–13", cell)
	}
	first := versions{num(m[1]), num(m[2])}
	listed = first
	if m := listedFrom.FindStringSubmatch(cell); m != nil {
		listed.min = num(m[1])
	}
	if m := listedAs.FindStringSubmatch(cell); m != nil {
		listed = versions{num(m[1]), num(m[2])}
	}
	if strings.Contains(cell, "never served") || strings.Contains(cell, "advertised only") {
		return listed, nil, nil
	}
	return listed, &first, nil
}

// readAPITable returns the rows of doc's API table by key.
func readAPITable(t *testing.T, doc string, row *regexp.Regexp) map[int16]apiRow {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), doc))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[int16]apiRow{}
	for _, l := range strings.Split(string(raw), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		k, _ := strconv.Atoi(m[2])
		cell := strings.TrimSpace(m[3])
		listed, srv, err := parseVersions(cell)
		if err != nil {
			t.Errorf("%s: %s (%d): %v", doc, m[1], k, err)
			continue
		}
		if _, dup := rows[int16(k)]; dup {
			t.Errorf("%s: two rows for key %d", doc, k)
		}
		rows[int16(k)] = apiRow{name: m[1], listed: listed, served: srv}
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no API table rows matching %s", doc, row)
	}
	return rows
}

// TestAPITablesMatchFrontdoor compares the API tables of docs/README.md and
// docs/kafka-api.md with a running frontdoor: every API it lists in
// ApiVersions has a row in each, with the API's name, its key and the
// listed versions; no row names an API it does not list; both tables state
// the same served versions, and frontdoor answers the lowest and highest of
// them (each request carries no topics, so no backend is needed) but closes
// the connection on the version below them, and on an API listed but never
// served.
func TestAPITablesMatchFrontdoor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts frontdoor")
	}
	tables := make([]map[int16]apiRow, len(apiTables))
	for i, tb := range apiTables {
		tables[i] = readAPITable(t, tb.doc, tb.row)
	}
	addr := startFrontdoor(t)
	listed := apiVersions(t, addr)
	seen := map[int16]bool{}
	for _, k := range listed {
		seen[k.ApiKey] = true
		name := kmsg.NameForKey(k.ApiKey)
		want := versions{k.MinVersion, k.MaxVersion}
		for i, tb := range apiTables {
			row, ok := tables[i][k.ApiKey]
			switch {
			case !ok:
				t.Errorf("%s: frontdoor lists %s (%d) v%s, the table has no row for it", tb.doc, name, k.ApiKey, want)
				continue
			case !strings.EqualFold(row.name, name): // kmsg spells InitProducerID, SASLHandshake
				t.Errorf("%s: key %d is %s, the table calls it %s", tb.doc, k.ApiKey, name, row.name)
			case row.listed != want:
				t.Errorf("%s: %s (%d) row says listed v%s; frontdoor lists v%s", tb.doc, name, k.ApiKey, row.listed, want)
			case row.served != nil && (row.served.min < want.min || row.served.max != want.max):
				t.Errorf("%s: %s (%d) row says served v%s, outside the listed v%s", tb.doc, name, k.ApiKey, row.served, want)
			}
		}
	}
	for i, tb := range apiTables {
		for k, row := range tables[i] {
			if !seen[k] {
				t.Errorf("%s: the table has a row for %s (%d), which frontdoor does not list", tb.doc, row.name, k)
			}
		}
	}
	if t.Failed() {
		return
	}

	// What is served beyond what ApiVersions says: both tables agree, and
	// frontdoor does what they say.
	for k, row := range tables[0] {
		other := tables[1][k]
		if (row.served == nil) != (other.served == nil) || (row.served != nil && *row.served != *other.served) {
			t.Errorf("%s (%d): %s says served %v, %s says %v", row.name, k, apiTables[0].doc, row.served, apiTables[1].doc, other.served)
			continue
		}
		if row.served == nil {
			for _, v := range []int16{row.listed.min, row.listed.max} {
				if served(t, addr, k, v) {
					t.Errorf("%s (%d) v%d was answered; the tables say it is never served", row.name, k, v)
				}
			}
			continue
		}
		for _, v := range []int16{row.served.min, row.served.max} {
			if !served(t, addr, k, v) {
				t.Errorf("%s (%d) v%d closed the connection; the tables say v%s is served", row.name, k, v, row.served)
			}
		}
		if below := row.served.min - 1; below >= row.listed.min && served(t, addr, k, below) {
			t.Errorf("%s (%d) v%d was answered; the tables say v%s only", row.name, k, below, row.served)
		}
	}
}

func TestParseVersions(t *testing.T) {
	for _, tc := range []struct {
		cell   string
		listed versions
		served *versions
	}{
		{"0–13", versions{0, 13}, &versions{0, 13}},
		{"3–12 (listed from 0)", versions{0, 12}, &versions{3, 12}},
		{"3–12 (listed as 0–12)", versions{0, 12}, &versions{3, 12}},
		{"0–5 (flexible from v2)", versions{0, 5}, &versions{0, 5}},
		{"listed 4–10, never served", versions{4, 10}, nil},
		{"4–10, advertised only", versions{4, 10}, nil},
	} {
		listed, srv, err := parseVersions(tc.cell)
		if err != nil || listed != tc.listed || (srv == nil) != (tc.served == nil) || (srv != nil && *srv != *tc.served) {
			t.Errorf("parseVersions(%q) = %v, %v, %v; want %v, %v", tc.cell, listed, srv, err, tc.listed, tc.served)
		}
	}
	for _, bad := range []string{"", "3-12", "v3–12", "all"} {
		if _, _, err := parseVersions(bad); err == nil {
			t.Errorf("parseVersions(%q) accepted", bad)
		}
	}
}
