package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // substring; empty = valid
	}{
		{"defaults", nil, ""},
		{"small run", []string{"-records", "20000", "-targets", "ferry", "-producers", "franz-go"}, ""},
		{"zero records", []string{"-records", "0"}, "-records 0"},
		{"bad partitions", []string{"-partitions", "0"}, "-partitions 0"},
		{"bad codec", []string{"-compression", "brotli"}, `-compression "brotli"`},
		{"bad arrow codec", []string{"-arrow-compression", "lz4"}, `-arrow-compression "lz4"`},
		{"bad fetch codec", []string{"-fetch-compression", "snappy"}, `-fetch-compression "snappy"`},
		{"small batch", []string{"-batch-size", "10"}, "-batch-size 10"},
		{"bad in-flight", []string{"-max-in-flight", "0"}, "-max-in-flight 0"},
		{"bad warmup", []string{"-warmup", "-2"}, "-warmup -2"},
		{"no warm-up rounds", []string{"-warmup-rounds", "0"}, ""},
		{"negative warm-up rounds", []string{"-warmup-rounds", "-1"}, "-warmup-rounds -1"},
		{"one core per service", []string{"-service-gomaxprocs", "1"}, ""},
		{"single process", []string{"-single"}, ""},
		{"external Fluss", []string{"-external-fluss", "127.0.0.1:9123", "-single"}, ""},
		{"external Fluss without Ferry", []string{"-external-fluss", "127.0.0.1:9123", "-targets", "kafka"}, "-external-fluss"},
		{"external Fluss with tablets", []string{"-external-fluss", "127.0.0.1:9123", "-tablets", "2"}, "-external-fluss"},
		{"negative GOMAXPROCS", []string{"-service-gomaxprocs", "-1"}, "-service-gomaxprocs -1"},
		{"unknown target", []string{"-targets", "kafka,pulsar"}, `-targets: unknown "pulsar"`},
		{"empty targets", []string{"-targets", ""}, "-targets: empty"},
		{"repeated producer", []string{"-producers", "franz-go,franz-go"}, `-producers: "franz-go" named twice`},
		{"run timeout above timeout", []string{"-timeout", "1m", "-run-timeout", "2m"}, "-run-timeout 2m0s"},
		{"port clash", []string{"-kafka-port", "27092"}, "-kafka-port 27092: already used by -ferry-kafka-port"},
		{"service port clash", []string{"-zk-port", "27101"}, "already used by -zk-port"},
		{"low port", []string{"-tablet-port", "80"}, "-tablet-port 80"},
		{"bad log level", []string{"-log-level", "trace"}, `-log-level "trace"`},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.args, io.Discard)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("parseConfig(%q): %v", tc.args, err)
				}
				if cfg == nil {
					t.Fatal("no config")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("parseConfig(%q) = %v, want an error containing %q", tc.args, err, tc.wantErr)
			}
		})
	}
}

func TestWarmupRecords(t *testing.T) {
	for _, tc := range []struct{ records, warmup, want int64 }{
		{200_000, -1, 100_000}, {1, -1, 0}, {1000, 0, 0}, {1000, 5000, 5000},
	} {
		c := config{Records: tc.records, Warmup: tc.warmup}
		if got := c.warmupRecords(); got != tc.want {
			t.Errorf("records %d warmup %d: got %d, want %d", tc.records, tc.warmup, got, tc.want)
		}
	}
}

func TestRounds(t *testing.T) {
	c := config{Rounds: 3, WarmupRounds: 1}
	if got := c.producedRounds(); got != 4 {
		t.Errorf("producedRounds = %d, want 4", got)
	}
	xs := []string{"a", "b", "c"}
	for round, want := range map[int][]string{0: {"c", "b", "a"}, 1: {"a", "b", "c"}, 2: {"c", "b", "a"}, 3: {"a", "b", "c"}} {
		if got := inRoundOrder(round, xs); !slices.Equal(got, want) {
			t.Errorf("round %d: %q, want %q", round, got, want)
		}
	}
	if !slices.Equal(xs, []string{"a", "b", "c"}) {
		t.Errorf("inRoundOrder changed its argument: %q", xs)
	}
}

func TestPerfTestArgs(t *testing.T) {
	cfg, err := parseConfig([]string{"-records", "1000", "-warmup", "200", "-compression", "zstd", "-batch-size", "32768"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	args := perfTest{cfg: cfg, payload: "/tmp/p.jsonl"}.args("127.0.0.1:1", "t")
	joined := strings.Join(args, " ")
	for _, want := range []string{"--num-records 1200", "--warmup-records 200", "--throughput -1", "--payload-file /tmp/p.jsonl",
		"acks=all", "enable.idempotence=false", "compression.type=zstd", "linger.ms=5", "batch.size=32768", "max.in.flight.requests.per.connection=5", "--bootstrap-server 127.0.0.1:1"} {
		if !strings.Contains(joined, want) {
			t.Errorf("args %q lack %q", joined, want)
		}
	}
	cfg.Warmup = 0
	if joined := strings.Join(perfTest{cfg: cfg}.args("h:1", "t"), " "); strings.Contains(joined, "--warmup-records") || !strings.Contains(joined, "--num-records 1000") {
		t.Errorf("without warm-up: %q", joined)
	}
}

func TestParsePerfSummary(t *testing.T) {
	out := `5000 records sent, 1000.0 records/sec (0.18 MB/sec), 612.3 ms avg latency, 900.0 ms max latency.
Warmup first 1000 records. Steady state results will print after the complete test summary.
6000 records sent, 2511.236000 records/sec (0.45 MB/sec), 610.12 ms avg latency, 1020.00 ms max latency, 598 ms 50th, 990 ms 95th, 1011 ms 99th, 1019 ms 99.9th.
5000 steady state records sent, 3000.500000 records/sec (0.54 MB/sec), 500.00 ms avg latency, 800.00 ms max latency, 450 ms 50th, 700 ms 95th, 790 ms 99th, 800 ms 99.9th.
`
	whole, err := parsePerfSummary(out, false)
	if err != nil {
		t.Fatal(err)
	}
	want := perfSummary{records: 6000, recPerSec: 2511.236, mbPerSec: 0.45, p50: 598 * time.Millisecond, p99: 1011 * time.Millisecond}
	if whole != want {
		t.Errorf("whole run: got %+v, want %+v", whole, want)
	}
	steady, err := parsePerfSummary(out, true)
	if err != nil {
		t.Fatal(err)
	}
	want = perfSummary{records: 5000, recPerSec: 3000.5, mbPerSec: 0.54, p50: 450 * time.Millisecond, p99: 790 * time.Millisecond}
	if steady != want {
		t.Errorf("steady state: got %+v, want %+v", steady, want)
	}
	// Only the interval lines (the tool died before its summary): an error, not zeros.
	if _, err := parsePerfSummary(strings.SplitN(out, "\n", 2)[0], false); err == nil || !strings.Contains(err.Error(), "no summary line") {
		t.Errorf("interval line only: err %v", err)
	}
	if _, err := parsePerfSummary(strings.Join(strings.Split(out, "\n")[:3], "\n"), true); err == nil || !strings.Contains(err.Error(), "steady-state") {
		t.Errorf("no steady-state line: err %v", err)
	}
}

func TestParseJavaTiming(t *testing.T) {
	ms, rows, err := parseJavaTiming("ScanBench", "some log line\n{\"rows\": 20000, \"elapsed_ms\": 123.456}\n")
	if err != nil || rows != 20000 || ms != 123.456 {
		t.Errorf("got %v %v %v", ms, rows, err)
	}
	ms, first, rows, err := parseScanTiming("ScanBench", `{"rows": 5, "elapsed_ms": 12.5, "first_row_ms": 3.25}`)
	if err != nil || rows != 5 || ms != 12.5 || first != 3.25 {
		t.Errorf("ScanBench line: got %v %v %v %v", ms, first, rows, err)
	}
	for _, bad := range []string{"", "{}", `{"rows": 1}`, `{"rows": 1, "elapsed_ms": 0}`, `{"rows": 1, "elapsed_ms": 1, "x": 2}`, "not json"} {
		if _, _, err := parseJavaTiming("AppendBench", bad); err == nil {
			t.Errorf("parseJavaTiming(%q): no error", bad)
		}
	}
}

func TestWriteTable(t *testing.T) {
	rs := []result{
		{Target: targetKafka, Producer: producerPerfTest, Records: 1000, RecPerSec: 100_000, MBPerSec: 18.5, P50: 3 * time.Millisecond, P99: 12500 * time.Microsecond, HasLatency: true},
		{Target: targetKafka, Producer: producerFranz, Records: 1000, RecPerSec: 200_000, MBPerSec: 37, HasLatency: true},
		{Target: targetFerry, Producer: producerPerfTest, Records: 1000, RecPerSec: 50_000, MBPerSec: 9.25, HasLatency: true},
		{Target: targetFerry, Producer: producerFranz, Records: 1000, RecPerSec: 300_000, MBPerSec: 55.5, HasLatency: true},
		{Target: targetFluss, Producer: producerJava, Records: 1000, RecPerSec: 400_000, MBPerSec: 74},
		{Target: targetBridge, Producer: producerFranz, Records: 1000, RecPerSec: 150_000, MBPerSec: 27.75, P50: 40 * time.Millisecond, P99: 90 * time.Millisecond, HasLatency: true},
	}
	var b strings.Builder
	if err := writeTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 7 {
		t.Fatalf("want header + 6 rows, got:\n%s", b.String())
	}
	fields := func(i int) []string { return strings.Fields(lines[i]) }
	// header
	if got := fields(0); !slices.Equal(got, []string{"target", "producer", "records", "records/s", "MB/s", "p50", "ms", "p99", "ms", "Ferry/Kafka", "Ferry/Kafka+bridge", "Ferry/Fluss-Java"}) {
		t.Errorf("header %q", got)
	}
	checks := []struct {
		line int
		want []string
	}{
		{1, []string{"kafka", "perf-test", "1000", "100", "000", "18.50", "3.0", "12.5"}},
		{3, []string{"ferry", "perf-test", "1000", "50", "000", "9.25", "0.0", "0.0", "0.50x", "0.33x", "0.12x"}},
		{4, []string{"ferry", "franz-go", "1000", "300", "000", "55.50", "0.0", "0.0", "1.50x", "2.00x", "0.75x"}},
		{5, []string{"fluss", "java-writer", "1000", "400", "000", "74.00", "-", "-"}},
		{6, []string{"kafka+bridge", "franz-go", "1000", "150", "000", "27.75", "40.0", "90.0"}},
	}
	for _, c := range checks {
		if got := fields(c.line); !slices.Equal(got, c.want) {
			t.Errorf("line %d: got %q, want %q", c.line, got, c.want)
		}
	}

	// Without Kafka and Java results the ratios are "-", not a division by zero.
	b.Reset()
	if err := writeTable(&b, rs[3:4]); err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(strings.Split(b.String(), "\n")[1]); !slices.Equal(got[len(got)-3:], []string{"-", "-", "-"}) {
		t.Errorf("lone Ferry row: %q", got)
	}
}

func TestRatioAndFormatting(t *testing.T) {
	for _, tc := range []struct {
		a, b float64
		want string
	}{{3, 2, "1.50x"}, {1, 3, "0.33x"}, {0, 2, "-"}, {2, 0, "-"}} {
		if got := ratio(tc.a, tc.b); got != tc.want {
			t.Errorf("ratio(%v, %v) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1 000", 1234567: "1 234 567", -12345: "-12 345"} {
		if got := groupThousands(n); got != want {
			t.Errorf("groupThousands(%d) = %q, want %q", n, got, want)
		}
	}
	rps, mbps := throughput(1000, 2<<20, 2*time.Second)
	if rps != 500 || mbps != 1 {
		t.Errorf("throughput = %v, %v", rps, mbps)
	}
	if rps, mbps := throughput(1, 1, 0); rps != 0 || mbps != 0 {
		t.Errorf("zero duration: %v %v", rps, mbps)
	}
}

func TestPercentile(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond // reversed: percentile sorts
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := percentile(ds, tc.q); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("empty: %v", got)
	}
}

// TestRows checks the JSON rows against the values AppendBench.row(i) writes: Ferry must turn
// record i into exactly the row the Java writer appends as row i.
func TestRows(t *testing.T) {
	p := makePayloads(200_001)
	if avg := p.avgSize(); avg < 170 || avg > 230 {
		t.Errorf("average record size %.1f bytes, want about 200", avg)
	}
	for _, i := range []int64{0, 7, 10, 123, 199_999, 200_000} {
		var row map[string]any
		dec := json.NewDecoder(strings.NewReader(string(p.recs[i])))
		dec.UseNumber()
		if err := dec.Decode(&row); err != nil {
			t.Fatalf("row %d %s: %v", i, p.recs[i], err)
		}
		var payload [16]byte
		binary.LittleEndian.PutUint64(payload[:8], uint64(i))
		binary.LittleEndian.PutUint64(payload[8:], uint64(i*31))
		name := any(nil)
		if i%10 != 0 {
			name = "name-" + itoa(i)
		}
		want := map[string]any{
			"id": json.Number(itoa(i)), "qty": json.Number(itoa(i % 1000)), "flag": i%2 == 0, "name": name,
			"category": "cat-" + itoa(i%8),
			"ts":       time.UnixMilli(tsBase + i).UTC().Format("2006-01-02T15:04:05.000Z"),
			"amount":   decimal2(i % 1_000_000),
			"payload":  base64.StdEncoding.EncodeToString(payload[:]),
			"day":      time.Unix((19000+i%365)*86400, 0).UTC().Format("2006-01-02"),
		}
		price, err := row["price"].(json.Number).Float64()
		if err != nil || price != float64(i)*0.25 {
			t.Errorf("row %d price %v (%v), want %v", i, row["price"], err, float64(i)*0.25)
		}
		delete(row, "price")
		if len(row) != len(want) {
			t.Errorf("row %d has %d fields besides price, want %d: %s", i, len(row), len(want), p.recs[i])
		}
		for k, v := range want {
			if row[k] != v {
				t.Errorf("row %d %s = %#v, want %#v", i, k, row[k], v)
			}
		}
	}
	// Records share one buffer but must not overlap.
	if cap(p.recs[0]) != len(p.recs[0]) {
		t.Errorf("record 0 has spare capacity %d: appending to it would overwrite record 1", cap(p.recs[0]))
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// decimal2 is the reference for appendDecimal2, written differently on purpose.
func decimal2(unscaled int64) string {
	s := itoa(unscaled)
	for len(s) < 3 {
		s = "0" + s
	}
	return s[:len(s)-2] + "." + s[len(s)-2:]
}

func TestWriteFile(t *testing.T) {
	p := makePayloads(3)
	path := t.TempDir() + "/p.jsonl"
	if err := p.writeFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[2] != string(p.recs[2]) {
		t.Errorf("file lines %q", lines)
	}
}

func TestSummarize(t *testing.T) {
	rounds := []result{
		{Target: targetFerry, Producer: producerFranz, RecPerSec: 300, P50: 3 * time.Millisecond},
		{Target: targetFerry, Producer: producerFranz, RecPerSec: 100, P50: 1 * time.Millisecond},
		{Target: targetFerry, Producer: producerFranz, RecPerSec: 200, P50: 2 * time.Millisecond},
	}
	got := summarize(rounds)
	if got.RecPerSec != 200 || got.P50 != 2*time.Millisecond || got.Rounds != 3 || got.MinRecPerSec != 100 || got.MaxRecPerSec != 300 {
		t.Errorf("odd count: %+v", got)
	}
	if rounds[0].RecPerSec != 300 {
		t.Error("summarize reordered its input")
	}
	// Even count: the lower middle round, so the row is a real measurement, not an average.
	if got := summarize(rounds[:2]); got.RecPerSec != 100 || got.MaxRecPerSec != 300 {
		t.Errorf("even count: %+v", got)
	}
	if got := summarize(nil); got.Rounds != 0 {
		t.Errorf("no rounds: %+v", got)
	}

	var b strings.Builder
	if err := writeTable(&b, []result{summarize(rounds)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[0]), "rounds  min..max records/s") {
		t.Errorf("header without the rounds columns: %q", lines[0])
	}
	if f := strings.Fields(lines[1]); !slices.Equal(f[len(f)-2:], []string{"3", "100..300"}) {
		t.Errorf("row without rounds and range: %q", lines[1])
	}
}

func TestParseRowCounts(t *testing.T) {
	got, err := parseRowCounts("{\"a\": 3, \"b_c\": 0}\n", []string{"a", "b_c"})
	if err != nil || got["a"] != 3 || got["b_c"] != 0 {
		t.Errorf("got %v, %v", got, err)
	}
	for _, tc := range []struct {
		out    string
		tables []string
	}{
		{"", []string{"a"}},
		{`{"a": 1}`, []string{"a", "b"}},    // a table missing
		{`{"a": 1, "x": 2}`, []string{"a"}}, // an extra one
		{`{"a": 1, "x": 2}`, []string{"a", "b"}},
		{`{"a": "1"}`, []string{"a"}},
	} {
		if _, err := parseRowCounts(tc.out, tc.tables); err == nil {
			t.Errorf("parseRowCounts(%q, %q): no error", tc.out, tc.tables)
		}
	}
}

// Ferry's CPU column sums its services' processes, or the one process of -single, and never a
// Fluss server or a client.
func TestIsFerry(t *testing.T) {
	for name, want := range map[string]bool{
		"frontdoor": true, "transcodesvc-2": true, "appendsvc": true, "ferry": true,
		"tablet": false, "coordinator": false, "kafka-broker": false,
	} {
		if isFerry(name) != want {
			t.Errorf("isFerry(%q) = %v", name, !want)
		}
	}
}
