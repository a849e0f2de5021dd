package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
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

// kafkaViewer returns the Python of Kafka Viewer's venv (tools/install-clients.sh) and the
// script that drives its UI. A missing venv fails the test when every client must be there,
// and skips it otherwise.
func kafkaViewer(t *testing.T) (python, script string) {
	t.Helper()
	root, err := stack.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	python = filepath.Join(root, ".cache", "clients", "kafka-viewer-venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		if os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") == "1" {
			t.Fatalf("Kafka Viewer not installed (tools/install-clients.sh): %v", err)
		}
		t.Skipf("Kafka Viewer not installed: %v", err)
	}
	return python, filepath.Join(root, "e2e", "clients", "kafkaviewer", "view.py")
}

// TestWebConsole points a web console, Kafka Viewer (PyPI), at frontdoor and runs its UI
// headless: its topic list, a topic's statistics (partitions, records, records of the last
// hour by timestamp) and its message view (values decoded as JSON) show what Fluss holds,
// rows written to the table with Fluss's own Java writer.
func TestWebConsole(t *testing.T) {
	e, f := need(t)
	python, script := kafkaViewer(t)
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
	for _, r := range f.Scan(t, db, "orders", testenv.ScanOptions{Expect: n, Timeout: time.Minute}) {
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
	cmd := exec.CommandContext(ctx, python, script, "--bootstrap", e.kafka, "--topic", topic, "--count", strconv.Itoa(2*n))
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
}
