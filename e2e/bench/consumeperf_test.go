package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseConsumerPerf(t *testing.T) {
	// As ConsumerPerformance 4.4 prints it (header, then one line), after a warning of the client.
	out := `[2026-12-05 12:30:01,123] WARN something the client logged
start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-12-05 12:30:00:000, 2026-12-05 12:30:04:000, 37.2509, 9.3127, 200123, 50030.7500, 3000, 1000, 37.2509, 200123.0000
`
	s, err := parseConsumerPerf(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.records != 200123 || s.recPerSec != 200123 || s.mbPerSec != 37.2509 {
		t.Errorf("parsed %+v, want the fetch.* figures and 200123 records", s)
	}
	for name, bad := range map[string]string{
		"no result":     "start.time, end.time\n",
		"nothing":       "",
		"short line":    "start.time, end.time, data.consumed.in.nMsg, fetch.MB.sec, fetch.nMsg.sec\n2026, 2026, 5\n",
		"no fetch rate": "start.time, data.consumed.in.nMsg, fetch.MB.sec\nx, 5, 1.0\n",
		"not a number":  "start.time, data.consumed.in.nMsg, fetch.MB.sec, fetch.nMsg.sec\nx, five, 1.0, 2.0\n",
		"nothing read":  "start.time, data.consumed.in.nMsg, fetch.MB.sec, fetch.nMsg.sec\nx, 0, 0.0, 0.0\n",
	} {
		if _, err := parseConsumerPerf(bad); err == nil {
			t.Errorf("%s: parsed %q without an error", name, bad)
		}
	}
}

func TestConsumerPerfArgs(t *testing.T) {
	args := consumerPerfArgs("127.0.0.1:27092", "db.franz_go", "g1", 200_000, time.Minute)
	for _, want := range [][]string{
		{"--bootstrap-server", "127.0.0.1:27092"}, {"--topic", "db.franz_go"}, {"--num-records", "200000"},
		{"--group", "g1"}, {"--timeout", "60000"},
	} {
		i := slices.Index(args, want[0])
		if i < 0 || i+1 >= len(args) || args[i+1] != want[1] {
			t.Errorf("args %q: want %s %s", args, want[0], want[1])
		}
	}
}

func TestConsumersFlag(t *testing.T) {
	cfg, err := parseConfig(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.consumes(consumerFranz) || !cfg.consumes(consumerPerf) {
		t.Errorf("default consumers %q: want franz-go and perf-test", cfg.Consumers)
	}
	cfg.Consume = false
	if cfg.consumes(consumerFranz) || cfg.consumes(consumerPerf) {
		t.Error("-consume=false still consumes")
	}
	cfg, err = parseConfig([]string{"-consumers", "perf-test"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.consumes(consumerFranz) || !cfg.consumes(consumerPerf) {
		t.Errorf("-consumers perf-test: franz-go %t, perf-test %t", cfg.consumes(consumerFranz), cfg.consumes(consumerPerf))
	}
	for _, bad := range []string{"", "kcat", "perf-test,perf-test"} {
		if _, err := parseConfig([]string{"-consumers", bad}, io.Discard); err == nil || !strings.Contains(err.Error(), "-consumers") {
			t.Errorf("-consumers %q: %v, want an error naming -consumers", bad, err)
		}
	}
}

func TestParseBridgeLine(t *testing.T) {
	l, err := parseBridgeLine(`{"ready": true}`)
	if err != nil || !l.Ready {
		t.Errorf("ready: %+v %v", l, err)
	}
	l, err = parseBridgeLine(`{"warm": 100000}`)
	if err != nil || l.Warm == nil || *l.Warm != 100000 {
		t.Errorf("warm: %+v %v", l, err)
	}
	l, err = parseBridgeLine(`{"rows": 200000, "end_unix_ms": 1764936000123.456, "p50_ms": 41, "p99_ms": 95}`)
	if err != nil || l.Rows == nil || *l.Rows != 200000 || *l.EndUnixMS != 1764936000123.456 || *l.P50MS != 41 || *l.P99MS != 95 {
		t.Errorf("rows: %+v %v", l, err)
	}
	for _, bad := range []string{
		``, `SLF4J: no binding`, `{}`, `{"ready": false}`, `{"ready": true, "warm": 5}`,
		`{"rows": 5}`, `{"rows": 5, "end_unix_ms": 1.0}`, `{"rows": 5, "end_unix_ms": 1, "p50_ms": 1, "p99_ms": 2, "extra": 1}`,
	} {
		if _, err := parseBridgeLine(bad); err == nil {
			t.Errorf("%q: parsed without an error", bad)
		}
	}
}
