package main

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPKChangelog(t *testing.T) {
	cfg, err := parseConfig([]string{"-records", "10", "-warmup", "4", "-rounds", "2", "-warmup-rounds", "1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// Three rounds. franz-go: round 1 sends ids 0..3 (4 new) then 0..9 (0..3 known: 8, 4..9 new:
	// 6), 18 entries; rounds 2 and 3 find every key known: 2 × 14 each.
	if lo, hi := pkChangelog(cfg, producerFranz); lo != 18+28+28 || hi != lo {
		t.Errorf("franz-go: %d..%d, want 74", lo, hi)
	}
	// UpsertBench: 10 new, then 20 and 20.
	if lo, hi := pkChangelog(cfg, producerJavaUpsert); lo != 50 || hi != lo {
		t.Errorf("java-upsert: %d..%d, want 50", lo, hi)
	}
	// Its warm-up table: 4 new, then 8 and 8.
	if lo, hi := pkChangelog(cfg, ""); lo != 20 || hi != lo {
		t.Errorf("java-upsert warm-up: %d..%d, want 20", lo, hi)
	}
	// perf-test: 42 upserts of random keys among 10: 2×42 minus 1..10 new keys.
	if lo, hi := pkChangelog(cfg, producerPerfTest); lo != 74 || hi != 83 {
		t.Errorf("perf-test: %d..%d, want 74..83", lo, hi)
	}
	// A warm-up longer than the records wraps around the ids, as franz-go sends them.
	cfg.Warmup, cfg.WarmupRounds, cfg.Rounds = 25, 0, 1
	if lo, _ := pkChangelog(cfg, producerFranz); lo != 10+2*15+2*10 {
		t.Errorf("franz-go, long warm-up: %d, want 60", lo)
	}
}

func TestWithKeys(t *testing.T) {
	p := makePayloads(12)
	k := p.withKeys()
	if p.keys != nil {
		t.Error("withKeys changed its receiver")
	}
	if len(k.keys) != 12 || string(k.keys[0]) != `{"id":0}` || string(k.keys[11]) != `{"id":11}` {
		t.Fatalf("keys %q", k.keys)
	}
	for i, key := range k.keys {
		id, ok := leadingID(k.recs[i])
		if !ok || string(key) != `{"id":`+strconv.FormatInt(id, 10)+`}` {
			t.Errorf("record %d: key %s for value %.20s", i, key, k.recs[i])
		}
	}
	// Appending to one key must not overwrite the next.
	_ = append(k.keys[0], 'x')
	if string(k.keys[1]) != `{"id":1}` {
		t.Errorf("keys share capacity: %q", k.keys[1])
	}
}

func TestWriteTablePK(t *testing.T) {
	rs := []result{
		{Target: targetKafka, Producer: producerFranz, Records: 1000, RecPerSec: 200_000, MBPerSec: 37, HasLatency: true},
		{Target: targetFerryPK, Producer: producerFranz, Records: 1000, RecPerSec: 100_000, MBPerSec: 18.5, HasLatency: true},
		{Target: targetFluss, Producer: producerJava, Records: 1000, RecPerSec: 400_000, MBPerSec: 74},
		{Target: targetFlussPK, Producer: producerJavaUpsert, Records: 1000, RecPerSec: 125_000, MBPerSec: 23},
	}
	var b strings.Builder
	if err := writeTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	line := strings.Fields(strings.Split(b.String(), "\n")[2])
	// Against Kafka's franz-go row, no bridge, and the UpsertWriter (not the AppendWriter).
	if got := strings.Join(line[len(line)-3:], " "); got != "0.50x - 0.80x" {
		t.Errorf("ferry-pk ratios %q, want 0.50x - 0.80x:\n%s", got, b.String())
	}
}

func TestWriteSummary(t *testing.T) {
	rs := []result{
		{Target: targetKafka, Producer: producerFranz, RecPerSec: 400_000, P50: 20 * time.Millisecond, P99: 40 * time.Millisecond, HasLatency: true,
			Handled: 1_000_000, Procs: []procUsage{{Name: "kafka-broker", CPU: 600 * time.Millisecond}, {Name: "franz-go", CPU: time.Second}}},
		{Target: targetFerry, Producer: producerFranz, RecPerSec: 200_000, HasLatency: true, Handled: 2_000_000, JobsPerRequest: 1.25, Procs: []procUsage{
			{Name: "frontdoor", CPU: time.Second}, {Name: "transcodesvc", CPU: 2 * time.Second}, {Name: "tablet", CPU: time.Second},
			{Name: "franz-go", CPU: 3 * time.Second}}},
		{Target: targetBridge, Producer: producerFranz, RecPerSec: 100_000, HasLatency: true, Handled: 1_000_000, Procs: []procUsage{
			{Name: "kafka-broker", CPU: time.Second}, {Name: "bridge", CPU: 3 * time.Second}, {Name: "tablet", CPU: time.Second},
			{Name: "franz-go", CPU: time.Second}, {Name: "frontdoor", CPU: 500 * time.Millisecond}}},
		{Target: targetFluss, Producer: producerJava, RecPerSec: 500_000, Handled: 1_000_000, Procs: []procUsage{{Name: "java-writer", CPU: time.Second}}},
	}
	var b strings.Builder
	if err := writeSummary(&b, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("want header + 4 rows:\n%s", b.String())
	}
	// Ferry: services 3 s over 2 M = 1.50 s/M, pipeline (with the tablet, without the client)
	// 2.00; 0.50x Kafka, 2.00x the bridge, 0.40x the Java writer in records/s; 1.50 ÷ 0.60 =
	// 2.50x the broker's CPU, 2.00 ÷ 5.00 = 0.40x the bridge pipeline's.
	want := []string{"ferry", "franz-go", "200", "000", "0.0", "0.0", "1.50", "2.00", "0.50x", "2.00x", "0.40x", "2.50x", "0.40x", "1.25"}
	if got := strings.Fields(lines[2]); !slices.Equal(got, want) {
		t.Errorf("ferry row %q, want %q", got, want)
	}
	// Kafka: no Ferry services, the broker alone is the pipeline; no ratios.
	if got := strings.Fields(lines[1]); !slices.Equal(got, []string{"kafka", "franz-go", "400", "000", "20.0", "40.0", "-", "0.60"}) {
		t.Errorf("kafka row %q", got)
	}
	// Ferry's services idle during the bridge's run: shown, but not part of its pipeline.
	if got := strings.Fields(lines[3]); !slices.Equal(got[len(got)-2:], []string{"0.50", "5.00"}) {
		t.Errorf("bridge row %q: want Ferry's idle 0.50 s/M apart from a 5.00 s/M pipeline", got)
	}
}

func TestParseRequestJobs(t *testing.T) {
	text := `# HELP ferry_append_request_jobs Jobs (Kafka batches) per Fluss ProduceLog request sent, each attempt counted
# TYPE ferry_append_request_jobs histogram
ferry_append_request_jobs_bucket{otel_scope_name="x",le="1"} 900
ferry_append_request_jobs_bucket{otel_scope_name="x",le="+Inf"} 1000
ferry_append_request_jobs_sum{otel_scope_name="x"} 1250
ferry_append_request_jobs_count{otel_scope_name="x"} 1000
ferry_append_request_jobs_sum 2.5e+02
ferry_append_request_jobs_count 100
ferry_append_jobs_total{fluss_error_code="0"} 1500
`
	rj, err := parseRequestJobs(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if rj.jobs != 1500 || rj.requests != 1100 {
		t.Errorf("parsed %+v, want 1500 jobs in 1100 requests (both series summed)", rj)
	}
	if got := rj.perRequest(requestJobs{jobs: 300, requests: 100}); got != 1.2 {
		t.Errorf("per request %v, want 1.2", got)
	}
	if got := rj.perRequest(rj); got != 0 {
		t.Errorf("no requests between the readings: %v, want 0", got)
	}
	for _, bad := range []string{"", "ferry_append_jobs_total 5\n", "ferry_append_request_jobs_sum{a=\"b\"}\n", "ferry_append_request_jobs_count x\n"} {
		if _, err := parseRequestJobs(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: parsed without an error", bad)
		}
	}
}
