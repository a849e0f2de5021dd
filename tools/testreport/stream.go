package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// maxBuffered bounds the output kept per test or package until its result is known; the
// tail is what explains a failure, so older output is dropped first.
const maxBuffered = 1 << 20

// tailBuffer keeps the last maxBuffered bytes written to it.
type tailBuffer struct {
	b       strings.Builder
	dropped int
}

func (t *tailBuffer) add(s string) {
	t.b.WriteString(s)
	if t.b.Len() <= maxBuffered {
		return
	}
	s = t.b.String()
	cut := len(s) - maxBuffered/2
	t.dropped += cut
	t.b.Reset()
	t.b.WriteString(s[cut:])
}

func (t *tailBuffer) String() string {
	if t.dropped == 0 {
		return t.b.String()
	}
	return fmt.Sprintf("[testreport: %d earlier bytes of output dropped]\n%s", t.dropped, t.b.String())
}

// streamer turns a `go test -json` stream into what plain `go test` prints: one result line
// per package, and the whole output of every failed test and failed package.
type streamer struct {
	out   io.Writer
	tests map[testKey]*tailBuffer
	pkgs  map[string]*tailBuffer
	order []string // packages in start order, for what is left at the end
}

func newStreamer(out io.Writer) *streamer {
	return &streamer{out: out, tests: map[testKey]*tailBuffer{}, pkgs: map[string]*tailBuffer{}}
}

// stream copies in to save (every line, unchanged) and writes the readable form to s.out.
func (s *streamer) stream(in io.Reader, save io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if _, werr := save.Write(line); werr != nil {
				return werr
			}
			if e, ok := parseEvent(line); ok {
				s.handle(e)
			} else {
				// Not an event (e.g. go's own message on stdout): show it as it is.
				fmt.Fprint(s.out, string(line))
			}
		}
		if err == io.EOF {
			s.flushUnfinished()
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (s *streamer) handle(e event) {
	switch {
	case e.Action == "build-output":
		fmt.Fprint(s.out, e.Output) // compiler and vet errors, shown at once
	case e.Test != "":
		s.handleTest(e)
	case e.Package != "":
		s.handlePackage(e)
	}
}

func (s *streamer) handleTest(e event) {
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "output":
		buf := s.tests[k]
		if buf == nil {
			buf = &tailBuffer{}
			s.tests[k] = buf
		}
		buf.add(e.Output)
	case "fail":
		if buf := s.tests[k]; buf != nil {
			fmt.Fprint(s.out, buf.String())
		}
		delete(s.tests, k)
	case "pass", "skip":
		delete(s.tests, k)
	}
}

func (s *streamer) handlePackage(e event) {
	buf := s.pkgs[e.Package]
	if buf == nil && e.Action != "pass" && e.Action != "skip" && e.Action != "fail" {
		buf = &tailBuffer{}
		s.pkgs[e.Package] = buf
		s.order = append(s.order, e.Package)
	}
	switch e.Action {
	case "output":
		buf.add(e.Output)
	case "pass":
		fmt.Fprintln(s.out, resultLine(buf, "ok  \t", fmt.Sprintf("ok  \t%s\t%.3fs", e.Package, e.Elapsed)))
		delete(s.pkgs, e.Package)
	case "skip":
		fmt.Fprintln(s.out, resultLine(buf, "?   \t", fmt.Sprintf("?   \t%s\t[no test files]", e.Package)))
		delete(s.pkgs, e.Package)
	case "fail":
		// Everything the test binary printed outside tests (TestMain, a panic) and go's FAIL lines.
		if buf != nil {
			fmt.Fprint(s.out, buf.String())
		}
		if buf == nil || !strings.Contains(buf.String(), "FAIL\t"+e.Package) {
			fmt.Fprintf(s.out, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
		delete(s.pkgs, e.Package)
	}
}

// resultLine is go's own result line for a package (it may say "(cached)" or carry coverage)
// when the output has one, else fallback.
func resultLine(buf *tailBuffer, prefix, fallback string) string {
	if buf == nil {
		return fallback
	}
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], prefix) {
			return lines[i]
		}
	}
	return fallback
}

// flushUnfinished shows what never got a result (go test was killed, or the stream was cut):
// that output is what tells where it hung.
func (s *streamer) flushUnfinished() {
	keys := make([]testKey, 0, len(s.tests))
	for k := range s.tests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].pkg+" "+keys[i].test < keys[j].pkg+" "+keys[j].test })
	for _, k := range keys {
		fmt.Fprintf(s.out, "testreport: %s %s has no result; its output:\n%s", k.pkg, k.test, s.tests[k].String())
	}
	for _, p := range s.order {
		if buf, ok := s.pkgs[p]; ok {
			fmt.Fprintf(s.out, "testreport: package %s has no result; its output:\n%s", p, buf.String())
		}
	}
}
