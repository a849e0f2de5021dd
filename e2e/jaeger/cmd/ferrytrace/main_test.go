package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// One produce request: frontdoor's kafka.produce with a nested span, then appendsvc under it.
const answer = `{"result":{"resourceSpans":[
 {"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"frontdoor"}}]},
  "scopeSpans":[{"spans":[
   {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1111111111111111","name":"kafka.produce","kind":2,
    "startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000030000000"},
   {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"4444444444444444","parentSpanId":"1111111111111111","name":"frontdoor.produce_partition","kind":1,
    "startTimeUnixNano":"1700000000001000000","endTimeUnixNano":"1700000000029000000"}]}]},
 {"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"appendsvc"}}]},
  "scopeSpans":[{"spans":[
   {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"2222222222222222","parentSpanId":"4444444444444444","name":"append","kind":2,
    "startTimeUnixNano":"1700000000005000000","endTimeUnixNano":"1700000000025000000"}]}]}]}}`

func TestRun(t *testing.T) {
	var lastQuery atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lastQuery.Store(r.URL.RawQuery)
		switch {
		case r.URL.Query().Get("query.service_name") == "nosuch":
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"httpCode":404,"message":"No traces found"}}`))
		case r.URL.Path == "/api/v3/traces", r.URL.Path == "/api/v3/traces/0102030405060708090a0b0c0d0e0f10":
			w.Write([]byte(answer))
		case r.URL.Path == "/api/v3/services":
			w.Write([]byte(`{"services":["frontdoor"]}`))
		case r.URL.Path == "/api/v3/operations":
			w.Write([]byte(`{"operations":[{"name":"kafka.produce","spanKind":"server"}]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"httpCode":404,"message":"No traces found"}}`))
		}
	}))
	defer srv.Close()

	tests := []struct {
		name     string
		args     []string
		code     int
		want     []string // substrings of stdout
		wantErr  string   // substring of stderr
		wantQuer string   // substring of the search query
	}{
		{name: "search slow produce", args: []string{"-min-duration", "20ms", "-limit", "3"}, want: []string{
			"frontdoor kafka.produce  at +0s  took 30ms  (server)",
			"\n  frontdoor frontdoor.produce_partition",
			"\n    appendsvc append  at +5ms  took 20ms",
			"time in service:  appendsvc 20ms  frontdoor 30ms",
		}, wantQuer: "query.duration_min=20ms"},
		{name: "one trace", args: []string{"-trace", "0102030405060708090a0b0c0d0e0f10"}, want: []string{"trace 0102030405060708090a0b0c0d0e0f10 (3 spans, 30ms)"}},
		{name: "services", args: []string{"-services"}, want: []string{"frontdoor\n  kafka.produce (server)\n"}},
		{name: "nothing found", args: []string{"-service", "nosuch"}, code: 1, wantErr: "no traces of nosuch/kafka.produce"},
		{name: "unknown trace", args: []string{"-trace", strings.Repeat("0b", 16)}, code: 1, wantErr: "trace not found"},
		{name: "bad limit", args: []string{"-limit", "0"}, code: 2, wantErr: "-limit 0 must be positive"},
		{name: "stray argument", args: []string{"x"}, code: 2, wantErr: `unexpected argument "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"-query", srv.URL}, tt.args...), &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.code, errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			if tt.wantErr != "" && !strings.Contains(errb.String(), tt.wantErr) {
				t.Errorf("stderr %q lacks %q", errb.String(), tt.wantErr)
			}
			if tt.wantQuer != "" && !strings.Contains(lastQuery.Load().(string), tt.wantQuer) {
				t.Errorf("query %q lacks %q", lastQuery.Load(), tt.wantQuer)
			}
		})
	}
}
