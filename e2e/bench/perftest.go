package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// perfTest runs Apache Kafka's kafka-producer-perf-test (org.apache.kafka.tools.ProducerPerformance
// from org.apache.kafka:kafka-tools, installed by install.sh) in its own JVM.
type perfTest struct {
	java    string
	lib     string // directory of the kafka-tools jars
	payload string // --payload-file
	cfg     *config
}

// args is the tool's command line for one run (without the JVM part).
func (p perfTest) args(bootstrap, topic string) []string {
	c := p.cfg
	args := []string{
		"--bootstrap-server", bootstrap,
		"--topic", topic,
		"--num-records", strconv.FormatInt(c.Records+c.warmupRecords(), 10),
		"--payload-file", p.payload,
		"--throughput", "-1",
		// The tool logs a line per interval; one every few seconds keeps the output readable.
		"--reporting-interval", "5000",
		"--command-property",
		"acks=all",
		// Ferry refuses idempotent produce for now (docs/kafka-api.md); Kafka runs the same way.
		"enable.idempotence=false",
		"compression.type=" + c.Compression,
		"linger.ms=" + strconv.Itoa(c.LingerMS),
		"batch.size=" + strconv.Itoa(c.BatchSize),
		"max.in.flight.requests.per.connection=" + strconv.Itoa(c.MaxInFlight),
		"client.id=ferry-bench-perf-test",
	}
	if w := c.warmupRecords(); w > 0 {
		// The tool then prints a second summary, of the records after the warm-up.
		args = append(args, "--warmup-records", strconv.FormatInt(w, 10))
	}
	return args
}

// run produces cfg.Records records and returns what the tool reported in its summary line.
func (p perfTest) run(ctx context.Context, target, bootstrap, topic string) (result, error) {
	argv := append([]string{"-Xms256m", "-Xmx1g", "-cp", filepath.Join(p.lib, "*"), "org.apache.kafka.tools.ProducerPerformance"},
		p.args(bootstrap, topic)...)
	cmd := exec.CommandContext(ctx, p.java, argv...)
	// Bounded: if the context ends, the JVM gets SIGTERM and 5 s later SIGKILL.
	cmd.Cancel = func() error { return cmd.Process.Signal(sigterm) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("kafka-producer-perf-test against %s: %w\nstdout:\n%s\nstderr:\n%s",
			target, err, lastLines(stdout.String(), 10), lastLines(stderr.String(), 20))
	}
	s, err := parsePerfSummary(stdout.String(), p.cfg.warmupRecords() > 0)
	if err != nil {
		return result{}, fmt.Errorf("kafka-producer-perf-test against %s: %w\nstderr:\n%s", target, err, lastLines(stderr.String(), 20))
	}
	if s.records != p.cfg.Records {
		return result{}, fmt.Errorf("kafka-producer-perf-test against %s sent %d records, want %d", target, s.records, p.cfg.Records)
	}
	// The tool prints per-record errors ("Error when sending message ...") and still counts
	// the record as sent: a benchmark of failed sends must not pass.
	if strings.Contains(stderr.String(), "Exception") || strings.Contains(stdout.String(), "Error when sending") {
		return result{}, fmt.Errorf("kafka-producer-perf-test against %s reported send errors:\n%s%s", target,
			lastLines(stdout.String(), 10), lastLines(stderr.String(), 20))
	}
	r := result{Target: target, Producer: producerPerfTest, Records: s.records, RecPerSec: s.recPerSec,
		MBPerSec: s.mbPerSec, P50: s.p50, P99: s.p99, HasLatency: true}
	if u, ok := exitedUsage("producer", cmd.ProcessState); ok {
		r.Procs = append(r.Procs, u)
	}
	return r, nil
}

// perfSummary is one of the tool's summary lines, e.g.
// "20000 records sent, 9950.200000 records/sec (1.90 MB/sec), 612.34 ms avg latency, 1020.00 ms
// max latency, 598 ms 50th, 990 ms 95th, 1011 ms 99th, 1019 ms 99.9th."
// With --warmup-records a second one follows, "N steady state records sent, ...", covering
// only the records after the warm-up.
type perfSummary struct {
	records             int64
	recPerSec, mbPerSec float64
	p50, p99            time.Duration
}

var perfSummaryRE = regexp.MustCompile(`(?m)^(\d+)( steady state)? records sent, ([0-9.]+) records/sec \(([0-9.]+) MB/sec\), [0-9.]+ ms avg latency, [0-9.]+ ms max latency, (\d+) ms 50th, \d+ ms 95th, (\d+) ms 99th, \d+ ms 99\.9th\.`)

// parsePerfSummary finds the whole-run summary line in the tool's stdout, or with steady the
// steady-state one.
func parsePerfSummary(out string, steady bool) (perfSummary, error) {
	var m []string
	for _, cand := range perfSummaryRE.FindAllStringSubmatch(out, -1) {
		if (cand[2] != "") == steady {
			m = cand
		}
	}
	if m == nil {
		kind := "summary"
		if steady {
			kind = "steady-state summary"
		}
		return perfSummary{}, fmt.Errorf("no %s line in its output:\n%s", kind, lastLines(out, 10))
	}
	var s perfSummary
	var err error
	if s.records, err = strconv.ParseInt(m[1], 10, 64); err != nil {
		return s, fmt.Errorf("summary records %q: %w", m[1], err)
	}
	if s.recPerSec, err = strconv.ParseFloat(m[3], 64); err != nil {
		return s, fmt.Errorf("summary records/sec %q: %w", m[3], err)
	}
	if s.mbPerSec, err = strconv.ParseFloat(m[4], 64); err != nil {
		return s, fmt.Errorf("summary MB/sec %q: %w", m[4], err)
	}
	p50, _ := strconv.ParseInt(m[5], 10, 64) // \d+ cannot fail to parse short of overflow
	p99, _ := strconv.ParseInt(m[6], 10, 64)
	s.p50, s.p99 = time.Duration(p50)*time.Millisecond, time.Duration(p99)*time.Millisecond
	return s, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
