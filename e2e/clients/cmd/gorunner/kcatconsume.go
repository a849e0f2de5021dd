package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// consumeKcat runs kcat -C (librdkafka's legacy simple consumer: every partition, or -p P, from
// -o, no group) or kcat -G (a KafkaConsumer group member) with -J, one JSON envelope per message
// (checked with kcat 1.7.1):
//
//	{"topic":"t","partition":0,"offset":0,"tstype":"create","ts":1767323045123,"broker":1,
//	 "headers":["h","1","n",null],"key":"k","payload":null}
//
// null keys, payloads and header values are JSON null, empty ones "". kcat writes the bytes of
// keys, payloads and headers into the JSON strings as they are, escaping only '"', '\' and control
// characters, so bytes that are not UTF-8 arrive raw: kcatString recovers them exactly.
//
// kcat has no commit command. With --commit the group runs with librdkafka's auto-commit, which
// commits the offsets of the messages handed to kcat (every 5 s, and when kcat closes the consumer
// after -c N). Without it the runner sets enable.auto.offset.store=false, so no offset is stored to
// commit: kcat -X enable.auto.commit=false would not do, as kcat sets a property on the topic
// configuration first when it exists there, and this one does (the legacy consumer's
// auto.commit.enable), leaving the KafkaConsumer's auto-commit on (seen with kcat 1.7.1 -X dump).
// At the deadline kcat is killed, so it does not commit on the way out.
//
// kcat runs with -e: it exits when every partition it reads has reached its end, so a run that asks
// for more records than exist ends there (exit 1) instead of at the deadline, and every run needs
// the broker's end-of-partition answer (an empty record set at the high watermark). librdkafka
// logs a Fetch answer it cannot parse ("Protocol parse failure", PROTOERR) and retries it forever;
// the runner stops kcat at the first such line and fails the run.
func consumeKcat(ctx context.Context, o protocol.ConsumeOptions, out *sink, log *slog.Logger) error {
	bin, err := kcatBin()
	if err != nil {
		return err
	}
	sec, err := kcatSecurity(o.Security())
	if err != nil {
		return usageError(err.Error())
	}
	// -u: unbuffered, so a killed kcat leaves every message it read on stdout.
	args := []string{"-b", o.Bootstrap, "-J", "-u", "-e", "-c", strconv.Itoa(o.Count)}
	args = append(args, sec...)
	if o.Group != "" {
		reset := "earliest"
		if o.FromLatest() {
			reset = "latest"
		}
		args = append(args, "-G", o.Group, "-X", "auto.offset.reset="+reset)
		if !o.Commit {
			args = append(args, "-X", "enable.auto.offset.store=false")
		}
		args = append(args, o.Topic)
	} else {
		from := "beginning"
		if o.FromLatest() {
			from = "end"
		} else if n, ok := o.FromOffset(); ok {
			from = strconv.FormatInt(n, 10)
		}
		args = append(args, "-C", "-t", o.Topic, "-o", from)
		if o.Partition != nil {
			args = append(args, "-p", strconv.Itoa(int(*o.Partition)))
		}
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kcat: %w", err)
	}
	// kcat's own diagnostics ("% Reached end of topic …") pass through to stderr.
	protoErr := make(chan string, 1)
	go func() {
		line := copyFindingProtocolError(os.Stderr, stderr)
		if line != "" {
			_ = cmd.Process.Kill()
		}
		protoErr <- line
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var perr error
	for sc.Scan() {
		m, err := kcatMessage(sc.Bytes())
		if err != nil {
			perr = fmt.Errorf("kcat output %q: %w", sc.Bytes(), err)
			break
		}
		out.emit(m)
	}
	if perr != nil {
		_ = cmd.Process.Kill()
	}
	bad := <-protoErr
	werr := cmd.Wait()
	switch {
	case bad != "":
		return fmt.Errorf("kcat logged a protocol error (stopped): %s", bad)
	case perr != nil:
		return perr
	case ctx.Err() != nil:
		return nil // the deadline: what was printed stands
	case werr != nil:
		return fmt.Errorf("kcat: %w", werr)
	case !out.full():
		return fmt.Errorf("kcat reached the end of its partitions (-e) after %d of %d messages", out.printed, o.Count)
	}
	return nil
}

// copyFindingProtocolError copies kcat's stderr to w line by line and returns the first line
// where librdkafka reports a broker answer it could not parse, or "" at the end of r.
func copyFindingProtocolError(w io.Writer, r io.Reader) string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		_, _ = fmt.Fprintln(w, line)
		if strings.Contains(line, "PROTOERR") || strings.Contains(line, "Protocol parse failure") {
			return line
		}
	}
	return ""
}

// kcatJSON is kcat's -J envelope; byte strings stay raw for kcatString.
type kcatJSON struct {
	Partition *int32            `json:"partition"`
	Offset    *int64            `json:"offset"`
	Timestamp *int64            `json:"ts"`
	Headers   []json.RawMessage `json:"headers"`
	Key       json.RawMessage   `json:"key"`
	Payload   json.RawMessage   `json:"payload"`
}

func kcatMessage(line []byte) (protocol.Message, error) {
	var j kcatJSON
	// encoding/json checks the syntax only, not UTF-8, so raw bytes pass into the RawMessages.
	if err := json.Unmarshal(line, &j); err != nil {
		return protocol.Message{}, err
	}
	if j.Partition == nil || j.Offset == nil || j.Key == nil || j.Payload == nil || len(j.Headers)%2 != 0 {
		return protocol.Message{}, errors.New("not a kcat -J message envelope")
	}
	m := protocol.Message{Partition: *j.Partition, Offset: *j.Offset, TimestampMs: -1}
	if j.Timestamp != nil {
		m.TimestampMs = *j.Timestamp
	}
	var err error
	if m.Key, err = kcatString(j.Key); err != nil {
		return m, fmt.Errorf("key: %w", err)
	}
	if m.Value, err = kcatString(j.Payload); err != nil {
		return m, fmt.Errorf("payload: %w", err)
	}
	// Headers are a flat array: name, value, name, value …
	for i := 0; i < len(j.Headers); i += 2 {
		name, err := kcatString(j.Headers[i])
		if err != nil || name == nil {
			return m, fmt.Errorf("header name %s: bad string", j.Headers[i])
		}
		v, err := kcatString(j.Headers[i+1])
		if err != nil {
			return m, fmt.Errorf("header %s: %w", name, err)
		}
		m.Headers = append(m.Headers, protocol.MessageHeader{Key: string(name), Value: v})
	}
	return m, nil
}

// kcatString decodes a JSON string token byte-exactly (null → nil): unlike encoding/json, it keeps
// bytes that are not UTF-8 instead of replacing them with U+FFFD.
func kcatString(raw json.RawMessage) ([]byte, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, fmt.Errorf("not a JSON string: %s", raw)
	}
	s := raw[1 : len(raw)-1]
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i+1 >= len(s) {
			return nil, errors.New("truncated escape")
		}
		i++
		switch s[i] {
		case '"', '\\', '/':
			out = append(out, s[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n, err := jsonRune(s[i+1:])
			if err != nil {
				return nil, err
			}
			out = append(out, string(r)...)
			i += n
		default:
			return nil, fmt.Errorf("bad escape \\%c", s[i])
		}
	}
	return out, nil
}

// jsonRune reads the XXXX of a \uXXXX escape (and a following low surrogate's \uXXXX), returning
// the rune and the bytes consumed after the 'u'.
func jsonRune(s []byte) (rune, int, error) {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[:4]), 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex4(s)
	if !ok {
		return 0, 0, errors.New("bad \\u escape")
	}
	if utf16.IsSurrogate(r) && len(s) >= 10 && s[4] == '\\' && s[5] == 'u' {
		if r2, ok := hex4(s[6:]); ok {
			if pair := utf16.DecodeRune(r, r2); pair != '\uFFFD' {
				return pair, 10, nil
			}
		}
	}
	return r, 4, nil
}
