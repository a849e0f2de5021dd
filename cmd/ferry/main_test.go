package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	appendsvc "github.com/ferrygw/ferry/appendsvc/service"
	catalogsvc "github.com/ferrygw/ferry/catalogsvc/service"
	fetchsvc "github.com/ferrygw/ferry/fetchsvc/service"
	"github.com/ferrygw/ferry/frontdoor/gateway"
	schemasvc "github.com/ferrygw/ferry/schemasvc/service"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/runtime"
	"github.com/ferrygw/ferry/services/testenv"
	transcodesvc "github.com/ferrygw/ferry/transcodesvc/service"
)

var usageLine = regexp.MustCompile(`(?m)^  -(\S+) / (\S+) `)

// settingsOf lists "-flag ENV" for every setting declare and the common
// ones register.
func settingsOf(t *testing.T, name string, declare func(*runtime.Settings)) []string {
	t.Helper()
	s := runtime.NewSettings(name)
	cfg := runtime.DefaultConfig(name, "127.0.0.1:1")
	cfg.Declare(s)
	declare(s)
	var out bytes.Buffer
	s.WriteUsage(&out)
	var lines []string
	for _, m := range usageLine.FindAllStringSubmatch(out.String(), -1) {
		lines = append(lines, m[1]+" "+m[2])
	}
	return lines
}

// The single process takes exactly the settings of the five services,
// under the same flags and environment variables.
func TestSettingsAreTheServices(t *testing.T) {
	var union []string
	for name, declare := range map[string]func(*runtime.Settings){
		"catalogsvc":   func(s *runtime.Settings) { catalogsvc.Declare(s) },
		"transcodesvc": func(s *runtime.Settings) { transcodesvc.Declare(s) },
		"appendsvc":    func(s *runtime.Settings) { appendsvc.Declare(s) },
		"fetchsvc":     func(s *runtime.Settings) { fetchsvc.Declare(s) },
		"schemasvc":    func(s *runtime.Settings) { schemasvc.Declare(s) },
		"frontdoor":    func(s *runtime.Settings) { gateway.Declare(s) },
	} {
		union = append(union, settingsOf(t, name, declare)...)
	}
	slices.Sort(union)
	union = slices.Compact(union)
	got := settingsOf(t, "ferry", func(s *runtime.Settings) { declare(s) })
	slices.Sort(got)
	if !slices.Equal(got, union) {
		t.Errorf("ferry's settings differ from the services':\n got %v\nwant %v", got, union)
	}
	if len(got) < 60 {
		t.Errorf("only %d settings: the usage format changed?", len(got))
	}
}

// The peers' addresses frontdoor has are not used in one process; set, they are named in a
// warning.
func TestIgnoredSettings(t *testing.T) {
	s := runtime.NewSettings("ferry")
	cfg := runtime.DefaultConfig("ferry", defaultListen)
	cfg.Declare(s)
	c := declare(s)
	env := map[string]string{"FERRY_APPEND_ADDR": "appendsvc:7103", "FERRY_FLUSS_BOOTSTRAP": "fluss:9123"}
	if err := s.Parse([]string{"-catalog-addr", "catalogsvc:7101", "-log-level", "debug"}, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := c.ignored(), []string{"-catalog-addr (flag)", "-append-addr (env)"}; !slices.Equal(got, want) {
		t.Errorf("ignored %v, want %v", got, want)
	}
	for _, f := range unusedFlags {
		if s.Source(f) == "" {
			t.Errorf("-%s is no setting of frontdoor's", f)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer collects the process's log.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSingleProcess runs the process against the real Fluss cluster: it
// serves every service's health on its one gRPC port, takes a Kafka
// produce through all the services in-process into a Fluss table, serves
// it back to a consumer, and counts it in each service's metrics.
func TestSingleProcess(t *testing.T) {
	f := testenv.Fluss(t)
	db := f.NewDatabase(t, "single")
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "t", BucketCount: 2,
		Columns:          []testenv.Column{{Name: "id", Type: "BIGINT"}, {Name: "name", Type: "STRING"}},
		CustomProperties: map[string]string{"kafka.enabled": "true"}})
	topic := db + ".t"

	listen, kafka, metrics, registry := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- runtime.RunService(ctx, service("test"), []string{
			"-listen", listen, "-kafka-listen", kafka, "-metrics-addr", metrics, "-registry-listen", registry, "-grpc-plaintext",
			"-fluss-bootstrap", f.Bootstrap, "-databases", db, "-state-dir", t.TempDir(), "-log-level", "warn",
		}, func(string) (string, bool) { return "", false }, &logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-exited:
			if code != 0 {
				t.Errorf("exit code %d; log:\n%s", code, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("no clean stop within 30s")
		}
	})

	conn, err := grpc.NewClient(listen, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(60 * time.Second)
	for {
		hctx, hcancel := context.WithTimeout(ctx, time.Second)
		resp, err := health.Check(hctx, &healthpb.HealthCheckRequest{})
		hcancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not SERVING: %v; log:\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, svc := range []string{catalogv1.CatalogService_ServiceDesc.ServiceName, transcodev1.TranscodeService_ServiceDesc.ServiceName,
		appendv1.AppendService_ServiceDesc.ServiceName, fetchv1.FetchService_ServiceDesc.ServiceName, schemav1.SchemaService_ServiceDesc.ServiceName} {
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %s: %v %v", svc, resp, err)
		}
	}

	// The Schema Registry answers on its own port, deriving the topic's
	// value schema from the table.
	reg, err := http.Get("http://" + registry + "/subjects/" + topic + "-value/versions/latest")
	if err != nil {
		t.Fatal(err)
	}
	derived, _ := io.ReadAll(reg.Body)
	reg.Body.Close()
	if reg.StatusCode != 200 || !strings.Contains(string(derived), `\"name\":\"id\",\"type\":[\"null\",\"long\"]`) {
		t.Errorf("registry latest of %s-value: %d %s", topic, reg.StatusCode, derived)
	}

	// Many small batches, several in flight at once: converters are
	// reused while earlier answers are still on their way to Fluss.
	const n = 3000
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond),
		kgo.ProducerBatchMaxBytes(1500), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
	defer pcancel()
	var recs []*kgo.Record
	for i := range n {
		// Values of different sizes, so a reused buffer would show.
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, `{"id": %d, "name": "%s"}`, i, strings.Repeat("x", i%37))})
	}
	if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v; log:\n%s", err, logs.String())
	}

	rows := f.Scan(t, db, "t", testenv.ScanOptions{Expect: n, Timeout: 60 * time.Second})
	seen := map[int64]bool{}
	for _, r := range rows {
		num, _ := r.Row["id"].(json.Number)
		id, err := num.Int64()
		if err != nil {
			t.Fatalf("row %v: %v", r.Row, err)
		}
		name, _ := r.Row["name"].(string)
		if name != strings.Repeat("x", int(id)%37) {
			t.Fatalf("row %d has name %q", id, name)
		}
		seen[id] = true
	}
	if len(seen) != n || len(rows) != n {
		t.Fatalf("Fluss holds %d rows, %d distinct ids; want %d", len(rows), len(seen), n)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(kafka), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	got := 0
	for got < n && pctx.Err() == nil {
		fs := consumer.PollFetches(pctx)
		if err := fs.Err(); err != nil && pctx.Err() == nil {
			t.Fatalf("consume: %v", err)
		}
		got += fs.NumRecords()
	}
	if got != n {
		t.Fatalf("consumed %d records, want %d", got, n)
	}

	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`ferry_frontdoor_produce_records_total`,
		`ferry_transcode_records_total`, `ferry_append_records_total`,
		`rpc_client_call_duration_seconds_count{otel_scope_name="github.com/ferrygw/ferry/services/runtime/inproc"`,
		`ferry_schema_registrations_total{otel_scope_name="github.com/ferrygw/ferry/schemasvc",otel_scope_schema_url="",otel_scope_version="",outcome="derived"} 1`,
		`http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="200",http_route="/subjects/{subject}/versions/{version}"`,
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
