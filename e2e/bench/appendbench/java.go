package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygw/ferry/services/testenv"
)

//go:embed AppendBench.java
var javaSource []byte

// javaBench is AppendBench.java compiled against the Fluss client jars.
type javaBench struct {
	classpath string
	java      string
	opts      []string
}

// compileJava compiles AppendBench.java into dir against the jars in lib
// (tools/install.sh fills .cache/fluss/client-lib).
func compileJava(ctx context.Context, dir, lib, java string, opts []string) (*javaBench, error) {
	src := filepath.Join(dir, "AppendBench.java")
	if err := os.WriteFile(src, javaSource, 0o644); err != nil {
		return nil, err
	}
	cp, err := testenv.CompileWithFlussClient(ctx, lib, dir, src)
	if err != nil {
		return nil, err
	}
	return &javaBench{classpath: cp, java: java, opts: opts}, nil
}

type javaResult struct {
	Rows      int64   `json:"rows"`
	ElapsedMS float64 `json:"elapsed_ms"`
}

// run writes rows into db.table (after warmup rows into db.warmupTable) and
// returns the time Java measured from the first append to the last
// acknowledgement.
func (j *javaBench) run(ctx context.Context, bootstrap, db, table string, rows int64, warmupTable string, warmup int64, conf []string) (time.Duration, error) {
	args := append([]string{}, j.opts...)
	args = append(args, "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", j.classpath, "AppendBench",
		bootstrap, db, table, strconv.FormatInt(rows, 10), warmupTable, strconv.FormatInt(warmup, 10))
	args = append(args, conf...)
	cmd := exec.CommandContext(ctx, j.java, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("java AppendBench: %w\n%s", err, tail(stderr.String(), 30))
	}
	var res javaResult
	line := strings.TrimSpace(stdout.String())
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		return 0, fmt.Errorf("java AppendBench: bad output %q: %w", stdout.String(), err)
	}
	if res.Rows != rows {
		return 0, fmt.Errorf("java AppendBench wrote %d rows, want %d", res.Rows, rows)
	}
	return time.Duration(res.ElapsedMS * float64(time.Millisecond)), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
