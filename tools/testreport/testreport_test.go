package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sampleEvents runs the real `go test -json` on testdata/sample: a package with passing,
// failing and skipped tests and subtests, one without tests, and one that does not compile.
func sampleEvents(t *testing.T) []byte {
	t.Helper()
	cmd := exec.Command("go", "test", "-count=1", "-json", "./...")
	cmd.Dir = filepath.Join("testdata", "sample")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if _, failed := err.(*exec.ExitError); !failed {
		t.Fatalf("go test on the sample: want exit 1 (it has failures), got %v\n%s", err, stderr.String())
	}
	return out
}

func TestStreamPrintsWhatPlainGoTestPrints(t *testing.T) {
	events := sampleEvents(t)
	var out, saved bytes.Buffer
	if err := newStreamer(&out).stream(bytes.NewReader(events), &saved); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(saved.Bytes(), events) {
		t.Errorf("saved events differ from the input (%d vs %d bytes)", saved.Len(), len(events))
	}
	got := out.String()
	for _, want := range []string{
		"shown because the test fails", "boom", "--- FAIL: TestFail", "sub failed", // failures' output
		"cannot use \"not a number\"",                     // the compiler's error
		"?   \texample.com/sample/empty\t[no test files]", // go's line for a package without tests
		"FAIL\texample.com/sample\t",                      // and for a failed one
		"FAIL\texample.com/sample/broken",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"quiet when passing", "said before skipping", "=== RUN   TestPass", "not here"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("output has %q, which plain go test does not print:\n%s", unwanted, got)
		}
	}
}

func TestSummaryCountsAndGivesSkipReasons(t *testing.T) {
	tl := newTally()
	if err := tl.read(bytes.NewReader(sampleEvents(t))); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tl.write(&out, "example.com/")
	got := out.String()
	// TestPass, TestSub/a pass; TestFail, TestSub/c, TestSub and the broken package fail;
	// TestSkip and TestSub/b skip.
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if last := lines[len(lines)-1]; last != "tests: 2 passed, 4 failed, 2 skipped" {
		t.Errorf("last line %q, want the totals\n%s", last, got)
	}
	for _, want := range []string{
		"skipped (2):\n",
		"    sample TestSkip: sample_test.go:15: needs the moon\n",
		"    sample TestSub/b: sample_test.go:20: not here: 42\n",
		"failed (4):\n",
		"    sample TestFail\n",
		"    sample/broken: build failed: example.com/sample/broken [example.com/sample/broken.test]\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

func TestSummaryCountsFuzzTargetsApart(t *testing.T) {
	tl := newTally()
	stream := `{"Action":"run","Package":"p","Test":"FuzzA"}
{"Action":"output","Package":"p","Test":"FuzzA","Output":"fuzz: elapsed: 3s, execs: 100\n"}
{"Action":"pass","Package":"p","Test":"FuzzA","Elapsed":3}
{"Action":"run","Package":"q","Test":"FuzzB"}
{"Action":"fail","Package":"q","Test":"FuzzB","Elapsed":1}
{"Action":"fail","Package":"q","Elapsed":1}
`
	if err := tl.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	want := "fuzz: 2 targets fuzzed, 1 passed, 1 failed (not in the totals: their seed corpora ran as tests)"
	if got := fuzzLine(tl); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestStreamShowsUnfinishedOutput(t *testing.T) {
	// go test killed mid-test: no result events follow the output.
	stream := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestHang"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"    hang_test.go:9: waiting for Fluss\n"}
`
	var out bytes.Buffer
	if err := newStreamer(&out).stream(strings.NewReader(stream), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "p TestHang has no result") || !strings.Contains(out.String(), "waiting for Fluss") {
		t.Errorf("unfinished test not shown:\n%s", out.String())
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	var b tailBuffer
	chunk := strings.Repeat("x", 4096) + "\n"
	for range 2 * maxBuffered / len(chunk) {
		b.add(chunk)
	}
	b.add("the last line\n")
	s := b.String()
	if len(s) > maxBuffered+100 || !strings.HasSuffix(s, "the last line\n") || !strings.HasPrefix(s, "[testreport: ") {
		t.Errorf("buffer of %d bytes, prefix %q, suffix %q", len(s), s[:40], s[len(s)-20:])
	}
}

func TestRunRejectsBadUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"stream"}, {"nope"}, {"summary", "/nonexistent/events.jsonl"}} {
		if err := run(args, strings.NewReader(""), &bytes.Buffer{}); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
