package clients

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// Consume modes, as Supports features.
const (
	// ConsumeAssign is consuming without a consumer group: the runner assigns the partitions.
	ConsumeAssign = "consume-assign"
	// ConsumeGroup is consuming as a member of a consumer group (ConsumeOptions.Group).
	ConsumeGroup = "consume-group"
	// ConsumeTopicRegex is subscribing a group member to a topic pattern (ConsumeOptions.TopicRegex).
	ConsumeTopicRegex = "consume-topic-regex"
)

// ConsumeOptions, Message and MessageHeader are the consume contract's types.
type (
	ConsumeOptions = protocol.ConsumeOptions
	Message        = protocol.Message
	MessageHeader  = protocol.MessageHeader
)

// ConsumeResult is the outcome of one consume run.
type ConsumeResult struct {
	// Messages are the records the runner printed, in the order the client delivered them.
	Messages []Message
	ExitCode int
	Stderr   string
	Elapsed  time.Duration
}

// Err is non-nil when the runner did not read the records it was asked for before its deadline
// (or failed to commit them).
func (r ConsumeResult) Err() error {
	if r.ExitCode == 0 {
		return nil
	}
	return fmt.Errorf("runner exit code %d after %d records: %s", r.ExitCode, len(r.Messages), tail(r.Stderr, 800))
}

// Consume runs the client's consumer with opts. It returns an error when the runner could not be
// run, refused the options (exit 2: see Supports) or broke the contract (malformed lines, more
// records than asked for, an exit code disagreeing with the count); a run that ended at its
// deadline is a ConsumeResult with ExitCode 1 and what was read (see ConsumeResult.Err). ctx bounds
// the process; opts.Timeout is the runner's own deadline (protocol.DefaultTimeout when zero).
func (c Client) Consume(ctx context.Context, opts ConsumeOptions) (ConsumeResult, error) {
	if opts.Timeout == 0 {
		opts.Timeout = protocol.DefaultTimeout
	}
	if err := opts.Validate(); err != nil {
		return ConsumeResult{}, fmt.Errorf("clients: consume options: %w", err)
	}
	r, err := c.runRunner(ctx, opts.Timeout, nil, append([]string{"consume"}, opts.Args()...))
	res := ConsumeResult{ExitCode: r.exitCode, Stderr: r.stderr, Elapsed: r.elapsed}
	if err != nil {
		return res, err
	}
	if res.Messages, err = protocol.ReadMessages(bytes.NewReader(r.stdout)); err != nil {
		return res, fmt.Errorf("clients: %s output: %w", c.Name, err)
	}
	n := len(res.Messages)
	switch {
	case n > opts.Count:
		return res, fmt.Errorf("clients: %s printed %d records, asked for %d", c.Name, n, opts.Count)
	case res.ExitCode == protocol.ExitOK && n != opts.Count:
		return res, fmt.Errorf("clients: %s exited 0 after %d of %d records", c.Name, n, opts.Count)
	case res.ExitCode != protocol.ExitOK && res.ExitCode != protocol.ExitFailed:
		return res, fmt.Errorf("clients: %s exit code %d: %s", c.Name, res.ExitCode, tail(res.Stderr, 800))
	}
	return res, nil
}
