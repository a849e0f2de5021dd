// Package goldentest runs FlussGolden.java, a few lines around Fluss 0.9.1's
// own Java writer classes, so Go tests can compare Ferry's log batches, KV
// batches, bucket assignment and partition names with what the Fluss Java
// client produces for the same rows. Fixtures are generated on every test
// run, never stored.
package goldentest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// Env names: FERRY_TEST_FLUSS_CLIENT_CLASSPATH overrides where the Fluss
// client jars are (default: <repo>/.cache/fluss/client-lib/*, which
// tools/install.sh fills); FERRY_TEST_REQUIRE_FLUSS=1 turns a missing Java
// or jar into a failure instead of a skip.
const (
	EnvClasspath = "FERRY_TEST_FLUSS_CLIENT_CLASSPATH"
	EnvRequire   = "FERRY_TEST_REQUIRE_FLUSS"
)

// Gen is a compiled FlussGolden.
type Gen struct {
	classpath string
}

// New compiles FlussGolden.java into a temporary directory, or skips the
// test when Java or the Fluss client jars are missing.
func New(t testing.TB) *Gen {
	t.Helper()
	cp, err := clientClasspath()
	if err == nil {
		_, err = exec.LookPath("javac")
	}
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("goldentest: %v", err)
		}
		t.Skipf("goldentest: %v", err)
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "FlussGolden.java")
	classes := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "javac", "--release", "17", "-nowarn", "-d", classes, "-cp", cp, src).CombinedOutput()
	if err != nil {
		t.Fatalf("goldentest: javac: %v\n%s", err, out)
	}
	return &Gen{classpath: classes + string(os.PathListSeparator) + cp}
}

func clientClasspath() (string, error) {
	if cp := os.Getenv(EnvClasspath); cp != "" {
		return cp, nil
	}
	_, self, _, _ := runtime.Caller(0)
	for dir := filepath.Dir(self); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			lib := filepath.Join(dir, ".cache", "fluss", "client-lib")
			if _, err := os.Stat(filepath.Join(lib, "fluss-client-0.9.1-incubating.jar")); err != nil {
				return "", fmt.Errorf("no Fluss client jars in %s (run tools/install.sh or set %s)", lib, EnvClasspath)
			}
			return filepath.Join(lib, "*"), nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("repository root (go.work) not found; set %s", EnvClasspath)
		}
	}
}

// Request is one question for the generator; build it with Batch or Bucket.
type Request struct{ line string }

// BatchSpec is what a BatchRequest asks the Java builder for.
type BatchSpec struct {
	SchemaID    int
	Compression string // NONE, LZ4_FRAME, ZSTD
	Level       int    // ZSTD level, -1 otherwise
	WriterID    int64
	Sequence    int32
	Magic       byte
	// ChangeTypes, one Fluss ChangeType byte value per row; nil for an
	// append-only batch (what the client's ArrowLogWriteBatch builds).
	ChangeTypes []byte
}

// BatchRequest asks for the log batch the Java MemoryLogRecordsArrowBuilder
// builds from rec.
func BatchRequest(t testing.TB, cols []types.Field, rec arrow.RecordBatch, s BatchSpec) Request {
	changes := "-"
	if s.ChangeTypes != nil {
		var b strings.Builder
		for _, c := range s.ChangeTypes {
			b.WriteByte('0' + c)
		}
		changes = b.String()
	}
	return Request{line: fmt.Sprintf("batch %s %d %s %d %d %d %d %s %s",
		columnSpec(cols), s.SchemaID, s.Compression, s.Level, s.WriterID, s.Sequence, s.Magic, changes, ipcStream(t, rec))}
}

// BucketRequest asks for the bucket key bytes and the bucket of every row.
func BucketRequest(t testing.TB, cols []types.Field, keys []string, numBuckets int, rec arrow.RecordBatch) Request {
	return Request{line: fmt.Sprintf("bucket %s %s %d %s",
		columnSpec(cols), strings.Join(keys, ","), numBuckets, ipcStream(t, rec))}
}

// PartitionRequest asks for the partition name PartitionGetter gives every
// row; decode the answer with PartitionNames.
func PartitionRequest(t testing.TB, cols []types.Field, keys []string, rec arrow.RecordBatch) Request {
	return Request{line: fmt.Sprintf("partition %s %s %s", columnSpec(cols), strings.Join(keys, ","), ipcStream(t, rec))}
}

// PartitionNames decodes a partition answer.
func PartitionNames(t testing.TB, answer string) []string {
	t.Helper()
	var out []string
	for _, f := range strings.Fields(answer) {
		b64, ok := strings.CutPrefix(f, ".")
		b, err := base64.StdEncoding.DecodeString(b64)
		if !ok || err != nil {
			t.Fatalf("goldentest: bad partition name %q: %v", f, err)
		}
		out = append(out, string(b))
	}
	return out
}

// AutoTimeRequest asks for PartitionUtils.generateAutoPartitionTime of unit
// (YEAR, QUARTER, MONTH, DAY, HOUR) at each offset from now in the Java time
// zone id zone; the answer is the values separated by spaces.
func AutoTimeRequest(unit, zone string, now time.Time, offsets []int) Request {
	var b strings.Builder
	fmt.Fprintf(&b, "autotime %s %s %d", unit, zone, now.UnixMilli())
	for _, o := range offsets {
		fmt.Fprintf(&b, " %d", o)
	}
	return Request{line: b.String()}
}

// KvSpec is what a KvRequest asks the Java KV batch builder for.
type KvSpec struct {
	PrimaryKey []string
	SchemaID   int
	WriterID   int64
	Sequence   int32
	// Deletes marks rows that are deletes of their key; nil means every
	// row is an upsert.
	Deletes []bool
}

// KvRequest asks for the KV record batch the Java UpsertWriter's
// KvWriteBatch builds from rec: keys by the primary-key encoder, rows by the
// compacted row encoder, as for a table with default options.
func KvRequest(t testing.TB, cols []types.Field, rec arrow.RecordBatch, s KvSpec) Request {
	deletes := "-"
	if s.Deletes != nil {
		var b strings.Builder
		for _, d := range s.Deletes {
			if d {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		}
		deletes = b.String()
	}
	return Request{line: fmt.Sprintf("kv %s %s %d %d %d %s %s",
		columnSpec(cols), strings.Join(s.PrimaryKey, ","), s.SchemaID, s.WriterID, s.Sequence, deletes, ipcStream(t, rec))}
}

// SchemaRequest asks for the Arrow schema Fluss's ArrowUtils derives from
// the columns; decode the answer with Schema.
func SchemaRequest(cols []types.Field) Request {
	return Request{line: "schema " + columnSpec(cols)}
}

// Schema decodes a schema answer.
func Schema(t testing.TB, answer string) *arrow.Schema {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(Bytes(t, answer)))
	if err != nil {
		t.Fatalf("goldentest: schema answer: %v", err)
	}
	defer r.Release()
	return r.Schema()
}

func columnSpec(cols []types.Field) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.Name)
		b.WriteByte('\t')
		b.WriteString(c.Type.String())
	}
	return base64.StdEncoding.EncodeToString([]byte(b.String()))
}

func ipcStream(t testing.TB, rec arrow.RecordBatch) string {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		t.Fatalf("goldentest: IPC write: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("goldentest: IPC close: %v", err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// Run sends every request to one JVM and returns the answers in order; a
// request the Java side rejected fails the test with its message.
func (g *Gen) Run(t testing.TB, reqs ...Request) []string {
	t.Helper()
	var in bytes.Buffer
	for _, r := range reqs {
		in.WriteString(r.line)
		in.WriteByte('\n')
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", g.classpath, "FlussGolden")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("goldentest: java: %v\n%s", err, stderr.String())
	}
	var answers []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "ok "):
			answers = append(answers, strings.TrimPrefix(line, "ok "))
		case strings.HasPrefix(line, "err "):
			t.Fatalf("goldentest: request %d: %s\n%s", len(answers), strings.TrimPrefix(line, "err "), stderr.String())
		}
	}
	if len(answers) != len(reqs) {
		t.Fatalf("goldentest: %d answers for %d requests; stderr:\n%s", len(answers), len(reqs), stderr.String())
	}
	return answers
}

// Bytes decodes a batch answer.
func Bytes(t testing.TB, answer string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(answer)
	if err != nil {
		t.Fatalf("goldentest: bad base64 answer: %v", err)
	}
	return b
}

// KeyBucket is one row's answer to a BucketRequest.
type KeyBucket struct {
	Key    []byte
	Bucket int
}

// KeyBuckets decodes a bucket answer.
func KeyBuckets(t testing.TB, answer string) []KeyBucket {
	t.Helper()
	var out []KeyBucket
	for _, f := range strings.Fields(answer) {
		k, b, ok := strings.Cut(f, ":")
		if !ok {
			t.Fatalf("goldentest: bad bucket answer %q", f)
		}
		key, err := base64.StdEncoding.DecodeString(k)
		if err != nil {
			t.Fatalf("goldentest: bad key %q: %v", k, err)
		}
		n, err := strconv.Atoi(b)
		if err != nil {
			t.Fatalf("goldentest: bad bucket %q: %v", b, err)
		}
		out = append(out, KeyBucket{key, n})
	}
	return out
}
