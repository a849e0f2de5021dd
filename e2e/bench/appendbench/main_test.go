package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/testenv"
)

func defaults(t *testing.T) config {
	t.Helper()
	var c config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.flags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*config)
		want   string // substring of the error; "" for valid
	}{
		{"defaults", func(*config) {}, ""},
		{"java only", func(c *config) { c.Sides = "java" }, ""},
		{"rows", func(c *config) { c.Rows = 0 }, "-rows"},
		{"rows per job", func(c *config) { c.RowsPerJob = 0 }, "-rows-per-job"},
		{"buckets", func(c *config) { c.Buckets = -1 }, "-buckets"},
		{"compression", func(c *config) { c.Compression = "GZIP" }, "-compression"},
		{"streams", func(c *config) { c.Streams = 0 }, "-streams"},
		{"warmup", func(c *config) { c.Warmup = -1 }, "-warmup"},
		{"sides", func(c *config) { c.Sides = "go,rust" }, "-sides"},
		{"java conf", func(c *config) { c.JavaConf = "client.writer.acks" }, "-java-conf"},
		{"timeout", func(c *config) { c.Timeout = 0 }, "-timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaults(t)
			tt.mutate(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

// TestEncodeRows checks the Go side's rows against the formula
// AppendBench.java uses, for rows of a job that does not start at 0.
func TestEncodeRows(t *testing.T) {
	schema, err := benchSchema()
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeRows(memory.NewGoAllocator(), schema, 1230, 20)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatal("no record batch")
	}
	rec := r.RecordBatch()
	if rec.NumRows() != 20 || !rec.Schema().Equal(schema) {
		t.Fatalf("rows %d, schema %v", rec.NumRows(), rec.Schema())
	}
	for k := range 20 {
		i := int64(1230 + k)
		if got := rec.Column(0).(*array.Int64).Value(k); got != i {
			t.Errorf("row %d: id %d", k, got)
		}
		if got := rec.Column(1).(*array.Int32).Value(k); int64(got) != i%1000 {
			t.Errorf("row %d: qty %d", k, got)
		}
		if got := rec.Column(2).(*array.Float64).Value(k); got != float64(i)*0.25 {
			t.Errorf("row %d: price %v", k, got)
		}
		if got := rec.Column(4).IsNull(k); got != (i%10 == 0) {
			t.Errorf("row %d: name null = %v", k, got)
		}
		if got := rec.Column(6).(*array.Timestamp).Value(k); got != arrow.Timestamp(tsBase+i) {
			t.Errorf("row %d: ts %d", k, got)
		}
		if got := rec.Column(7).(*array.Decimal128).Value(k); got.LowBits() != uint64(i%1_000_000) || got.HighBits() != 0 {
			t.Errorf("row %d: amount %v", k, got)
		}
		if got := rec.Column(8).(*array.Binary).Value(k); len(got) != 16 || got[0] != byte(i) || got[8] != byte(i*31) {
			t.Errorf("row %d: payload %x", k, got)
		}
		if got := rec.Column(9).(*array.Date32).Value(k); int64(got) != 19000+i%365 {
			t.Errorf("row %d: day %d", k, got)
		}
	}
}

// TestRealBenchSameRows runs a small benchmark against the test cluster
// with -verify: the Java reader must find the same rows in the table
// appendsvc wrote and in the one the Java writer wrote, which shows both
// sides write the same data.
func TestRealBenchSameRows(t *testing.T) {
	cluster := testenv.Fluss(t)
	if _, err := exec.LookPath("javac"); err != nil {
		// The Java writer is half of the comparison; where Fluss is required, so is the JDK.
		if os.Getenv(testenv.EnvRequireFluss) == "1" {
			t.Fatalf("javac not found, and %s=1", testenv.EnvRequireFluss)
		}
		t.Skip("javac not found")
	}
	c := defaults(t)
	c.Bootstrap, c.Rows, c.RowsPerJob, c.Warmup, c.Verify, c.Buckets = cluster.Bootstrap, 5000, 700, 1000, true, 3
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &c, slog.New(slog.NewTextHandler(io.Discard, nil)), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go appendsvc (gRPC)", "java AppendWriter", "ratio go/java"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
}
