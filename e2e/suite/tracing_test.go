package suite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/jaeger"
	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// tracing is the Jaeger the services export their spans to.
type tracing struct {
	j      *jaeger.Jaeger
	client *jaeger.Client
	dir    string
}

// startTracing starts Jaeger on free ports, or returns nil when it is not installed
// (tools/install-jaeger.sh): tracing is then not checked, everything else still runs.
func startTracing(ctx context.Context, root string, log *slog.Logger) (*tracing, error) {
	runRoot := filepath.Join(root, ".cache", "run")
	if err := os.MkdirAll(runRoot, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(runRoot, "e2e-jaeger-")
	if err != nil {
		return nil, err
	}
	j, err := jaeger.Start(ctx, jaeger.Options{Dir: dir, Logger: log})
	if errors.Is(err, jaeger.ErrNotInstalled) {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "e2e/suite: Jaeger not installed (tools/install-jaeger.sh): tracing is not checked")
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("start Jaeger (files in %s): %w", dir, err)
	}
	return &tracing{j: j, client: jaeger.NewClient(j.QueryURL()), dir: dir}, nil
}

// otlpEndpoint is the services' OTEL_EXPORTER_OTLP_ENDPOINT (plaintext gRPC).
func (tr *tracing) otlpEndpoint() string { return "http://" + tr.j.OTLPEndpoint() }

func (tr *tracing) stop() error {
	err := tr.j.Stop()
	if err == nil && os.Getenv("FERRY_TEST_KEEP") != "1" {
		os.RemoveAll(tr.dir)
	}
	return err
}

// TestTracingOneTracePerProduce: one Produce request is one trace in Jaeger, rooted at
// frontdoor's kafka.produce span, reaching catalogsvc (the topic's first resolution),
// transcodesvc and appendsvc down to the Fluss ProduceLog call; and a Metadata request's trace
// reaches catalogsvc.
func TestTracingOneTracePerProduce(t *testing.T) {
	e, f := need(t)
	if e.tracing == nil {
		if os.Getenv("FERRY_TEST_REQUIRE_JAEGER") == "1" {
			t.Fatal("FERRY_TEST_REQUIRE_JAEGER=1 but Jaeger is not installed (tools/install-jaeger.sh)")
		}
		t.Skip("Jaeger not installed (tools/install-jaeger.sh)")
	}
	// Jaeger's service names; in single-process mode every span is the one process's.
	fd, cat, tc, ap, fe := process(e.stack, stack.Frontdoor), process(e.stack, stack.Catalog), process(e.stack, stack.Transcode),
		process(e.stack, stack.Append), process(e.stack, stack.Fetch)
	db := dbName(t, f, "tracing")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT"}, {Name: "name", Type: "STRING"}}
	topic := topicTable(t, f, db, "traced", 2, cols, nil)

	cl := newKgo(t, e.kafka)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte(`{"id": 1, "name": "traced"}`)}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	// Spans arrive per service and batch: wait for a trace that has them all.
	complete := func(tr jaeger.Trace) bool {
		parts := tr.Find(fd, "frontdoor.produce_partition")
		return len(parts) == 1 && parts[0].Attributes["messaging.destination.name"] == topic &&
			len(tr.Find(cat, resolveTopics)) > 0 &&
			len(tr.Find(tc, "transcode")) > 0 && len(tr.Find(ap, "append")) > 0 &&
			len(tr.Find(ap, "fluss.ProduceLog")) > 0
	}
	tr, err := e.tracing.client.WaitForTrace(ctx, fd, "kafka.produce", complete)
	if err != nil {
		t.Fatalf("%v\nservices Jaeger knows: %v", err, services(ctx, e.tracing.client))
	}
	t.Logf("produce trace:\n%s", tr.Tree())

	roots := tr.Roots()
	if len(roots) != 1 || roots[0].Service != fd || roots[0].Name != "kafka.produce" {
		t.Fatalf("trace roots = %v, want the one frontdoor kafka.produce span", roots)
	}
	root := roots[0]
	part := tr.Find(fd, "frontdoor.produce_partition")[0]
	chain := []struct{ ancestor, span jaeger.Span }{
		// The topic is new to frontdoor, so its first produce resolves it at catalogsvc.
		{root, tr.Find(cat, resolveTopics)[0]},
		{root, part},
		{part, tr.Find(tc, "transcode")[0]},
		{part, tr.Find(ap, "append")[0]},
		{tr.Find(ap, "append")[0], tr.Find(ap, "fluss.ProduceLog")[0]},
	}
	for _, c := range chain {
		if !tr.IsAncestor(c.ancestor.SpanID, c.span.SpanID) {
			t.Errorf("%s is not under %s", c.span, c.ancestor)
		}
	}
	for _, s := range tr.Spans {
		if s.StatusCode == jaeger.StatusError {
			t.Errorf("span %s has status error: %s", s, s.StatusMessage)
		}
	}

	// Metadata: frontdoor asks catalogsvc, inside the request's trace.
	mdCtx, mdCancel := context.WithTimeout(ctx, 60*time.Second)
	defer mdCancel()
	since := time.Now()
	waitTopic(t, topic, 2)
	md, err := e.tracing.client.WaitForTrace(mdCtx, fd, "kafka.metadata", func(tr jaeger.Trace) bool {
		rs := tr.Roots()
		return len(rs) == 1 && !rs[0].Start.Before(since.Add(-time.Second)) && catalogCalled(tr, cat)
	})
	if err != nil {
		t.Fatalf("no kafka.metadata trace reaching catalogsvc: %v", err)
	}
	t.Logf("metadata trace:\n%s", md.Tree())

	// Fetch: a consumer's read goes from frontdoor through fetchsvc to Fluss's FetchLog.
	if got := consumeAll(t, e.kafka, topic, 1); len(got) != 1 {
		t.Fatalf("consumed %d records", len(got))
	}
	ft, err := e.tracing.client.WaitForTrace(ctx, fd, "kafka.fetch", func(tr jaeger.Trace) bool {
		return len(tr.Find(fe, fetchRead)) > 0 && len(tr.Find(fe, "fluss.FetchLog")) > 0
	})
	if err != nil {
		t.Fatalf("no kafka.fetch trace reaching fetchsvc and Fluss: %v", err)
	}
	t.Logf("fetch trace:\n%s", ft.Tree())
	read := ft.Find(fe, fetchRead)[0]
	if root := ft.Roots()[0]; !ft.IsAncestor(root.SpanID, read.SpanID) || !ft.IsAncestor(read.SpanID, ft.Find(fe, "fluss.FetchLog")[0].SpanID) {
		t.Errorf("fetch trace is not one chain kafka.fetch > %s > fluss.FetchLog", fetchRead)
	}
}

const fetchRead = "ferry.fetch.v1.FetchService/Read"

// catalogCalled reports whether tr has a span of service for a CatalogService call (in
// single-process mode that service also has frontdoor's spans).
func catalogCalled(tr jaeger.Trace, service string) bool {
	for _, s := range tr.Spans {
		if s.Service == service && strings.HasPrefix(s.Name, "ferry.catalog.v1.CatalogService/") {
			return true
		}
	}
	return false
}

const resolveTopics = "ferry.catalog.v1.CatalogService/ResolveTopics"

func services(ctx context.Context, c *jaeger.Client) []string {
	s, err := c.Services(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	return s
}
