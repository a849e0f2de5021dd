// Command testreport reads `go test -json` for tools/test.sh: while the tests run it prints what
// plain `go test` would (a line per package, the output of failures) and saves the events; at
// the end it prints the failed and skipped tests, each skip with its reason, and the totals.
//
//	go test -json ./... | testreport stream -save events.jsonl
//	testreport summary [-fuzz fuzz.jsonl] events.jsonl...
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// modulePrefix is cut from package paths in the lists, which stay readable in a CI log.
const modulePrefix = "github.com/ferrygw/ferry/"

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: testreport stream -save FILE | testreport summary [-fuzz FILE] FILE...")
	}
	fs := flag.NewFlagSet("testreport "+args[0], flag.ContinueOnError)
	switch args[0] {
	case "stream":
		save := fs.String("save", "", "file the events are appended to (required)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *save == "" || fs.NArg() != 0 {
			return errors.New("stream: want -save FILE and no arguments")
		}
		f, err := os.OpenFile(*save, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		if err := newStreamer(stdout).stream(stdin, f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	case "summary":
		fuzz := fs.String("fuzz", "", "events of the fuzz phase, summed up on a line of their own")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		t := newTally()
		for _, name := range fs.Args() {
			if err := readFile(t, name); err != nil {
				return err
			}
		}
		t.write(stdout, modulePrefix)
		if *fuzz != "" {
			ft := newTally()
			if err := readFile(ft, *fuzz); err != nil {
				return err
			}
			fmt.Fprintln(stdout, fuzzLine(ft))
		}
		return nil
	}
	return fmt.Errorf("unknown command %q: want stream or summary", args[0])
}

func readFile(t *tally, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := t.read(f); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
