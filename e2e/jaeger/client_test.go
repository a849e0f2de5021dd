package jaeger

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A FindTraces answer in the shape Jaeger v1.75's api_v3 gateway writes (OTLP/JSON wrapped in
// "result"): two traces, one spread over two resources, with typed attributes, an event, a link
// and an error status.
const findAnswer = `{"result":{"resourceSpans":[
 {"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"frontdoor"}},{"key":"host.name","value":{"stringValue":"h1"}}]},
  "scopeSpans":[{"scope":{"name":"ferry/frontdoor"},"spans":[
   {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1111111111111111","name":"kafka.produce","kind":2,
    "startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000030000000",
    "attributes":[{"key":"kafka.api_version","value":{"intValue":"9"}},{"key":"ok","value":{"boolValue":true}},
      {"key":"ratio","value":{"doubleValue":0.5}},{"key":"raw","value":{"bytesValue":"AQI="}},
      {"key":"list","value":{"arrayValue":{"values":[{"stringValue":"x"},{"intValue":"2"}]}}},
      {"key":"kv","value":{"kvlistValue":{"values":[{"key":"k","value":{"stringValue":"v"}}]}}},
      {"key":"empty","value":{}}],
    "events":[{"timeUnixNano":"1700000000010000000","name":"retry","attributes":[{"key":"attempt","value":{"intValue":"1"}}]}],
    "status":{"code":2,"message":"boom"}},
   {"traceId":"ffffffffffffffffffffffffffffffff","spanId":"3333333333333333","name":"kafka.metadata","kind":"SPAN_KIND_SERVER",
    "startTimeUnixNano":"1700000001000000000","endTimeUnixNano":"1700000001000500000","status":{"code":"STATUS_CODE_OK"}}
  ]}]},
 {"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"appendsvc"}}]},
  "scopeSpans":[{"scope":{"name":"ferry/appendsvc"},"spans":[
   {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"2222222222222222","parentSpanId":"1111111111111111","name":"fluss.ProduceLog","kind":3,
    "startTimeUnixNano":"1700000000005000000","endTimeUnixNano":"1700000000025000000",
    "links":[{"traceId":"ffffffffffffffffffffffffffffffff","spanId":"3333333333333333"}],"status":{}}
  ]}]}
]}}`

func TestFindTracesDecodes(t *testing.T) {
	var gotQuery url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v3/traces" {
			http.NotFound(w, r)
			return
		}
		gotQuery = r.URL.Query()
		w.Write([]byte(findAnswer))
	}))
	defer srv.Close()
	c := NewClient(srv.URL + "/")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	traces, err := c.FindTraces(ctx, Query{Service: "frontdoor", Operation: "kafka.produce", MinDuration: 20 * time.Millisecond,
		MaxDuration: time.Second, Limit: 7, Lookback: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"query.service_name": "frontdoor", "query.operation_name": "kafka.produce",
		"query.duration_min": "20ms", "query.duration_max": "1s", "query.num_traces": "7",
	} {
		if got := gotQuery.Get(k); got != want {
			t.Errorf("query %s = %q, want %q", k, got, want)
		}
	}
	min, err1 := time.Parse(time.RFC3339Nano, gotQuery.Get("query.start_time_min"))
	max, err2 := time.Parse(time.RFC3339Nano, gotQuery.Get("query.start_time_max"))
	if err1 != nil || err2 != nil || max.Sub(min) < 2*time.Hour || max.Sub(min) > 2*time.Hour+2*time.Minute {
		t.Errorf("time window %q..%q does not span the 2h lookback", gotQuery.Get("query.start_time_min"), gotQuery.Get("query.start_time_max"))
	}

	if len(traces) != 2 {
		t.Fatalf("%d traces, want 2", len(traces))
	}
	// A query without a limit still sends one: Jaeger's memory store rejects a search depth of 0.
	if _, err := c.Traces(ctx, "frontdoor", 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := gotQuery.Get("query.num_traces"); got != "20" {
		t.Errorf("default query.num_traces = %q, want 20", got)
	}
	if got := gotQuery.Get("query.operation_name"); got != "" {
		t.Errorf("query.operation_name = %q without an operation", got)
	}
	// Newest first.
	if traces[0].TraceID != strings.Repeat("f", 32) || traces[1].TraceID != "0102030405060708090a0b0c0d0e0f10" {
		t.Fatalf("trace order = %s, %s", traces[0].TraceID, traces[1].TraceID)
	}
	tr := traces[1]
	if got := tr.Services(); !reflect.DeepEqual(got, []string{"appendsvc", "frontdoor"}) {
		t.Errorf("services = %v", got)
	}
	if len(tr.Spans) != 2 || tr.Spans[0].Name != "kafka.produce" || tr.Spans[1].Name != "fluss.ProduceLog" {
		t.Fatalf("spans not grouped or ordered by start: %v", tr.Spans)
	}
	root, child := tr.Spans[0], tr.Spans[1]
	want := Span{
		TraceID: tr.TraceID, SpanID: "1111111111111111", Service: "frontdoor", Name: "kafka.produce",
		Kind: SpanKindServer, Start: time.Unix(1_700_000_000, 0), Duration: 30 * time.Millisecond,
		Attributes: map[string]any{
			"kafka.api_version": int64(9), "ok": true, "ratio": 0.5, "raw": []byte{1, 2},
			"list": []any{"x", int64(2)}, "kv": map[string]any{"k": "v"}, "empty": nil,
		},
		Resource:   map[string]any{"service.name": "frontdoor", "host.name": "h1"},
		Scope:      "ferry/frontdoor",
		StatusCode: StatusError, StatusMessage: "boom",
		Events: []Event{{Name: "retry", Time: time.Unix(1_700_000_000, 10_000_000), Attributes: map[string]any{"attempt": int64(1)}}},
	}
	if !reflect.DeepEqual(root, want) {
		t.Errorf("root span\n got %#v\nwant %#v", root, want)
	}
	if child.ParentSpanID != root.SpanID || child.Kind != SpanKindClient || child.Duration != 20*time.Millisecond ||
		len(child.Links) != 1 || child.Links[0].SpanID != "3333333333333333" || child.StatusCode != StatusUnset {
		t.Errorf("child span = %#v", child)
	}
	if other := traces[0].Spans[0]; other.Kind != SpanKindServer || other.StatusCode != StatusOK {
		t.Errorf("enum names not decoded: kind %v status %v", other.Kind, other.StatusCode)
	}
	if !tr.IsAncestor(root.SpanID, child.SpanID) || tr.IsAncestor(child.SpanID, root.SpanID) {
		t.Error("IsAncestor wrong")
	}
	if roots := tr.Roots(); len(roots) != 1 || roots[0].SpanID != root.SpanID {
		t.Errorf("roots = %v", roots)
	}
	if d := tr.Duration(); d != 30*time.Millisecond {
		t.Errorf("trace duration = %v", d)
	}
	tree := tr.Tree()
	if !strings.Contains(tree, "frontdoor kafka.produce") || !strings.Contains(tree, "\n  appendsvc fluss.ProduceLog  at +5ms  took 20ms") ||
		!strings.Contains(tree, "ERROR boom") {
		t.Errorf("tree:\n%s", tree)
	}
}

func TestClientErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		call    func(c *Client, ctx context.Context) error
		wantErr string // substring; empty means success
		is      error
	}{
		{name: "empty search is no traces", status: 404, body: `{"error":{"httpCode":404,"message":"No traces found"}}`,
			call: func(c *Client, ctx context.Context) error {
				tr, err := c.Traces(ctx, "s", 0, 0)
				if err == nil && len(tr) != 0 {
					return errors.New("want no traces")
				}
				return err
			}},
		{name: "unknown trace id", status: 404, body: `{"error":{"httpCode":404,"message":"No traces found"}}`,
			call: func(c *Client, ctx context.Context) error {
				_, err := c.Trace(ctx, strings.Repeat("0a", 16))
				return err
			}, wantErr: "trace not found", is: ErrTraceNotFound},
		{name: "404 from something else stays an error", status: 404, body: "404 page not found",
			call:    func(c *Client, ctx context.Context) error { _, err := c.Traces(ctx, "s", 0, 0); return err },
			wantErr: "HTTP 404: 404 page not found"},
		{name: "bad request message", status: 400, body: `{"error":{"httpCode":400,"message":"malformed parameter query.num_traces"}}`,
			call:    func(c *Client, ctx context.Context) error { _, err := c.Traces(ctx, "s", 0, 0); return err },
			wantErr: "HTTP 400: malformed parameter query.num_traces"},
		{name: "garbage JSON", status: 200, body: `{"result":`,
			call:    func(c *Client, ctx context.Context) error { _, err := c.Traces(ctx, "s", 0, 0); return err },
			wantErr: "decoding answer"},
		{name: "bad span id", status: 200, body: `{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"xyz"}]}]}]}}`,
			call:    func(c *Client, ctx context.Context) error { _, err := c.Traces(ctx, "s", 0, 0); return err },
			wantErr: `span id "xyz" is not 16 hex digits`},
		{name: "bad int attribute", status: 200, body: `{"result":{"resourceSpans":[{"resource":{"attributes":[{"key":"n","value":{"intValue":"x1"}}]}}]}}`,
			call:    func(c *Client, ctx context.Context) error { _, err := c.Traces(ctx, "s", 0, 0); return err },
			wantErr: "bad int64"},
		{name: "malformed trace id argument", status: 200, body: `{}`,
			call:    func(c *Client, ctx context.Context) error { _, err := c.Trace(ctx, "abc"); return err },
			wantErr: "not 32 hex digits"},
		{name: "query validation", status: 200, body: `{}`,
			call: func(c *Client, ctx context.Context) error {
				_, err := c.FindTraces(ctx, Query{Service: "s", MinDuration: time.Second, MaxDuration: time.Millisecond})
				return err
			},
			wantErr: "Query.MaxDuration"},
		{name: "missing service", status: 200, body: `{}`,
			call:    func(c *Client, ctx context.Context) error { _, err := c.FindTraces(ctx, Query{}); return err },
			wantErr: "Query.Service is empty"},
		{name: "services sorted", status: 200, body: `{"services":["b","a"]}`,
			call: func(c *Client, ctx context.Context) error {
				s, err := c.Services(ctx)
				if err == nil && !reflect.DeepEqual(s, []string{"a", "b"}) {
					return errors.New("unsorted")
				}
				return err
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := tt.call(NewClient(srv.URL), ctx)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			case tt.is != nil && !errors.Is(err, tt.is):
				t.Fatalf("error %v is not %v", err, tt.is)
			}
		})
	}
}

func TestWaitForTrace(t *testing.T) {
	// The first polls find a partial trace; the predicate must hold out for the complete one.
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) < 3 {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"httpCode":404,"message":"No traces found"}}`))
			return
		}
		w.Write([]byte(findAnswer))
	}))
	defer srv.Close()
	c := NewClient(srv.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr, err := c.WaitForTrace(ctx, "frontdoor", "kafka.produce", func(tr Trace) bool { return len(tr.Find("appendsvc", "")) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	if tr.TraceID != "0102030405060708090a0b0c0d0e0f10" || polls.Load() < 3 {
		t.Errorf("trace %s after %d polls", tr.TraceID, polls.Load())
	}

	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	_, err = c.WaitForTrace(short, "frontdoor", "", func(Trace) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "no trace of frontdoor/* matched") || !strings.Contains(err.Error(), "2 candidate traces") {
		t.Errorf("timeout error = %v", err)
	}
	if _, err := c.WaitForTrace(context.Background(), "frontdoor", "", nil); err == nil {
		t.Error("WaitForTrace without a deadline must be refused")
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"ok", Options{Dir: "/tmp/x"}, ""},
		{"ok explicit ports", Options{Dir: "/tmp/x", OTLPPort: 4317, QueryPort: 16686, QueryGRPCPort: 16685}, ""},
		{"no dir", Options{}, "Options.Dir"},
		{"port range", Options{Dir: "d", QueryPort: 70000}, "Options.QueryPort 70000"},
		{"negative port", Options{Dir: "d", OTLPPort: -1}, "Options.OTLPPort -1"},
		{"same ports", Options{Dir: "d", OTLPPort: 5000, QueryPort: 5000}, "Options.QueryPort 5000 is also Options.OTLPPort"},
		{"grpc clash", Options{Dir: "d", QueryPort: 5000, QueryGRPCPort: 5000}, "Options.QueryGRPCPort"},
		{"negative max traces", Options{Dir: "d", MaxTraces: -1}, "Options.MaxTraces -1"},
		{"max traces below search depth", Options{Dir: "d", MaxTraces: 100}, "Options.MaxTraces 100 must be 0"},
		{"ok max traces", Options{Dir: "d", MaxTraces: 101}, ""},
		{"ui assets without index.html", Options{Dir: "d", UIAssets: "/nonexistent"}, "Options.UIAssets"},
		{"negative timeout", Options{Dir: "d", ReadyTimeout: -time.Second}, "Options.ReadyTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestBinaryPathEnv(t *testing.T) {
	t.Setenv(EnvBinary, "/nonexistent/jaeger")
	if _, err := BinaryPath(); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("missing %s target: err = %v, want ErrNotInstalled", EnvBinary, err)
	}
	t.Setenv(EnvBinary, t.TempDir())
	if _, err := BinaryPath(); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Errorf("directory as binary: err = %v", err)
	}
}

func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"PATH=/bin", "OTEL_EXPORTER_OTLP_ENDPOINT=x", "FERRY_JAEGER_MAX_TRACES=1", "FERRY_OTHER=1"})
	if !reflect.DeepEqual(got, []string{"PATH=/bin", "FERRY_OTHER=1"}) {
		t.Errorf("childEnv = %v", got)
	}
}

func TestConfigListenersOnLoopback(t *testing.T) {
	// Every endpoint in the shipped config must default to 127.0.0.1: Jaeger's own defaults are
	// all interfaces.
	cfg := string(Config)
	n := 0
	for _, line := range strings.Split(cfg, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || !strings.HasPrefix(line, "endpoint:") {
			continue
		}
		n++
		if !strings.Contains(line, ":-127.0.0.1:") {
			t.Errorf("config endpoint not defaulting to loopback: %s", line)
		}
	}
	if n != 3 {
		t.Errorf("config has %d endpoints, want 3 (OTLP gRPC, query HTTP, query gRPC)", n)
	}
	for _, env := range []string{EnvOTLPEndpoint, EnvQueryHTTPEndpoint, EnvQueryGRPCEndpoint, EnvMaxTraces, EnvLogLevel, EnvUIAssets} {
		if !strings.Contains(cfg, "${env:"+env+":-") {
			t.Errorf("config does not read %s", env)
		}
	}
}
