package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// viewerPage is what e2e/clients/kafkaviewer/view.py reports Kafka Viewer's pages showed.
type viewerPage struct {
	Problems   []string          `json:"problems"`
	Subheaders []string          `json:"subheaders"`
	Topics     []string          `json:"topics"`
	Metrics    map[string]string `json:"metrics"`
	Warnings   []string          `json:"warnings"`
	Expanders  []string          `json:"expanders"`
	Values     []string          `json:"values"`
}

// viewerInstall is where tools/install-clients.sh put Kafka Viewer and the browser that shows it.
type viewerInstall struct {
	venv     string // Kafka Viewer's venv
	dir      string // e2e/clients/kafkaviewer: view.py, screenshot.mjs and its node_modules
	chromium string // Debian's chromium
	shots    string // where screenshots go: .cache/run/console
}

// kafkaViewer finds Kafka Viewer's install. A missing part fails the test when every client must
// be there, and skips it otherwise.
func kafkaViewer(t *testing.T) viewerInstall {
	t.Helper()
	root, err := stack.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	v := viewerInstall{venv: filepath.Join(root, ".cache", "clients", "kafka-viewer-venv"),
		dir: filepath.Join(root, "e2e", "clients", "kafkaviewer"), chromium: "/usr/bin/chromium",
		shots: filepath.Join(root, ".cache", "run", "console")}
	for _, p := range []string{filepath.Join(v.venv, "bin", "kafka-viewer"), filepath.Join(v.dir, "node_modules", "playwright-core"), v.chromium} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") == "1" {
				t.Fatalf("Kafka Viewer or its browser not installed (tools/install-clients.sh): %v", err)
			}
			t.Skipf("Kafka Viewer or its browser not installed: %v", err)
		}
	}
	return v
}

// serveViewer starts Kafka Viewer as a user does (kafka-viewer --config FILE, which runs
// `streamlit run`) on a free loopback port against bootstrap, waits until it serves, and stops it
// (and the streamlit process it started) when the test ends. It returns the page's URL.
func serveViewer(t *testing.T, v viewerInstall, bootstrap string) string {
	t.Helper()
	props := filepath.Join(t.TempDir(), "kafka-viewer.properties")
	if err := os.WriteFile(props, []byte("kafka.bootstrap.servers="+bootstrap+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	cmd := exec.Command(filepath.Join(v.venv, "bin", "kafka-viewer"), "--config", props)
	cmd.Env = append(os.Environ(), "STREAMLIT_SERVER_PORT="+port, "STREAMLIT_SERVER_ADDRESS=127.0.0.1",
		"STREAMLIT_SERVER_HEADLESS=true", "STREAMLIT_BROWSER_GATHER_USAGE_STATS=false")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("kafka-viewer output:\n%s", logs.String())
		}
	})
	url := "http://127.0.0.1:" + port + "/"
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "_stcore/health")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "ok" {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kafka-viewer did not serve %s within 60s: %v\n%s", url, err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestWebConsole points a web console, Kafka Viewer (PyPI), at frontdoor and runs its UI
// headless: its topic list, a topic's statistics (partitions, records, records of the last
// hour by timestamp) and its message view (values decoded as JSON) show what Fluss holds,
// rows written to the table with Fluss's own Java writer.
func TestWebConsole(t *testing.T) {
	e, f := need(t)
	v := kafkaViewer(t)
	db := dbName(t, f, "console")
	const buckets, n = 3, 12
	cols := []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "item", Type: "STRING"}, {Name: "qty", Type: "INT"}}
	topic := topicTable(t, f, db, "orders", buckets, cols, nil)
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = map[string]any{"id": i, "item": fmt.Sprintf("item-%d", i), "qty": i * 3}
	}
	f.Write(t, db, "orders", rows)
	type pos struct {
		partition int32
		offset    int64
	}
	held := map[pos]map[string]any{}
	var latest int64 // the newest row's timestamp in Fluss, ms
	for _, r := range f.Scan(t, db, "orders", testenv.ScanOptions{Expect: n, Timeout: time.Minute}) {
		latest = max(latest, r.Timestamp)
		// As JSON decodes it, to compare with the values the console shows.
		b, err := json.Marshal(r.Row)
		if err != nil {
			t.Fatal(err)
		}
		var row map[string]any
		if err := json.Unmarshal(b, &row); err != nil {
			t.Fatal(err)
		}
		held[pos{r.Bucket, r.Offset}] = row
	}
	if len(held) != n {
		t.Fatalf("Fluss holds %d rows, want %d", len(held), n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(v.venv, "bin", "python"), filepath.Join(v.dir, "view.py"), "--bootstrap", e.kafka, "--topic", topic, "--count", strconv.Itoa(2*n))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Kafka Viewer: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Logf("Kafka Viewer's pages, in %v: %s", time.Since(start).Round(time.Millisecond), out)
	var page viewerPage
	if err := json.Unmarshal(out, &page); err != nil {
		t.Fatalf("view.py output %q: %v\nstderr:\n%s", out, err, stderr.String())
	}
	for _, p := range page.Problems {
		t.Errorf("Kafka Viewer shows a problem: %s", p)
	}
	if !slices.Contains(page.Subheaders, "Status: Connected") {
		t.Errorf("Kafka Viewer's status: %q, want Status: Connected", page.Subheaders)
	}
	if !slices.Contains(page.Topics, topic) {
		t.Fatalf("Kafka Viewer's topic list %q has no %s\nstderr:\n%s", page.Topics, topic, stderr.String())
	}
	for label, want := range map[string]string{"Partitions": strconv.Itoa(buckets), "Total Records": strconv.Itoa(n), "Last 1 Hour": strconv.Itoa(n)} {
		if got := page.Metrics[label]; got != want {
			t.Errorf("Kafka Viewer's statistics: %s = %q, want %q (all: %v)", label, got, want, page.Metrics)
		}
	}
	if len(page.Warnings) > 0 {
		t.Errorf("Kafka Viewer warns: %q", page.Warnings)
	}

	// Every message once, at the partition and offset Fluss holds it, its value that row as JSON.
	if len(page.Expanders) != n || len(page.Values) != n {
		t.Fatalf("Kafka Viewer shows %d messages and %d values, want %d", len(page.Expanders), len(page.Values), n)
	}
	seen := map[pos]bool{}
	for i, label := range page.Expanders {
		var idx int
		var p pos
		if _, err := fmt.Sscanf(label, "#%d partition=%d offset=%d", &idx, &p.partition, &p.offset); err != nil {
			t.Errorf("message %d: label %q: %v", i, label, err)
			continue
		}
		want, ok := held[p]
		if !ok || seen[p] {
			t.Errorf("message %d at partition %d offset %d: Fluss holds no such row, or it was shown twice", i, p.partition, p.offset)
			continue
		}
		seen[p] = true
		var got map[string]any
		if err := json.Unmarshal([]byte(page.Values[i]), &got); err != nil {
			t.Errorf("message %d: value %q is not JSON: %v", i, page.Values[i], err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("message %d at partition %d offset %d: Kafka Viewer shows %v, Fluss holds %v", i, p.partition, p.offset, got, want)
		}
	}

	// The same page served by streamlit and rendered by chromium: the topic, its first message
	// opened, a screenshot in .cache/run/console.
	url := serveViewer(t, v, e.kafka)
	if err := os.MkdirAll(v.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(v.shots, "kafka-viewer-topic.png")
	start = time.Now()
	browser := exec.CommandContext(ctx, "node", filepath.Join(v.dir, "screenshot.mjs"), url, topic, shot)
	browser.Env = append(os.Environ(), "CHROMIUM="+v.chromium)
	stderr.Reset()
	browser.Stderr = &stderr
	out, err = browser.Output()
	if err != nil {
		t.Fatalf("chromium on Kafka Viewer's page: %v\nstderr:\n%s", err, stderr.String())
	}
	var shown struct {
		Text, Selected, First, Code string
		Metrics                     map[string]string
	}
	if err := json.Unmarshal(out, &shown); err != nil {
		t.Fatalf("screenshot.mjs output %q: %v", out, err)
	}
	t.Logf("Kafka Viewer's topic page in chromium, in %v: screenshot %s", time.Since(start).Round(time.Millisecond), shot)
	if !strings.Contains(shown.Text, "Status: Connected") || !strings.Contains(shown.Selected, topic) {
		t.Errorf("the rendered page shows topic %q, want %s with Status: Connected:\n%s", shown.Selected, topic, shown.Text)
	}
	for label, want := range map[string]string{"Partitions": strconv.Itoa(buckets), "Total Records": strconv.Itoa(n), "Last 1 Hour": strconv.Itoa(n)} {
		if got := shown.Metrics[label]; got != want {
			t.Errorf("the rendered page's statistics: %s = %q, want %q (all: %v)", label, got, want, shown.Metrics)
		}
	}
	// The newest record's timestamp, in the page's local time to the second, is the newest row's.
	if want := time.UnixMilli(latest).Local().Format("02-Jan-2006 15:04:05"); !strings.Contains(shown.Text, "Latest Record Timestamp\n"+want) {
		t.Errorf("the rendered page does not show the latest record timestamp %s (Fluss's newest row):\n%s", want, shown.Text)
	}
	var p pos
	var idx int
	if _, err := fmt.Sscanf(shown.First, "#%d partition=%d offset=%d", &idx, &p.partition, &p.offset); err != nil || held[p] == nil {
		t.Fatalf("the rendered page's first message %q is no row Fluss holds (%v)", shown.First, err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(shown.Code), &got); err != nil || !reflect.DeepEqual(got, held[p]) {
		t.Errorf("the rendered page shows %q for partition %d offset %d, Fluss holds %v (%v)", shown.Code, p.partition, p.offset, held[p], err)
	}
}
