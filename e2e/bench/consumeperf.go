package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// consumerPerfTest runs Apache Kafka's kafka-consumer-perf-test
// (org.apache.kafka.tools.ConsumerPerformance, from the same kafka-tools jars as the producer
// tool) in its own JVM. The tool always subscribes with a consumer group, so against Ferry it
// also exercises FindCoordinator, JoinGroup and SyncGroup; a fresh group per run reads from the
// earliest offset (the tool's default).
type consumerPerfTest struct {
	java string
	lib  string // directory of the kafka-tools jars
}

// consumerPerfArgs is the tool's command line for reading n records of topic in group.
func consumerPerfArgs(bootstrap, topic, group string, n int64, timeout time.Duration) []string {
	return []string{
		"--bootstrap-server", bootstrap,
		"--topic", topic,
		"--num-records", strconv.FormatInt(n, 10),
		"--group", group,
		// The longest pause allowed between two polls that return records.
		"--timeout", strconv.FormatInt(timeout.Milliseconds(), 10),
		"--command-property", "client.id=ferry-bench-consumer-perf-test",
	}
}

// run reads n records of topic and returns what the tool reported: records/s and MB/s over its
// fetch time (from the group's first assignment to the last record, so JVM start and joining
// the group are outside it, as connecting is for the franz-go consumer).
func (c consumerPerfTest) run(ctx context.Context, target, bootstrap, topic string, n int64) (result, error) {
	group := fmt.Sprintf("ferry-bench-%s-%d", target, time.Now().UnixNano())
	argv := append([]string{"-Xms256m", "-Xmx1g", "-cp", filepath.Join(c.lib, "*"), "org.apache.kafka.tools.ConsumerPerformance"},
		consumerPerfArgs(bootstrap, topic, group, n, time.Minute)...)
	cmd := exec.CommandContext(ctx, c.java, argv...)
	cmd.Cancel = func() error { return cmd.Process.Signal(sigterm) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("kafka-consumer-perf-test against %s: %w\nstdout:\n%s\nstderr:\n%s",
			target, err, lastLines(stdout.String(), 10), lastLines(stderr.String(), 20))
	}
	// The tool exits 0 when it gives up waiting for records; that is a failed run here.
	if strings.Contains(stderr.String(), "Exiting before consuming the expected number") || strings.Contains(stderr.String(), "Exception") {
		return result{}, fmt.Errorf("kafka-consumer-perf-test against %s did not read %d records:\n%s", target, n, lastLines(stderr.String(), 20))
	}
	s, err := parseConsumerPerf(stdout.String())
	if err != nil {
		return result{}, fmt.Errorf("kafka-consumer-perf-test against %s: %w", target, err)
	}
	// It counts whole polls, so it may read a few records more than asked.
	if s.records < n {
		return result{}, fmt.Errorf("kafka-consumer-perf-test against %s read %d records, want %d", target, s.records, n)
	}
	r := result{Phase: phaseConsume, Target: target, Producer: consumerPerf, Records: s.records, RecPerSec: s.recPerSec, MBPerSec: s.mbPerSec}
	if u, ok := exitedUsage("consumer", cmd.ProcessState); ok {
		r.Procs = append(r.Procs, u)
	}
	return r, nil
}

// consumerPerfSummary is the tool's result line, read by the names of its header, e.g.
//
//	start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
//	2026-12-05 12:00:00:000, 2026-12-05 12:00:04:000, 37.2, 9.3, 200000, 50000.0, 3000, 1000, 37.2, 200000.0
type consumerPerfSummary struct {
	records             int64
	recPerSec, mbPerSec float64 // over the fetch time
}

func parseConsumerPerf(out string) (consumerPerfSummary, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 2; i >= 0; i-- {
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), "start.time") {
			continue
		}
		names := splitFields(lines[i])
		values := splitFields(lines[i+1])
		if len(values) != len(names) {
			return consumerPerfSummary{}, fmt.Errorf("result line has %d fields, the header %d:\n%s", len(values), len(names), lastLines(out, 5))
		}
		field := func(name string) (float64, error) {
			for k, n := range names {
				if n == name {
					v, err := strconv.ParseFloat(values[k], 64)
					if err != nil {
						return 0, fmt.Errorf("%s %q: %w", name, values[k], err)
					}
					return v, nil
				}
			}
			return 0, fmt.Errorf("no %s column in %q", name, lines[i])
		}
		var s consumerPerfSummary
		records, err := field("data.consumed.in.nMsg")
		if err != nil {
			return s, err
		}
		if s.recPerSec, err = field("fetch.nMsg.sec"); err != nil {
			return s, err
		}
		if s.mbPerSec, err = field("fetch.MB.sec"); err != nil {
			return s, err
		}
		if records <= 0 || s.recPerSec <= 0 {
			return s, fmt.Errorf("no records read: %q", lines[i+1])
		}
		s.records = int64(records)
		return s, nil
	}
	return consumerPerfSummary{}, fmt.Errorf("no result line in its output:\n%s", lastLines(out, 10))
}

func splitFields(line string) []string {
	fs := strings.Split(line, ",")
	for i := range fs {
		fs[i] = strings.TrimSpace(fs[i])
	}
	return fs
}
