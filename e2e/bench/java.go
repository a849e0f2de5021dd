package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygw/ferry/services/testenv"
)

// rowCountSource is RowCount.java: Fluss ListOffsets through the official client.
//
//go:embed RowCount.java
var rowCountSource []byte

// scanBenchSource is ScanBench.java: the official Fluss LogScanner reading a table back.
//
//go:embed ScanBench.java
var scanBenchSource []byte

// upsertBenchSource is UpsertBench.java: the official Fluss UpsertWriter upserting the same rows
// into a primary-key table.
//
//go:embed UpsertBench.java
var upsertBenchSource []byte

// javaWriter is appendbench's AppendBench.java (e2e/bench/appendbench), compiled here
// against the Fluss client jars: the official Fluss AppendWriter appending the same rows
// (row(i) there is the row appendRow(i) here describes in JSON). Reusing the file keeps one
// definition of the Java side for both benchmarks.
type javaWriter struct {
	java      string
	classpath string
	log       *slog.Logger
}

// compileJava compiles AppendBench.java from the repository, RowCount.java and ScanBench.java
// into dir.
func compileJava(ctx context.Context, root, dir, java string, log *slog.Logger) (*javaWriter, error) {
	src := filepath.Join(root, "e2e", "bench", "appendbench", "AppendBench.java")
	rc := filepath.Join(dir, "RowCount.java")
	if err := os.WriteFile(rc, rowCountSource, 0o644); err != nil {
		return nil, err
	}
	sb := filepath.Join(dir, "ScanBench.java")
	if err := os.WriteFile(sb, scanBenchSource, 0o644); err != nil {
		return nil, err
	}
	ub := filepath.Join(dir, "UpsertBench.java")
	if err := os.WriteFile(ub, upsertBenchSource, 0o644); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cp, err := testenv.CompileWithFlussClient(ctx, filepath.Join(root, ".cache", "fluss", "client-lib"), dir, src, rc, sb, ub)
	if err != nil {
		return nil, err
	}
	return &javaWriter{java: java, classpath: cp, log: log}, nil
}

// run appends rows 0..rows-1 to db.table (after warmup rows into db.warmupTable in the same
// JVM, so the JIT has compiled the write path) and returns the time AppendBench measured from
// the first append until flush() returned. bytes is the rows' JSON size, for MB/s. With
// producer producerJavaUpsert, UpsertBench upserts the same rows into primary-key tables.
func (j *javaWriter) run(ctx context.Context, producer, bootstrap, db, table string, rows, bytes int64, warmupTable string, warmup int64) (result, error) {
	if warmup == 0 {
		warmupTable = "-"
	}
	class, target := "AppendBench", targetFluss
	if producer == producerJavaUpsert {
		class, target = "UpsertBench", targetFlussPK
	}
	args := []string{"-Xmx1g", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", j.classpath, class,
		bootstrap, db, table, strconv.FormatInt(rows, 10), warmupTable, strconv.FormatInt(warmup, 10)}
	cmd := exec.CommandContext(ctx, j.java, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(sigterm) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("java %s: %w\n%s", class, err, lastLines(stderr.String(), 30))
	}
	ms, n, err := parseJavaTiming(class, stdout.String())
	if err != nil {
		return result{}, err
	}
	if n != rows {
		return result{}, fmt.Errorf("java %s wrote %d rows, want %d", class, n, rows)
	}
	r := result{Target: target, Producer: producer, Records: rows}
	r.RecPerSec, r.MBPerSec = throughput(rows, bytes, time.Duration(ms*float64(time.Millisecond)))
	// The writer JVM does what Ferry's services do for Kafka producers: its cost is theirs.
	if u, ok := exitedUsage(producer, cmd.ProcessState); ok {
		r.Procs = append(r.Procs, u)
	}
	return r, nil
}

// scan reads rows rows of db.table from the beginning of every bucket with the Fluss
// LogScanner (after warmup rows of db.warmupTable in the same JVM) and returns the time ScanBench
// measured from the first poll to the rows-th row. bytes is the JSON size the rows stand for,
// for MB/s.
func (j *javaWriter) scan(ctx context.Context, bootstrap, db, table string, rows, bytes int64, warmupTable string, warmup int64,
	timeout time.Duration) (result, error) {
	if warmup == 0 {
		warmupTable = "-"
	}
	args := []string{"-Xmx1g", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", j.classpath, "ScanBench",
		bootstrap, db, table, strconv.FormatInt(rows, 10), warmupTable, strconv.FormatInt(warmup, 10),
		strconv.FormatInt(timeout.Milliseconds(), 10)}
	cmd := exec.CommandContext(ctx, j.java, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(sigterm) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("java ScanBench %s: %w\n%s", table, err, lastLines(stderr.String(), 30))
	}
	ms, firstMS, n, err := parseScanTiming("ScanBench", stdout.String())
	if err != nil {
		return result{}, err
	}
	j.log.Info("log-scanner timing", "table", table, "elapsed_ms", ms, "first_row_ms", firstMS)
	if n != rows {
		return result{}, fmt.Errorf("java ScanBench read %d rows, want %d", n, rows)
	}
	r := result{Phase: phaseConsume, Target: targetFluss, Producer: consumerScanner, Records: rows}
	r.RecPerSec, r.MBPerSec = throughput(rows, bytes, time.Duration(ms*float64(time.Millisecond)))
	if u, ok := exitedUsage(consumerScanner, cmd.ProcessState); ok {
		r.Procs = append(r.Procs, u)
	}
	return r, nil
}

// rowCounts returns how many rows each named table of db holds (RowCount.java), retrying each
// until its buckets answer or timeout passes, so it also waits for new tables' leaders.
func (j *javaWriter) rowCounts(ctx context.Context, bootstrap, db string, timeout time.Duration, tables []string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second) // + JVM start and connect
	defer cancel()
	args := append([]string{"-Xmx256m", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", j.classpath, "RowCount",
		bootstrap, db, strconv.FormatInt(timeout.Milliseconds(), 10)}, tables...)
	cmd := exec.CommandContext(ctx, j.java, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(sigterm) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("java RowCount %s: %w\n%s", strings.Join(tables, " "), err, lastLines(stderr.String(), 20))
	}
	return parseRowCounts(stdout.String(), tables)
}

// parseRowCounts reads RowCount's {"table": rows, ...} and checks it names exactly tables.
func parseRowCounts(out string, tables []string) (map[string]int64, error) {
	var counts map[string]int64
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &counts); err != nil {
		return nil, fmt.Errorf("java RowCount: bad output %q: %w", out, err)
	}
	if len(counts) != len(tables) {
		return nil, fmt.Errorf("java RowCount: %d counts for %d tables: %q", len(counts), len(tables), out)
	}
	for _, t := range tables {
		if _, ok := counts[t]; !ok {
			return nil, fmt.Errorf("java RowCount: no count for %s: %q", t, out)
		}
	}
	return counts, nil
}

// parseJavaTiming reads the last stdout line of AppendBench or ScanBench (tool),
// {"rows": N, "elapsed_ms": ms} (ScanBench adds "first_row_ms", see parseScanBench).
func parseJavaTiming(tool, out string) (elapsedMS float64, rows int64, err error) {
	elapsedMS, _, rows, err = parseScanTiming(tool, out)
	return elapsedMS, rows, err
}

// parseScanTiming is parseJavaTiming that also returns first_row_ms (0 where absent).
func parseScanTiming(tool, out string) (elapsedMS, firstRowMS float64, rows int64, err error) {
	line := strings.TrimSpace(out)
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	var res struct {
		Rows       *int64   `json:"rows"`
		ElapsedMS  *float64 `json:"elapsed_ms"`
		FirstRowMS float64  `json:"first_row_ms"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(line)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil || res.Rows == nil || res.ElapsedMS == nil {
		return 0, 0, 0, fmt.Errorf("java %s: bad output %q (want {\"rows\": N, \"elapsed_ms\": ms})", tool, out)
	}
	if *res.ElapsedMS <= 0 {
		return 0, 0, 0, fmt.Errorf("java %s: elapsed_ms %v: must be positive", tool, *res.ElapsedMS)
	}
	return *res.ElapsedMS, res.FirstRowMS, *res.Rows, nil
}
