package main

import (
	"encoding/json"
	"strings"
)

// event is the part of a `go test -json` line testreport reads (cmd/test2json's TestEvent, plus
// cmd/go's build-output events and FailedBuild).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64 // seconds
	Output      string
	FailedBuild string
}

// parseEvent decodes one line; ok is false for lines that are not test events (go test's own
// messages that reach stdout, or a truncated last line).
func parseEvent(line []byte) (event, bool) {
	var e event
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
		return event{}, false
	}
	return e, true
}

// testKey names one test (or subtest) of one package.
type testKey struct{ pkg, test string }

// isFrameworkLine reports whether an output line was written by the testing package itself
// (=== RUN, --- PASS, ...) rather than by the test: such lines never carry a skip reason.
func isFrameworkLine(line string) bool {
	s := strings.TrimLeft(line, " \t")
	return strings.HasPrefix(s, "=== ") || strings.HasPrefix(s, "--- ") || s == ""
}
