package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/services/testenv"
)

// bridgeSource is Bridge.java: a Kafka consumer that parses each JSON record and appends it with
// the Fluss AppendWriter, the pipeline a user would run instead of Ferry (a sink job).
//
//go:embed Bridge.java
var bridgeSource []byte

// bridgeKafkaJars are the jars Bridge.java needs beside the Fluss client: kafka-clients 4.4 and
// its codecs, from the kafka-tools jars install.sh resolved from Maven Central.
var bridgeKafkaJars = []string{"kafka-clients-", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-api-"}

// bridge runs Bridge.java.
type bridge struct {
	java      string
	classpath string
	log       *slog.Logger
}

// compileBridge compiles Bridge.java into dir against the Fluss client jars and kafka-clients.
func compileBridge(ctx context.Context, root, dir, java string, log *slog.Logger) (*bridge, error) {
	flussLib := filepath.Join(root, ".cache", "fluss", "client-lib")
	if _, err := os.Stat(filepath.Join(flussLib, testenv.FlussClientJar)); err != nil {
		return nil, fmt.Errorf("no Fluss client jars in %s (run tools/install.sh): %w", flussLib, err)
	}
	toolsLib := filepath.Join(root, ".cache", "bench", "kafka-tools-lib")
	cp := []string{filepath.Join(flussLib, "*")}
	for _, prefix := range bridgeKafkaJars {
		m, _ := filepath.Glob(filepath.Join(toolsLib, prefix+"*.jar"))
		if len(m) != 1 {
			return nil, fmt.Errorf("want one %s*.jar in %s (e2e/bench/install.sh), found %d", prefix, toolsLib, len(m))
		}
		cp = append(cp, m[0])
	}
	src := filepath.Join(dir, "Bridge.java")
	if err := os.WriteFile(src, bridgeSource, 0o644); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	classpath := strings.Join(cp, string(os.PathListSeparator))
	if out, err := exec.CommandContext(ctx, "javac", "--release", "17", "-nowarn", "-d", dir, "-cp", classpath, src).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("javac Bridge.java: %w\n%s", err, out)
	}
	return &bridge{java: java, classpath: dir + string(os.PathListSeparator) + classpath, log: log}, nil
}

// bridgeLine is one line Bridge.java prints on stdout (see its comment).
type bridgeLine struct {
	Ready     bool     `json:"ready"`
	Warm      *int64   `json:"warm"`
	Rows      *int64   `json:"rows"`
	EndUnixMS *float64 `json:"end_unix_ms"`
	P50MS     *int64   `json:"p50_ms"`
	P99MS     *int64   `json:"p99_ms"`
}

// parseBridgeLine reads one of Bridge.java's lines; anything else is an error (the client
// libraries log to stderr, never to stdout).
func parseBridgeLine(line string) (bridgeLine, error) {
	var l bridgeLine
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, fmt.Errorf("java Bridge: bad line %q: %w", line, err)
	}
	n := 0
	for _, set := range []bool{l.Ready, l.Warm != nil, l.Rows != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return l, fmt.Errorf("java Bridge: bad line %q: want one of ready, warm, rows", line)
	}
	if l.Rows != nil && (l.EndUnixMS == nil || l.P50MS == nil || l.P99MS == nil) {
		return l, fmt.Errorf("java Bridge: bad line %q: rows without end_unix_ms, p50_ms and p99_ms", line)
	}
	return l, nil
}

// run measures the bridge once: Bridge.java starts at the end of topic on the reference broker
// at kafkaAddr; a franz-go producer (the bench's producer settings) sends the warm-up records,
// which the bridge appends and flushes; then the clock starts and the producer sends
// cfg.Records records; it stops when the bridge's flush of the last row returned (the row is
// readable in Fluss). p50/p99 are the bridge's, from each record's Kafka timestamp to its
// append's acknowledgement.
func (b *bridge) run(ctx context.Context, cfg *config, kafkaAddr, topic, flussBootstrap, db, table string, p payloads) (result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	warmup, rows := cfg.warmupRecords(), cfg.Records
	args := []string{"-Xmx1g", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", b.classpath, "Bridge",
		kafkaAddr, topic, strconv.Itoa(cfg.Partitions), flussBootstrap, db, table,
		strconv.FormatInt(warmup, 10), strconv.FormatInt(rows, 10), strconv.FormatInt(cfg.RunTimeout.Milliseconds(), 10)}
	cmd := exec.CommandContext(ctx, b.java, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(sigterm) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	// Bridge.java exits once stdin is closed, after its last line, so its CPU can be read.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return result{}, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	lines := make(chan bridgeLine, 4) // it prints three lines: the reader never blocks
	readErr := make(chan error, 1)
	go func() { readErr <- readBridgeLines(stdout, lines) }()
	failed := func(err error) (result, error) {
		cancel()
		_ = cmd.Wait()
		return result{}, fmt.Errorf("kafka+bridge: %w\n%s", err, lastLines(stderr.String(), 30))
	}
	next := func(what string) (bridgeLine, error) {
		select {
		case l, ok := <-lines:
			if !ok {
				return l, fmt.Errorf("bridge ended before %s: %v", what, <-readErr)
			}
			return l, nil
		case <-ctx.Done():
			return bridgeLine{}, fmt.Errorf("waiting for the bridge's %s: %w", what, ctx.Err())
		}
	}
	if l, err := next("ready"); err != nil || !l.Ready {
		return failed(fmt.Errorf("want ready first, got %+v (%v)", l, err))
	}
	// The bridge's CPU from here to its last row: a sink job runs for long, so its JVM start
	// and connecting are not a per-record cost (its JIT compiling during the warm-up is).
	win, err := startWindow([]watched{{name: "bridge", pid: cmd.Process.Pid}})
	if err != nil {
		return failed(fmt.Errorf("the bridge's /proc: %w", err))
	}

	opts, err := franzOpts(cfg, kafkaAddr, topic)
	if err != nil {
		return failed(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return failed(err)
	}
	defer cl.Close()
	if err := franzWarm(ctx, cl); err != nil {
		return failed(err)
	}
	if warmup > 0 {
		if _, _, err := sendAll(ctx, cl, p, warmup); err != nil {
			return failed(fmt.Errorf("franz-go warm-up: %w", err))
		}
	}
	if l, err := next("warm-up"); err != nil || l.Warm == nil || *l.Warm != warmup {
		return failed(fmt.Errorf("want warm %d, got %+v (%v)", warmup, l, err))
	}
	start := time.Now()
	if _, _, err := sendAll(ctx, cl, p, rows); err != nil {
		return failed(fmt.Errorf("franz-go: %w", err))
	}
	done, err := next("last row")
	if err != nil || done.Rows == nil || *done.Rows != rows {
		return failed(fmt.Errorf("want rows %d, got %+v (%v)", rows, done, err))
	}
	usage, err := win.end()
	if err != nil {
		return failed(fmt.Errorf("the bridge's /proc: %w", err))
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		return result{}, fmt.Errorf("kafka+bridge: java Bridge: %w\n%s", err, lastLines(stderr.String(), 30))
	}
	end := time.UnixMicro(int64(*done.EndUnixMS * 1e3))
	elapsed := end.Sub(start)
	if elapsed <= 0 {
		return result{}, fmt.Errorf("kafka+bridge: the last row was acknowledged %v before the first record was sent", -elapsed)
	}
	r := result{Target: targetBridge, Producer: producerFranz, Records: rows, HasLatency: true,
		P50: time.Duration(*done.P50MS) * time.Millisecond, P99: time.Duration(*done.P99MS) * time.Millisecond}
	r.RecPerSec, r.MBPerSec = throughput(rows, p.bytes, elapsed)
	r.Procs = usage
	return r, nil
}

// readBridgeLines sends every line of r, parsed, to lines and closes it at the end.
func readBridgeLines(r io.Reader, lines chan<- bridgeLine) error {
	defer close(lines)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l, err := parseBridgeLine(sc.Text())
		if err != nil {
			// Keep reading, so the process is not blocked on a full pipe.
			_, _ = io.Copy(io.Discard, r)
			return err
		}
		lines <- l
	}
	return sc.Err()
}
