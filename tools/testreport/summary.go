package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// result is one finished test or subtest.
type result struct {
	testKey
	reason string // for a skip: the last line the test wrote before skipping
}

// tally counts the results of one or more `go test -json` streams. Subtests count like tests;
// a package that failed outside any test (build failure, TestMain, a crash between tests)
// counts as one failure, so the totals never say "0 failed" about a failed run.
type tally struct {
	passed, failed, skipped []result

	lastLine    map[testKey]string // last line each running test wrote
	failedTests map[string]bool    // packages with a failed test
}

func newTally() *tally {
	return &tally{lastLine: map[testKey]string{}, failedTests: map[string]bool{}}
}

// read adds the events of one stream.
func (t *tally) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		if e, ok := parseEvent(sc.Bytes()); ok {
			t.add(e)
		}
	}
	return sc.Err()
}

func (t *tally) add(e event) {
	k := testKey{e.Package, e.Test}
	if e.Test == "" {
		if e.Action == "fail" && !t.failedTests[e.Package] {
			reason := "failed outside any test"
			if e.FailedBuild != "" {
				reason = "build failed: " + e.FailedBuild
			}
			t.failed = append(t.failed, result{testKey: k, reason: reason})
		}
		return
	}
	switch e.Action {
	case "output":
		for _, line := range strings.Split(strings.TrimRight(e.Output, "\n"), "\n") {
			if !isFrameworkLine(line) {
				t.lastLine[k] = strings.TrimSpace(line)
			}
		}
	case "pass":
		t.passed = append(t.passed, result{testKey: k})
		delete(t.lastLine, k)
	case "fail":
		t.failed = append(t.failed, result{testKey: k})
		t.failedTests[e.Package] = true
		delete(t.lastLine, k)
	case "skip":
		reason := t.lastLine[k]
		if reason == "" {
			reason = "(no reason given)"
		}
		t.skipped = append(t.skipped, result{testKey: k, reason: reason})
		delete(t.lastLine, k)
	}
}

// totalsLine is the line CI reads: "N passed, N failed, N skipped".
func (t *tally) totalsLine() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", len(t.passed), len(t.failed), len(t.skipped))
}

// write prints the failed and skipped tests with their reasons, then the totals.
func (t *tally) write(w io.Writer, modulePrefix string) {
	list := func(title string, rs []result) {
		if len(rs) == 0 {
			return
		}
		sorted := append([]result(nil), rs...)
		sort.SliceStable(sorted, func(i, j int) bool {
			if sorted[i].pkg != sorted[j].pkg {
				return sorted[i].pkg < sorted[j].pkg
			}
			return sorted[i].test < sorted[j].test
		})
		fmt.Fprintf(w, "%s (%d):\n", title, len(sorted))
		for _, r := range sorted {
			name := strings.TrimPrefix(r.pkg, modulePrefix)
			if r.test != "" {
				name += " " + r.test
			}
			if r.reason != "" {
				name += ": " + r.reason
			}
			fmt.Fprintf(w, "    %s\n", name)
		}
	}
	list("failed", t.failed)
	list("skipped", t.skipped)
	fmt.Fprintf(w, "tests: %s\n", t.totalsLine())
}

// fuzzLine sums up the fuzz phase: each target is one top-level Fuzz test. It is kept out of
// the totals because `go test` already ran every target's seed corpus as tests.
func fuzzLine(t *tally) string {
	count := func(rs []result) int {
		n := 0
		for _, r := range rs {
			if strings.HasPrefix(r.test, "Fuzz") && !strings.Contains(r.test, "/") {
				n++
			}
		}
		return n
	}
	return fmt.Sprintf("fuzz: %d targets fuzzed, %d passed, %d failed (not in the totals: their seed corpora ran as tests)",
		count(t.passed)+count(t.failed), count(t.passed), count(t.failed))
}
