package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// consumer reads o.Topic and hands each record to out.emit until out is full or ctx (the run's
// deadline) ends; when out is full and o.Commit is set, it then commits synchronously the offsets
// of the records out printed. A usageError means the client cannot do what the flags ask.
type consumer func(ctx context.Context, o protocol.ConsumeOptions, out *sink, log *slog.Logger) error

// usageError is a flag combination the client cannot honour (exit 2).
type usageError string

func (e usageError) Error() string { return string(e) }

// sink prints consumed records as contract lines, as they arrive, up to its count.
type sink struct {
	mu      sync.Mutex
	count   int
	printed int
	err     error // the first stdout failure
}

// emit prints m unless the count is already reached; it reports whether m was printed.
func (s *sink) emit(m protocol.Message) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.printed >= s.count {
		return false
	}
	b, err := json.Marshal(m)
	if err == nil {
		_, err = os.Stdout.Write(append(b, '\n'))
	}
	if err != nil {
		s.err = errors.Join(s.err, err)
		return false
	}
	s.printed++
	return true
}

// full reports whether count records were printed.
func (s *sink) full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.printed >= s.count
}

func runConsume(name string, consume consumer, args []string, log *slog.Logger) int {
	o, err := protocol.ParseConsumeArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gorunner: %v\n", err)
		return protocol.ExitUsage
	}
	if (o.TopicRegex != "" || o.MetadataMaxAgeMs > 0) && name != "franz" {
		fmt.Fprintf(os.Stderr, "gorunner: %s: --topic-regex and --metadata-max-age-ms are not implemented in this runner\n", name)
		return protocol.ExitUsage
	}
	log = log.With("client", name, "topic", o.Topic)
	ctx, cancel := runContext(o.Timeout)
	defer cancel()
	out := &sink{count: o.Count}
	err = consume(ctx, o, out, log)
	var usage usageError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "gorunner: %s: %v\n", name, err)
		return protocol.ExitUsage
	case err != nil:
		fmt.Fprintf(os.Stderr, "gorunner: %s: %v\n", name, err)
		return protocol.ExitFailed
	case out.err != nil:
		fmt.Fprintf(os.Stderr, "gorunner: stdout: %v\n", out.err)
		return protocol.ExitFailed
	case !out.full():
		fmt.Fprintf(os.Stderr, "gorunner: %s: read %d of %d records before the deadline (%v)\n", name, out.printed, o.Count, o.Timeout)
		return protocol.ExitFailed
	}
	return protocol.ExitOK
}
