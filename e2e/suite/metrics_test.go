package suite

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/stack"
)

// TestMetricsCountProducedRecords produces JSON records through the stack and scrapes the
// Prometheus endpoints of frontdoor, every transcodesvc and appendsvc before and after: the
// record counters of each hop must have grown by exactly the produced count, and the gRPC
// metrics otelgrpc records must be there.
func TestMetricsCountProducedRecords(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "metrics")
	topic := topicTable(t, f, db, "counted", jsonBuckets, jsonColumns, jsonProps)

	var transcoders []string
	for i := range e.stack.Config().TranscodePorts {
		name := stack.Transcode
		if i > 0 {
			name = fmt.Sprintf("%s-%d", stack.Transcode, i+1)
		}
		transcoders = append(transcoders, name)
	}
	services := append([]string{stack.Frontdoor, stack.Append}, transcoders...)
	before := map[string]promPage{}
	for _, s := range services {
		before[s] = scrapeService(t, e, s)
	}

	const n = 45
	recs := make([]sent, n)
	for i := range recs {
		recs[i] = jsonRecord("metrics", i)
	}
	cl := newKgo(t, e.kafka, kgo.ProducerLinger(5*time.Millisecond))
	acked := kgoProduce(t, cl, toKgo(topic, recs), 15)
	if len(acked) != n {
		t.Fatalf("%d records acknowledged, want %d", len(acked), n)
	}

	after := map[string]promPage{}
	for _, s := range services {
		after[s] = scrapeService(t, e, s)
	}
	growth := func(service, name string, labels map[string]string) float64 {
		t.Helper()
		v1, ok := after[service].sum(name, labels)
		if !ok {
			t.Errorf("%s: no %s%v in its metrics", service, name, labels)
		}
		v0, _ := before[service].sum(name, labels)
		return v1 - v0
	}

	byTopic := map[string]string{"topic": topic}
	if g := growth(stack.Frontdoor, "ferry_frontdoor_produce_records_total", byTopic); g != n {
		t.Errorf("frontdoor counted %v produced records of %s, want %d", g, topic, n)
	}
	if g := growth(stack.Frontdoor, "ferry_frontdoor_produce_bytes_total", byTopic); g <= 0 {
		t.Errorf("frontdoor produce bytes of %s grew by %v", topic, g)
	}
	okProduce := map[string]string{"api": "Produce", "result": "ok"}
	requests := growth(stack.Frontdoor, "ferry_frontdoor_requests_total", okProduce)
	if requests < 1 || requests > n {
		t.Errorf("frontdoor counted %v successful Produce requests for %d records", requests, n)
	}
	if g := growth(stack.Frontdoor, "ferry_frontdoor_request_duration_seconds_count", map[string]string{"api": "Produce"}); g < requests {
		t.Errorf("produce duration histogram grew by %v, fewer than the %v requests", g, requests)
	}
	if v, _ := after[stack.Frontdoor].sum("ferry_frontdoor_connections", nil); v < 1 {
		t.Errorf("frontdoor reports %v open connections while a client is connected", v)
	}
	var transcoded float64
	for _, s := range transcoders {
		transcoded += growth(s, "ferry_transcode_records_total", nil)
	}
	if transcoded != n {
		t.Errorf("the transcoders %v converted %v records, want %d", transcoders, transcoded, n)
	}
	if g := growth(stack.Append, "ferry_append_records_total", nil); g != n {
		t.Errorf("appendsvc counted %v acknowledged records, want %d", g, n)
	}
	// otelgrpc's RPC metrics come with the meter provider: frontdoor calls, appendsvc serves.
	for _, c := range []struct{ service, name string }{
		{stack.Frontdoor, "rpc_client_call_duration_seconds_count"},
		{stack.Append, "rpc_server_call_duration_seconds_count"},
	} {
		if v, _ := after[c.service].sum(c.name, nil); v < 1 {
			t.Errorf("%s: %s = %v, want RPCs counted", c.service, c.name, v)
		}
	}
	if v, ok := after[stack.Append].sum("go_goroutines", nil); !ok || v < 1 {
		t.Errorf("appendsvc: go_goroutines = %v (present %v)", v, ok)
	}
}

// scrapeService GETs a stack service's /metrics.
func scrapeService(t *testing.T, e *suiteEnv, name string) promPage {
	t.Helper()
	page, err := scrape(e.stack, name)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// scrape GETs a stack service's /metrics.
func scrape(s *stack.Stack, name string) (promPage, error) {
	spec, ok := s.Spec(process(s, name))
	if !ok {
		return nil, fmt.Errorf("stack has no service %s", name)
	}
	port, ok := spec.Ports["metrics"]
	if !ok {
		return nil, fmt.Errorf("%s has no metrics port", name)
	}
	url := "http://" + net.JoinHostPort(s.Config().Host, strconv.Itoa(port)) + "/metrics"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s, %v", name, resp.Status, err)
	}
	page, err := parsePromText(string(body))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", name, err)
	}
	return page, nil
}

// promSample is one line of the Prometheus text format.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

type promPage []promSample

// sum adds the samples called name whose labels include want; ok tells whether any matched.
func (p promPage) sum(name string, want map[string]string) (total float64, ok bool) {
next:
	for _, s := range p {
		if s.name != name {
			continue
		}
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		total += s.value
		ok = true
	}
	return total, ok
}

// parsePromText reads the sample lines of the Prometheus text format (version 0.0.4):
// name{label="value",...} value [timestamp]. Comments and blank lines are skipped.
func parsePromText(text string) (promPage, error) {
	var page promPage
	for i, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parsePromLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", i+1, line, err)
		}
		page = append(page, s)
	}
	return page, nil
}

func parsePromLine(line string) (promSample, error) {
	s := promSample{labels: map[string]string{}}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return s, fmt.Errorf("no metric name")
	}
	s.name, line = line[:end], line[end:]
	if line[0] == '{' {
		line = line[1:]
		for {
			line = strings.TrimLeft(line, ", ")
			if strings.HasPrefix(line, "}") {
				line = line[1:]
				break
			}
			eq := strings.Index(line, `="`)
			if eq <= 0 {
				return s, fmt.Errorf("bad label")
			}
			key := line[:eq]
			line = line[eq+2:]
			var val strings.Builder
			closed := false
			for j := 0; j < len(line); j++ {
				c := line[j]
				if c == '\\' && j+1 < len(line) {
					j++
					switch line[j] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(line[j])
					}
					continue
				}
				if c == '"' {
					line, closed = line[j+1:], true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return s, fmt.Errorf("unterminated label value")
			}
			s.labels[key] = val.String()
		}
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("value: %w", err)
	}
	s.value = v
	return s, nil
}

// TestParsePromText keeps the small parser honest on what the exporter writes.
func TestParsePromText(t *testing.T) {
	page, err := parsePromText("# HELP x_total help\n# TYPE x_total counter\n" +
		`x_total{otel_scope_name="a",topic="db.t"} 3` + "\n" +
		`x_total{topic="q\"uo\\te,}"} 4.5` + "\n" +
		"go_goroutines 12\n" +
		`h_bucket{le="+Inf"} 7 1700000000000` + "\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"x_total", nil, 7.5},
		{"x_total", map[string]string{"topic": "db.t"}, 3},
		{"x_total", map[string]string{"topic": `q"uo\te,}`}, 4.5},
		{"go_goroutines", nil, 12},
		{"h_bucket", map[string]string{"le": "+Inf"}, 7},
	} {
		if got, ok := page.sum(c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, err := parsePromText(`x{a="b} 1`); err == nil {
		t.Error("unterminated label value accepted")
	}
}
