// Package clients drives real, unmodified Kafka clients — Java kafka-clients, kcat (librdkafka),
// kafkajs, confluent-kafka (Python, librdkafka), franz-go, IBM/sarama, segmentio/kafka-go and
// kafka-python —
// through one uniform command-line contract (README.md), so end-to-end tests can send the same
// records with every client and compare what each one got acknowledged, and read topics back with
// each of them.
//
// Every client is a runner script in bin/ taking `produce [flags] < records.jsonl` and
// `consume [flags]`; this package feeds the records, enforces the deadline and parses the delivery
// reports and consumed records.
package clients

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// Record, Header, Headers, Delivery and Options are the contract's types.
type (
	Record   = protocol.Record
	Header   = protocol.Header
	Headers  = protocol.Headers
	Delivery = protocol.Delivery
	Options  = protocol.Options
)

// Client is one client library's runner.
type Client struct {
	// Name is the runner's name in bin/ and in test names: java, kcat, kafkajs, confluent-kafka,
	// franz, sarama, kafka-go, kafka-python.
	Name string
	// Library names the real library and how it is installed.
	Library string
	// Unsupported lists what the client cannot do — compression codecs it cannot produce with,
	// consume modes (ConsumeAssign, ConsumeGroup) it lacks — with the reason.
	Unsupported map[string]string
	// NoTimestamps is set when the client cannot set a record's timestamp.
	NoTimestamps bool
	// NoIdempotence is set when the client has no idempotent producer.
	NoIdempotence bool
	// DefaultAcks is the acks the client sends when --acks is not given ("0", "1" or "all").
	DefaultAcks string
	// ConnectionPerRecord is set when the runner may send each record from a process (and
	// connection) of its own: with acks=0 nothing orders one connection's request after the
	// previous one's, so such records may be stored in any order.
	ConnectionPerRecord bool
	// EmptyReadsAsNull is set when the client's consumer delivers empty keys, values and header
	// values as null.
	EmptyReadsAsNull bool
	// AssignFindsCoordinator is set when the consumer looks up a group coordinator
	// (FindCoordinator) even without a group: confluent-kafka, whose Consumer needs a group.id.
	AssignFindsCoordinator bool
	// NoKeylessTombstones is set when the producer refuses a record whose key and value are both
	// null: kafka-python.
	NoKeylessTombstones bool

	runner string // absolute path of bin/<Name>
}

// Supports reports whether the client can do feature — produce with a compression codec ("zstd"
// …) or consume in a mode (ConsumeAssign, ConsumeGroup) — and if not why.
func (c Client) Supports(feature string) (bool, string) {
	why, bad := c.Unsupported[feature]
	return !bad, why
}

// Runner is the absolute path of the client's runner script.
func (c Client) Runner() string { return c.runner }

// Dir is the directory of this package's sources (e2e/clients), found from this file's location;
// FERRY_CLIENTS_DIR overrides it.
func Dir() string {
	if d := os.Getenv("FERRY_CLIENTS_DIR"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// All lists every client of the harness, in a fixed order.
func All() []Client {
	bin := filepath.Join(Dir(), "bin")
	cs := []Client{
		{Name: "java", Library: "org.apache.kafka:kafka-clients (Maven Central)", DefaultAcks: "all"},
		{Name: "kcat", Library: "kcat + librdkafka (Debian package kcat)", DefaultAcks: "all", NoTimestamps: true, ConnectionPerRecord: true,
			Unsupported: map[string]string{ConsumeTopicRegex: noRegex}},
		{Name: "kafkajs", Library: "kafkajs (npm) with kafkajs-snappy and kafkajs-lz4 codecs", DefaultAcks: "all",
			Unsupported: map[string]string{"zstd": "kafkajs ships no zstd codec and the npm codec @kafkajs/zstd (native cppzst) does not build on Node 20",
				ConsumeAssign: "kafkajs has no group-less consumer: its Consumer always joins a group", ConsumeTopicRegex: noRegex}},
		{Name: "confluent-kafka", Library: "confluent-kafka (PyPI wheel, bundled librdkafka)", DefaultAcks: "all", AssignFindsCoordinator: true},
		{Name: "franz", Library: "github.com/twmb/franz-go/pkg/kgo (Go module)", DefaultAcks: "all"},
		{Name: "sarama", Library: "github.com/IBM/sarama (Go module)", DefaultAcks: "1", Unsupported: map[string]string{ConsumeTopicRegex: noRegex}},
		{Name: "kafka-go", Library: "github.com/segmentio/kafka-go (Go module)", DefaultAcks: "0", NoIdempotence: true, EmptyReadsAsNull: true,
			Unsupported: map[string]string{ConsumeTopicRegex: noRegex}},
		{Name: "kafka-python", Library: "kafka-python (PyPI, pure Python)", DefaultAcks: "all", NoKeylessTombstones: true,
			Unsupported: map[string]string{ConsumeTopicRegex: noRegex}},
	}
	for i := range cs {
		cs[i].runner = filepath.Join(bin, cs[i].Name)
	}
	return cs
}

// noRegex is why a runner refuses --topic-regex: the pattern subscriptions of the java,
// confluent-kafka and franz runners cover the three client families issue #28 asks for.
const noRegex = "--topic-regex is not implemented in this runner"

// ByName returns the named client.
func ByName(name string) (Client, error) {
	for _, c := range All() {
		if c.Name == name {
			return c, nil
		}
	}
	return Client{}, fmt.Errorf("clients: unknown client %q", name)
}

// Available checks that the client's runner can start here (its toolchain and installed libraries
// exist), by running `<runner> check`. A non-nil error says what is missing.
func (c Client) Available(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.runner, "check").CombinedOutput()
	if err != nil {
		return fmt.Errorf("client %s not available: %v: %s", c.Name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Result is the outcome of one run.
type Result struct {
	// Deliveries are the runner's reports, indexed by record (Deliveries[i].Index == i).
	Deliveries []Delivery
	ExitCode   int
	Stderr     string
	Elapsed    time.Duration
}

// Err summarizes the failed deliveries, or nil when every record was acknowledged.
func (r Result) Err() error {
	var errs []error
	for _, d := range r.Deliveries {
		if !d.OK() {
			errs = append(errs, fmt.Errorf("record %d: %s", d.Index, d.Error))
		}
	}
	if len(errs) == 0 && r.ExitCode != 0 {
		errs = append(errs, fmt.Errorf("runner exit code %d: %s", r.ExitCode, tail(r.Stderr, 800)))
	}
	return errors.Join(errs...)
}

// Produce runs the client with opts over recs. It returns an error when the runner could not be run
// or broke the contract (missing or malformed reports, exit code disagreeing with the reports);
// per-record failures are in the Result (see Result.Err). ctx bounds the process; opts.Timeout is
// the runner's own deadline (protocol.DefaultTimeout when zero).
func (c Client) Produce(ctx context.Context, opts Options, recs []Record) (Result, error) {
	if opts.Timeout == 0 {
		opts.Timeout = protocol.DefaultTimeout
	}
	if err := opts.Validate(); err != nil {
		return Result{}, fmt.Errorf("clients: options: %w", err)
	}
	var in bytes.Buffer
	if err := protocol.WriteRecords(&in, recs); err != nil {
		return Result{}, err
	}
	r, err := c.runRunner(ctx, opts.Timeout, &in, append([]string{"produce"}, opts.Args()...))
	res := Result{ExitCode: r.exitCode, Stderr: r.stderr, Elapsed: r.elapsed}
	if err != nil {
		return res, err
	}
	ds, err := protocol.ReadDeliveries(bytes.NewReader(r.stdout))
	if err != nil {
		return res, fmt.Errorf("clients: %s output: %w", c.Name, err)
	}
	res.Deliveries = make([]Delivery, len(recs))
	seen := make([]bool, len(recs))
	allOK := true
	for _, d := range ds {
		if d.Index < 0 || d.Index >= len(recs) || seen[d.Index] {
			return res, fmt.Errorf("clients: %s reported index %d (records: %d) twice or out of range", c.Name, d.Index, len(recs))
		}
		if d.OK() && (d.Partition == nil || d.Offset == nil) {
			return res, fmt.Errorf("clients: %s reported record %d delivered without partition/offset", c.Name, d.Index)
		}
		seen[d.Index] = true
		res.Deliveries[d.Index] = d
		allOK = allOK && d.OK()
	}
	for i, s := range seen {
		if !s {
			return res, fmt.Errorf("clients: %s gave no report for record %d (exit %d): %s", c.Name, i, res.ExitCode, tail(res.Stderr, 800))
		}
	}
	if allOK != (res.ExitCode == 0) {
		return res, fmt.Errorf("clients: %s exit code %d disagrees with its reports (all delivered: %v)", c.Name, res.ExitCode, allOK)
	}
	return res, nil
}

// runOutcome is what one runner process left.
type runOutcome struct {
	stdout   []byte
	exitCode int
	stderr   string
	elapsed  time.Duration
}

// runRunner runs the runner with args and stdin. The process gets the runner's own deadline plus
// slack for its start-up (a JVM, node) and shutdown; a run that could not start, did not finish or
// exited 2 (bad flags or input) is an error.
func (c Client) runRunner(ctx context.Context, timeout time.Duration, stdin io.Reader, args []string) (runOutcome, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.runner, args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	r := runOutcome{stdout: stdout.Bytes(), stderr: stderr.String(), elapsed: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &exit):
		r.exitCode = exit.ExitCode()
	default:
		return r, fmt.Errorf("clients: run %s: %w", c.Name, runErr)
	}
	if ctx.Err() != nil {
		return r, fmt.Errorf("clients: %s did not finish within %v: %s", c.Name, timeout+30*time.Second, tail(r.stderr, 800))
	}
	if r.exitCode == protocol.ExitUsage {
		return r, fmt.Errorf("clients: %s rejected its flags or input (exit 2): %s", c.Name, tail(r.stderr, 800))
	}
	return r, nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
