package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// kcat (1.7, librdkafka) reads messages from stdin split by -D, keys split off by -K, and with
// verbosity >= 3 (-v -v) reports each delivery on stderr as
//
//	% Message delivered to partition P (offset O) on broker B
//	% Delivery failed for message: ERR
//
// librdkafka reports deliveries of one partition in production order, so with a fixed partition the
// n-th report belongs to the n-th message of that invocation. Without --partition the partitioner may
// spread one invocation's records over partitions whose reports interleave, so each record then gets
// its own kcat process (one message per run keeps the mapping exact). Headers (-H) apply to a whole
// invocation, so consecutive records with equal headers share one. kcat -P has no way to set a
// record's timestamp: such records are refused rather than silently sent with the current time.
//
// Empty and null values (checked with kcat 1.7.1 against Kafka 4.4.0): kcat skips an empty input
// message, so a record with a null key and an empty value cannot be sent. After a key delimiter an
// empty value is sent as an empty value and an empty key as an empty key, unless -Z is given: then
// both become NULL. So an invocation with a tombstone runs with -Z ("key\x1f" is a tombstone with
// that key, a bare "\x1f" one with a null key) and holds no record with an empty key or value
// (those go to invocations without -Z), and a tombstone with an empty (non-null) key cannot be sent.
const (
	kcatMsgDelim = "\x1e" // ASCII record separator between messages
	kcatKeyDelim = "\x1f" // ASCII unit separator between key and value
)

var (
	kcatDelivered = regexp.MustCompile(`^(?:% )?Message delivered to partition (-?\d+) \(offset (-?\d+)\)`)
	kcatFailed    = regexp.MustCompile(`^(?:% )?Delivery failed for message: (.*)$`)
)

func produceKcat(ctx context.Context, o protocol.Options, recs []protocol.Record, log *slog.Logger) ([]protocol.Delivery, error) {
	bin, err := kcatBin()
	if err != nil {
		return nil, err
	}
	base := []string{"-P", "-b", o.Bootstrap, "-t", o.Topic, "-v", "-v"}
	// Only what a flag names is set; everything else stays librdkafka's default (acks=all,
	// idempotence off, no compression, consistent_random partitioner).
	if o.Acks != "" {
		base = append(base, "-X", "acks="+o.Acks)
	}
	if o.Compression != "" {
		base = append(base, "-z", o.Compression)
	}
	if o.Idempotent != nil {
		base = append(base, "-X", "enable.idempotence="+strconv.FormatBool(*o.Idempotent))
	}
	if o.Partition != nil {
		base = append(base, "-p", strconv.Itoa(int(*o.Partition)))
	}
	sec, err := kcatSecurity(o.Security())
	if err != nil {
		return nil, err
	}
	base = append(base, sec...)

	ds := make([]protocol.Delivery, len(recs))
	for i := 0; i < len(recs); {
		// The group [i, j): one kcat invocation.
		// A record kcat cannot send gets its own error; the others are still sent.
		if err := kcatRefuse(recs[i]); err != nil {
			ds[i] = protocol.Delivery{Index: i, Error: err.Error()}
			i++
			continue
		}
		j := i + 1
		if o.Partition != nil {
			tombstones, empties := recs[i].Tombstone, kcatEmpty(recs[i])
			for j < len(recs) && kcatRefuse(recs[j]) == nil && slices.Equal(recs[j].Headers, recs[i].Headers) &&
				!(tombstones && kcatEmpty(recs[j])) && !(empties && recs[j].Tombstone) {
				tombstones, empties = tombstones || recs[j].Tombstone, empties || kcatEmpty(recs[j])
				j++
			}
		}
		if err := kcatGroup(ctx, bin, base, recs, i, j, ds, log); err != nil {
			for k := i; k < j; k++ {
				if ds[k] == (protocol.Delivery{}) {
					ds[k] = protocol.Delivery{Index: k, Error: err.Error()}
				}
			}
		}
		i = j
	}
	return ds, nil
}

// kcatBin is the kcat executable ($KCAT, or kcat on PATH).
func kcatBin() (string, error) {
	bin := os.Getenv("KCAT")
	if bin == "" {
		bin = "kcat"
	}
	if _, err := exec.LookPath(bin); err != nil {
		return "", fmt.Errorf("kcat: %w (install the Debian package kcat)", err)
	}
	return bin, nil
}

// kcatSecurity is the -X properties for the SASL and TLS settings.
func kcatSecurity(sec protocol.Security) ([]string, error) {
	if sec.SASLTokenFile != "" {
		return nil, errors.New("kcat runner: kcat cannot pass an OAUTHBEARER token (librdkafka needs an application callback)")
	}
	var args []string
	security := "PLAINTEXT"
	if sec.SASLUser != "" {
		security = "SASL_PLAINTEXT"
		args = append(args, "-X", "sasl.mechanisms="+sec.Mechanism(), "-X", "sasl.username="+sec.SASLUser, "-X", "sasl.password="+sec.SASLPassword)
	}
	if sec.TLSCA != "" {
		security = strings.Replace(security, "PLAINTEXT", "SSL", 1)
		args = append(args, "-X", "ssl.ca.location="+sec.TLSCA)
		if sec.TLSCert != "" {
			args = append(args, "-X", "ssl.certificate.location="+sec.TLSCert, "-X", "ssl.key.location="+sec.TLSKey)
		}
	}
	return append(args, "-X", "security.protocol="+security), nil
}

func kcatGroup(ctx context.Context, bin string, base []string, recs []protocol.Record, from, to int, ds []protocol.Delivery, log *slog.Logger) error {
	args := slices.Clone(base)
	for _, h := range recs[from].Headers {
		args = append(args, "-H", h.Key+"="+h.Value)
	}
	args = append(args, "-D", `\x1e`, "-K", `\x1f`)
	// -Z sends an empty value or key after the key delimiter as NULL: the group's tombstones are
	// its empty values. produceKcat keeps records with empty keys or values out of such groups.
	z := slices.ContainsFunc(recs[from:to], func(r protocol.Record) bool { return r.Tombstone })
	if z {
		args = append(args, "-Z")
	}
	var in bytes.Buffer
	for k := from; k < to; k++ {
		r := recs[k]
		if r.Tombstone {
			// -Z: an empty key before the delimiter is a null key, an empty value after it a null value.
			if r.Key != nil {
				in.WriteString(*r.Key)
			}
			in.WriteString(kcatKeyDelim)
		} else {
			// No key delimiter at all means a null key; an empty key before it means an empty key.
			if r.Key != nil {
				in.WriteString(*r.Key)
				in.WriteString(kcatKeyDelim)
			}
			in.WriteString(r.Value)
		}
		in.WriteString(kcatMsgDelim)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = &in
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	var other strings.Builder
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kcat: %w", err)
	}
	next := from
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if m := kcatDelivered.FindStringSubmatch(line); m != nil && next < to {
			p, _ := strconv.ParseInt(m[1], 10, 32)
			off, _ := strconv.ParseInt(m[2], 10, 64)
			ds[next] = protocol.Delivery{Index: next, Partition: protocol.Int32(int32(p)), Offset: protocol.Int64(off)}
			next++
			continue
		}
		if m := kcatFailed.FindStringSubmatch(line); m != nil && next < to {
			ds[next] = protocol.Delivery{Index: next, Error: "kcat: " + m[1]}
			next++
			continue
		}
		if other.Len() < 4096 {
			other.WriteString(line)
			other.WriteByte('\n')
		}
	}
	_, _ = io.Copy(io.Discard, stderr)
	werr := cmd.Wait()
	if next < to {
		msg := strings.TrimSpace(other.String())
		if werr != nil {
			msg = fmt.Sprintf("kcat exited (%v) after %d of %d delivery reports: %s", werr, next-from, to-from, lastLine(msg))
		} else {
			msg = fmt.Sprintf("kcat reported %d of %d deliveries: %s", next-from, to-from, lastLine(msg))
		}
		log.Warn("kcat", "detail", msg)
		return errors.New(msg)
	}
	return nil
}

// kcatRefuse says why kcat cannot send a record as it is, or returns nil when it can.
func kcatRefuse(r protocol.Record) error {
	for _, h := range r.Headers {
		if strings.Contains(h.Key, "=") {
			return fmt.Errorf("kcat: header name %q contains '=', which kcat -H cannot express", h.Key)
		}
	}
	switch {
	case r.TimestampMs != nil:
		return errors.New("kcat: kcat -P cannot set a record timestamp")
	case (!r.Tombstone && strings.Contains(r.Value, kcatMsgDelim)) || (r.Key != nil && strings.ContainsAny(*r.Key, kcatMsgDelim+kcatKeyDelim)):
		return errors.New("kcat: record contains the 0x1e/0x1f bytes used as kcat delimiters")
	case r.Tombstone && r.Key != nil && *r.Key == "":
		return errors.New("kcat: a tombstone with an empty (non-null) key cannot be sent: kcat -Z, which sends the null value, also turns an empty key into a null one")
	case !r.Tombstone && r.Value == "" && r.Key == nil:
		// kcat skips empty input messages entirely; there would be no delivery report.
		return errors.New("kcat: kcat -P drops empty messages (an empty value needs a non-null key)")
	}
	return nil
}

// kcatEmpty reports whether a record (not a tombstone) has an empty key or value, which kcat -Z
// would send as null.
func kcatEmpty(r protocol.Record) bool {
	return !r.Tombstone && (r.Value == "" || (r.Key != nil && *r.Key == ""))
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
