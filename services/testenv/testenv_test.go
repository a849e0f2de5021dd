package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestUniqueName(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_]+_[0-9a-f]{10}$`)
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		n := UniqueName("ferry_it")
		if !valid.MatchString(n) || !strings.HasPrefix(n, "ferry_it_") {
			t.Fatalf("UniqueName = %q, want ferry_it_<10 hex>", n)
		}
		if seen[n] {
			t.Fatalf("UniqueName repeated %q", n)
		}
		seen[n] = true
	}
	if n := UniqueName(""); !strings.HasPrefix(n, "t_") {
		t.Errorf("UniqueName(\"\") = %q, want a t_ prefix", n)
	}
}

func TestDecodeScan(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int
		wantErr string
		check   func(t *testing.T, rows []ScanRow)
	}{
		{name: "empty", in: "", want: 0},
		{
			name: "exact numbers and nested values",
			in: `{"bucket":1,"offset":7,"timestamp":1700000000000,"change_type":"+A","row":{"id":9007199254740993,"d":"12.30","m":[["k",1]],"r":{"x":null}}}` + "\n\n" +
				`{"partition_id":5,"bucket":0,"offset":0,"timestamp":1,"change_type":"+A","row":{"id":1}}` + "\n",
			want: 2,
			check: func(t *testing.T, rows []ScanRow) {
				if got := rows[0].Row["id"]; got != json.Number("9007199254740993") {
					t.Errorf("BIGINT decoded as %#v, want the exact json.Number", got)
				}
				if rows[0].Bucket != 1 || rows[0].Offset != 7 || rows[0].PartitionID != nil {
					t.Errorf("row 0 position = %+v", rows[0])
				}
				if rows[1].PartitionID == nil || *rows[1].PartitionID != 5 {
					t.Errorf("row 1 partition = %v, want 5", rows[1].PartitionID)
				}
				pairs, ok := rows[0].Row["m"].([]any)
				if !ok || len(pairs) != 1 {
					t.Fatalf("map decoded as %#v", rows[0].Row["m"])
				}
			},
		},
		{name: "garbage line", in: `{"bucket":0,"offset":0,"row":{}}` + "\nnot json\n", want: 1, wantErr: "line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := DecodeScan([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if len(rows) != tc.want {
				t.Fatalf("got %d rows, want %d", len(rows), tc.want)
			}
			if tc.check != nil {
				tc.check(t, rows)
			}
		})
	}
}

// fakeHelper writes a script that records its arguments and answers like flusshelper would.
func fakeHelper(t *testing.T, body string) (cmd, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argsFile + "\ncat > " + filepath.Join(dir, "stdin") + "\n" + body + "\n"
	cmd = filepath.Join(dir, "flusshelper")
	if err := os.WriteFile(cmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return cmd, argsFile
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestHelperArgumentsAndOutput(t *testing.T) {
	cmd, argsFile := fakeHelper(t, `echo '{"rows":3,"elapsed_ms":1.5}'`)
	h, err := NewHelper(cmd+" --extra", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	h.PerCall = true
	h.Conf = map[string]string{"client.writer.batch-size": "1mb", "client.a": "b"}
	res, err := h.Write(context.Background(), "db", "tbl", []map[string]any{{"id": 1}, {"id": 2}, {"id": 3}}, WriteOptions{Repeat: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 3 || res.ElapsedMS != 1.5 {
		t.Errorf("result = %+v", res)
	}
	want := []string{"--extra", "write", "--bootstrap", "127.0.0.1:1", "--conf", "client.a=b", "--conf", "client.writer.batch-size=1mb",
		"--database", "db", "--table", "tbl", "--input", "-", "--repeat", "2"}
	if got := readLines(t, argsFile); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("args = %q\nwant   %q", got, want)
	}
	stdin := readLines(t, filepath.Join(filepath.Dir(argsFile), "stdin"))
	if len(stdin) != 3 || stdin[0] != `{"id":1}` {
		t.Errorf("stdin = %q, want three JSON lines", stdin)
	}
}

func TestHelperError(t *testing.T) {
	cmd, _ := fakeHelper(t, `echo 'flusshelper 12:00 WARN noise' >&2; echo 'flusshelper: scan db.t: 1 rows, expected 2 within 100ms' >&2; echo '{"bucket":0,"offset":0,"timestamp":0,"change_type":"+A","row":{"id":1}}'; exit 1`)
	h, err := NewHelper(cmd, "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	h.PerCall = true
	rows, err := h.Scan(context.Background(), "db", "t", ScanOptions{Expect: 2, Timeout: 100 * time.Millisecond})
	var he *HelperError
	if !errors.As(err, &he) {
		t.Fatalf("err = %v (%T), want *HelperError", err, err)
	}
	if he.ExitCode != 1 || he.Command != "scan" || he.Message != "scan db.t: 1 rows, expected 2 within 100ms" {
		t.Errorf("HelperError = %+v", he)
	}
	if len(rows) != 1 {
		t.Errorf("partial rows = %d, want the 1 row read before the failure", len(rows))
	}
}

func TestNewHelperValidation(t *testing.T) {
	if _, err := NewHelper("  ", "127.0.0.1:1"); err == nil {
		t.Error("empty command accepted")
	}
	if _, err := NewHelper("/bin/true", ""); err == nil {
		t.Error("empty bootstrap accepted")
	}
}

// recorder stands in for *testing.T to observe Skip/Fatal without ending the real test.
type recorder struct {
	testing.TB
	skipped, failed bool
}

type stop struct{}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(string, ...any) {
	r.skipped = true
	panic(stop{})
}
func (r *recorder) Fatalf(string, ...any) {
	r.failed = true
	panic(stop{})
}

func callFluss(r *recorder) (c *Cluster) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stop); !ok {
				panic(v)
			}
		}
	}()
	return Fluss(r)
}

func TestFlussEnvironment(t *testing.T) {
	tests := []struct {
		name, bootstrap, helper, require string
		wantSkip, wantFail, wantCluster  bool
	}{
		{name: "unset skips", wantSkip: true},
		{name: "unset but required fails", require: "1", wantFail: true},
		{name: "set", bootstrap: "127.0.0.1:9", helper: "/bin/echo", wantCluster: true},
		{name: "set and required", bootstrap: "127.0.0.1:9", helper: "/bin/echo", require: "1", wantCluster: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvBootstrap, tc.bootstrap)
			t.Setenv(EnvHelper, tc.helper)
			t.Setenv(EnvRequireFluss, tc.require)
			r := &recorder{TB: t}
			c := callFluss(r)
			if r.skipped != tc.wantSkip || r.failed != tc.wantFail || (c != nil) != tc.wantCluster {
				t.Fatalf("skipped=%v failed=%v cluster=%v, want %v %v %v", r.skipped, r.failed, c != nil, tc.wantSkip, tc.wantFail, tc.wantCluster)
			}
			if c != nil && (c.Bootstrap != tc.bootstrap || c.Helper.Bootstrap() != tc.bootstrap) {
				t.Errorf("cluster bootstrap = %q", c.Bootstrap)
			}
		})
	}
}
