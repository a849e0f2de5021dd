package main

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLeadingID(t *testing.T) {
	p := makePayloads(12)
	for i, rec := range p.recs {
		if id, ok := leadingID(rec); !ok || id != int64(i) {
			t.Errorf("row %d %s: id %d, %t", i, rec, id, ok)
		}
	}
	for in, want := range map[string]int64{
		`{"id":42}`: 42, `{ "id" : 7 , "x":1}`: 7, `{"id":-3,"a":2}`: -3,
		// Ferry's rebuilt values: the columns in table order, no spaces.
		`{"id":1234,"qty":234,"price":308.5,"flag":true,"name":"name-1234"}`: 1234,
	} {
		if id, ok := leadingID([]byte(in)); !ok || id != want {
			t.Errorf("leadingID(%s) = %d, %t; want %d", in, id, ok, want)
		}
	}
	for _, bad := range []string{"", "{}", `{"qty":1,"id":2}`, `{"id":"1"}`, `{"id":12`, `{"id":1x}`, `[{"id":1}]`, `{"id":}`, `{"id":99999999999999999999}`} {
		if id, ok := leadingID([]byte(bad)); ok {
			t.Errorf("leadingID(%s) = %d, accepted", bad, id)
		}
	}
}

// TestTailRow: a tail record is bench row seq with the send time as its id, still one JSON
// object of the table's ten columns.
func TestTailRow(t *testing.T) {
	const sent = 1_764_800_000_123_456_789
	row := tailRow([]byte("keep:"), 17, sent)
	if !strings.HasPrefix(string(row), "keep:") {
		t.Fatalf("tailRow dropped dst: %s", row)
	}
	row = row[len("keep:"):]
	if id, ok := leadingID(row); !ok || id != sent {
		t.Fatalf("id %d, %t; want %d: %s", id, ok, sent, row)
	}
	var got, want map[string]any
	if err := json.Unmarshal(row, &got); err != nil {
		t.Fatalf("%s: %v", row, err)
	}
	if err := json.Unmarshal(appendRow(nil, 17), &want); err != nil {
		t.Fatal(err)
	}
	delete(got, "id")
	delete(want, "id")
	if len(got) != 9 || len(got) != len(want) {
		t.Fatalf("fields %v, want those of %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestOffsetCheck(t *testing.T) {
	c := newOffsetCheck()
	for _, step := range []struct {
		p   int32
		off int64
		ok  bool
	}{{0, 0, true}, {1, 0, true}, {0, 1, true}, {0, 2, true}, {1, 2, false}, {2, 1, false}, {0, 2, false}, {0, 3, true}} {
		if err := c.next(step.p, step.off); (err == nil) != step.ok {
			t.Errorf("partition %d offset %d: err %v, want ok %t", step.p, step.off, err, step.ok)
		}
	}
}

func TestTailRecords(t *testing.T) {
	cfg := &config{TailRate: 2000, TailDuration: 10 * time.Second}
	if total, measured := tailRecords(cfg); total != 22_000 || measured != 20_000 {
		t.Errorf("2000/s for 10 s: total %d measured %d", total, measured)
	}
	cfg = &config{TailRate: 3, TailDuration: 1500 * time.Millisecond}
	if total, measured := tailRecords(cfg); total != 7 || measured != 4 {
		t.Errorf("3/s for 1.5 s: total %d measured %d", total, measured)
	}
}

func TestTailLatencies(t *testing.T) {
	base := time.Unix(1_764_800_000, 0)
	sent := []int64{base.UnixNano(), base.Add(time.Millisecond).UnixNano()}
	arrived := map[int64]time.Time{sent[0]: base.Add(5 * time.Millisecond), sent[1]: base.Add(3 * time.Millisecond), 99: base}
	lat, err := tailLatencies(sent, arrived)
	if err != nil || !slices.Equal(lat, []time.Duration{5 * time.Millisecond, 2 * time.Millisecond}) {
		t.Errorf("latencies %v, %v", lat, err)
	}
	delete(arrived, sent[1])
	if _, err := tailLatencies(sent, arrived); err == nil {
		t.Error("a record that never arrived was not reported")
	}
}

func TestConsumeFlags(t *testing.T) {
	cfg, err := parseConfig(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Consume || cfg.TailRate != 2000 || cfg.TailDuration != 10*time.Second {
		t.Errorf("defaults: consume %t, tail %d/s for %v", cfg.Consume, cfg.TailRate, cfg.TailDuration)
	}
	if consumedProducer(cfg) != producerFranz {
		t.Errorf("consumed producer %q", consumedProducer(cfg))
	}
	cfg.Producers = producerPerfTest
	if consumedProducer(cfg) != producerPerfTest {
		t.Errorf("perf-test only: consumed producer %q", consumedProducer(cfg))
	}
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"-consume=false", "-tail-duration", "0"}, ""},
		{[]string{"-tail-rate", "0"}, "-tail-rate 0"},
		{[]string{"-tail-duration", "-1s"}, "-tail-duration -1s"},
		{[]string{"-tail-duration", "11m"}, "-tail-duration 11m0s"},
		{[]string{"-zk-port", "27105"}, "already used by -zk-port"}, // fetchsvc's gRPC port
	} {
		_, err := parseConfig(tc.args, io.Discard)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("parseConfig(%q) = %v, want %q", tc.args, err, tc.wantErr)
		}
	}
}

func TestWriteConsumeTable(t *testing.T) {
	rs := []result{
		{Phase: phaseConsume, Target: targetKafka, Producer: consumerFranz, Records: 1000, RecPerSec: 400_000, MBPerSec: 74, WirePerRecord: 41.25},
		{Phase: phaseConsume, Target: targetFerry, Producer: consumerFranz, Records: 1000, RecPerSec: 100_000, MBPerSec: 18.5, WirePerRecord: 38},
		{Phase: phaseConsume, Target: targetFluss, Producer: consumerScanner, Records: 1000, RecPerSec: 125_000, MBPerSec: 23.13},
	}
	var b strings.Builder
	if err := writeConsumeTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header + 3 rows, got:\n%s", b.String())
	}
	if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"target", "consumer", "records", "records/s", "MB/s", "wire", "B/record", "Ferry/Kafka", "Ferry/LogScanner"}) {
		t.Errorf("header %q", got)
	}
	if got := strings.Fields(lines[2]); !slices.Equal(got, []string{"ferry", "franz-go", "1000", "100", "000", "18.50", "38.0", "0.25x", "0.80x"}) {
		t.Errorf("Ferry row %q", got)
	}
	if got := strings.Fields(lines[3]); !slices.Equal(got, []string{"fluss", "log-scanner", "1000", "125", "000", "23.13", "-"}) {
		t.Errorf("LogScanner row %q", got)
	}
	// Rounds add the range; a lone Ferry row has no ratios to give.
	b.Reset()
	one := summarize([]result{rs[1], {Phase: phaseConsume, Target: targetFerry, Producer: consumerFranz, Records: 1000, RecPerSec: 90_000}})
	if err := writeConsumeTable(&b, []result{one}); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if got := strings.Fields(lines[1]); !slices.Equal(got, []string{"ferry", "franz-go", "1000", "90", "000", "0.00", "-", "-", "-", "2", "90", "000..100", "000"}) {
		t.Errorf("lone Ferry row with rounds: %q", got)
	}
}

func TestSummarizeAndWriteTail(t *testing.T) {
	ms := time.Millisecond
	rounds := []result{
		{Phase: phaseTail, Target: targetFerry, Producer: "franz-go→franz-go", Records: 20_000, RecPerSec: 2000, P50: 12 * ms, P99: 40 * ms, Max: 60 * ms},
		{Phase: phaseTail, Target: targetFerry, Producer: "franz-go→franz-go", Records: 20_000, RecPerSec: 1999, P50: 10 * ms, P99: 25 * ms, Max: 30 * ms},
		{Phase: phaseTail, Target: targetFerry, Producer: "franz-go→franz-go", Records: 20_000, RecPerSec: 2001, P50: 11 * ms, P99: 35 * ms, Max: 90 * ms},
	}
	m := summarizeTail(rounds)
	if m.P50 != 11*ms || m.P99 != 35*ms || m.Max != 90*ms || m.MinP99 != 25*ms || m.MaxP99 != 40*ms || m.Rounds != 3 {
		t.Errorf("median tail round %+v", m)
	}
	if rounds[0].P50 != 12*ms {
		t.Error("summarizeTail reordered its input")
	}
	var b strings.Builder
	if err := writeTailTable(&b, []result{m}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"target", "clients", "records", "records/s", "p50", "ms", "p99", "ms", "max", "ms", "rounds", "min..max", "p99", "ms"}) {
		t.Errorf("header %q", got)
	}
	if got := strings.Fields(lines[1]); !slices.Equal(got, []string{"ferry", "franz-go→franz-go", "20000", "2", "001", "11.0", "35.0", "90.0", "3", "25.0..40.0"}) {
		t.Errorf("row %q", got)
	}
}

// TestByPhaseAndUsage: results without a phase are produce results; the usage table names each
// row's phase and sums fetchsvc into Ferry's services.
func TestByPhaseAndUsage(t *testing.T) {
	rs := []result{
		{Target: targetFerry, Producer: producerFranz},
		{Phase: phaseConsume, Target: targetFerry, Producer: consumerFranz, Handled: 1_000_000, Procs: []procUsage{
			{Name: "fetchsvc", CPU: 3 * time.Second, PeakRSS: 60 << 20}, {Name: "frontdoor", CPU: time.Second, PeakRSS: 40 << 20},
			{Name: "tablet", CPU: 2 * time.Second, PeakRSS: 200 << 20}}},
		{Phase: phaseTail, Target: targetKafka},
	}
	if got := byPhase(rs, phaseProduce); len(got) != 1 || got[0].Producer != producerFranz {
		t.Errorf("produce results %+v", got)
	}
	if got := byPhase(rs, phaseTail); len(got) != 1 || got[0].Target != targetKafka {
		t.Errorf("tail results %+v", got)
	}
	var b strings.Builder
	if err := writeUsage(&b, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want header + the one row with usage:\n%s", b.String())
	}
	if got := strings.Fields(lines[0])[:4]; !slices.Equal(got, []string{"target", "phase", "client", "ferry"}) {
		t.Errorf("header %q", got)
	}
	if !strings.Contains(lines[1], "consume") || !strings.Contains(lines[1], "4.00 s/M 100 MiB") {
		t.Errorf("consume row without its phase or with fetchsvc left out of Ferry's sum: %q", lines[1])
	}
}
