// Command bench measures Ferry against a real Apache Kafka broker and against the Fluss Java
// writer, in one run, with the same ~200-byte JSON records (ten mixed-type columns):
//
//   - kafka: Apache Kafka 4.4 (KRaft, one node, e2e/kafkabroker) — kafka-producer-perf-test and
//     a franz-go producer;
//   - ferry: the whole local stack (e2e/stack: ZooKeeper, Fluss coordinator and tablet server,
//     catalogsvc, two transcodesvc, appendsvc, frontdoor) — the same two producers into
//     JSON-format log tables;
//   - fluss: the official Fluss Java AppendWriter appending the same rows directly
//     (e2e/bench/appendbench/AppendBench.java).
//
// After each round's producers the records are read back (a group-less franz-go consumer
// through Kafka and through Ferry's fetchsvc, the Fluss Java LogScanner on the table Ferry
// wrote, ScanBench.java), and a producer and a consumer on a live tail measure produce→consume
// latency against Kafka and Ferry.
//
// The phases run one after another (Kafka is stopped before Ferry starts) so they do not
// compete for the CPU. At the end every Kafka topic and Fluss table must hold exactly the
// records produced into it (end offsets / Fluss ListOffsets). It is not part of `make test`:
//
//	make bench                       # = go run ./e2e/bench
//	go run ./e2e/bench -records 1000000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

var sigterm = syscall.SIGTERM

type config struct {
	Records          int64
	Partitions       int
	Compression      string // Kafka producer codec
	ArrowCompression string // Fluss tables' Arrow compression
	FetchCompression string // Ferry tables' kafka.fetch.compression; empty: the table default
	LingerMS         int
	BatchSize        int
	MaxInFlight      int
	Warmup           int64
	Rounds           int
	WarmupRounds     int
	Targets          string
	Producers        string
	Consumers        string
	Java             string
	LogLevel         string
	PprofPortOffset  int
	ServiceProcs     int
	// Single runs Ferry's services in one process (cmd/ferry) instead of one process each.
	Single bool
	// ExternalFluss is the coordinator of a running Fluss cluster to use instead of starting one.
	ExternalFluss string
	ServerHeap    string
	Timeout       time.Duration
	RunTimeout    time.Duration
	Keep          bool
	// Overload > 0 runs the overload mode instead of the throughput table.
	Overload       time.Duration
	OverloadFactor int
	// Tablets is the Fluss tablet servers; Replication the tables' replication factor.
	Tablets, Replication int
	// ServerOptions go into every Fluss server's server.yaml.
	ServerOptions optionFlag
	// Consume reads every round's records back (consume rows); TailRate records a second for
	// TailDuration measure produce→consume latency on a live tail (0: not measured).
	Consume bool
	// PK adds the primary-key rows: Ferry's producers and the Fluss UpsertWriter into tables
	// with PRIMARY KEY (id).
	PK           bool
	TailRate     int
	TailDuration time.Duration

	ZooKeeperPort, CoordinatorPort, TabletPort int
	ServicePortBase                            int
	FerryKafkaPort                             int
	KafkaPort, KafkaControllerPort             int
}

func (c *config) flags(fs *flag.FlagSet) {
	fs.Int64Var(&c.Records, "records", 200_000, "records each producer sends (rows the Java writer appends)")
	fs.IntVar(&c.Partitions, "partitions", 4, "partitions of every topic = buckets of every Fluss table")
	fs.StringVar(&c.Compression, "compression", "lz4", "producer compression.type: none, gzip, snappy, lz4 or zstd")
	fs.StringVar(&c.ArrowCompression, "arrow-compression", "LZ4_FRAME", "Fluss tables' Arrow compression: NONE, LZ4_FRAME or ZSTD")
	fs.StringVar(&c.FetchCompression, "fetch-compression", "", "Ferry tables' kafka.fetch.compression (the codec of Fetch answers): none, gzip, lz4 or zstd; empty: the table default (lz4)")
	fs.IntVar(&c.LingerMS, "linger-ms", 5, "producer linger.ms")
	fs.IntVar(&c.BatchSize, "batch-size", 65536, "producer batch.size (franz-go: ProducerBatchMaxBytes)")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", 5, "produce requests in flight per connection (Java max.in.flight.requests.per.connection, franz-go MaxProduceRequestsInflightPerBroker)")
	fs.Int64Var(&c.Warmup, "warmup", -1, "records each producer sends before the measured ones, in the same process (-1: half of -records; 0: none)")
	fs.IntVar(&c.Rounds, "rounds", 1, "measure every producer this many times (interleaved) and report the median round by records/s")
	fs.IntVar(&c.WarmupRounds, "warmup-rounds", 1, "unmeasured rounds of every producer and consumer before the measured ones, so the servers' JVMs (Kafka broker, Fluss tablet server) have compiled their hot paths before anything is timed; their records count in the row checks")
	fs.StringVar(&c.Targets, "targets", "kafka,ferry,fluss", "what to measure: any of kafka, ferry, fluss (the Java writer), kafka+bridge (the reference broker plus a Java consumer appending to Fluss)")
	fs.StringVar(&c.Producers, "producers", "perf-test,franz-go,franz-go-avro", "Kafka producers: any of perf-test, franz-go, franz-go-avro (Ferry only)")
	fs.StringVar(&c.Consumers, "consumers", "franz-go,perf-test", "Kafka consumers of the consume rows (with -consume): any of franz-go, perf-test (kafka-consumer-perf-test)")
	fs.StringVar(&c.Java, "java", "java", "java executable (perf-test, the Java writer, the Fluss servers)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "Ferry services' log level: debug, info, warn or error")
	fs.IntVar(&c.ServiceProcs, "service-gomaxprocs", 0, "Ferry stack: when positive, every Ferry service runs with GOMAXPROCS set to it, as a container CPU limit would (0: Go's default, every core)")
	fs.BoolVar(&c.Single, "single", false, "Ferry stack: run every service in one process (cmd/ferry, process \"ferry\") instead of one process each")
	fs.StringVar(&c.ExternalFluss, "external-fluss", "", "Ferry stack: coordinator host:port of a running Fluss cluster to use instead of starting one (its database bench_<time> is dropped at the end); needs -targets with ferry and one tablet")
	fs.IntVar(&c.PprofPortOffset, "pprof-port-offset", 0, "Ferry stack: when positive, every service serves Go profiles (/debug/pprof) on its gRPC port plus this offset")
	fs.StringVar(&c.ServerHeap, "server-heap", "1g", "JVM heap of the Fluss servers")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Minute, "bound for the whole run")
	fs.DurationVar(&c.RunTimeout, "run-timeout", 10*time.Minute, "bound for each producer run")
	fs.BoolVar(&c.Keep, "keep", false, "keep the run directory (payload file, broker and stack logs)")
	fs.DurationVar(&c.Overload, "overload", 0, "instead of the throughput table: -overload-factor franz-go producers each offer one producer's calibrated rate through Ferry for this long; fails if a Ferry process dies or exceeds its RSS ceiling, or an acknowledged record is lost")
	fs.IntVar(&c.Tablets, "tablets", 1, "Fluss tablet servers (the extra ones listen on -tablet-port+1, +2, ...)")
	fs.Var(&c.ServerOptions, "fluss-server-option", "key=value added to every Fluss server's configuration (repeatable), e.g. log.replica.fetch.wait-max-time=20ms")
	fs.IntVar(&c.Replication, "replication", 1, "Fluss tables' table.replication.factor (at most -tablets); the reference Kafka broker stays a single node")
	fs.BoolVar(&c.Consume, "consume", true, "after each round's producers, read the records back: a franz-go consumer through Kafka and Ferry, the Fluss LogScanner on the table Ferry wrote")
	fs.BoolVar(&c.PK, "pk", true, "also produce into primary-key tables (PRIMARY KEY (id)): Ferry's producers (franz-go with the key as JSON) and the Fluss UpsertWriter")
	fs.IntVar(&c.TailRate, "tail-rate", 2000, "records a second the tail producer sends while a consumer tails the topic")
	fs.DurationVar(&c.TailDuration, "tail-duration", 10*time.Second, "how long the tail producer sends (after 1 s of warm-up) each round; 0: no tail latency rows")
	fs.IntVar(&c.OverloadFactor, "overload-factor", 3, "producers (each offering what one gets through) in the overload mode")
	fs.IntVar(&c.ZooKeeperPort, "zk-port", 27181, "Ferry stack: ZooKeeper port")
	fs.IntVar(&c.CoordinatorPort, "coordinator-port", 27122, "Ferry stack: Fluss coordinator port")
	fs.IntVar(&c.TabletPort, "tablet-port", 27123, "Ferry stack: Fluss tablet server port")
	fs.IntVar(&c.ServicePortBase, "service-port-base", 27100, "Ferry stack: gRPC ports base+1 catalogsvc, +2 and +12 transcodesvc, +3 appendsvc, +4 frontdoor, +5 fetchsvc, +6 schemasvc (+7 its REST port); appendsvc's metrics +53")
	fs.IntVar(&c.FerryKafkaPort, "ferry-kafka-port", 27092, "Ferry stack: frontdoor's Kafka port")
	fs.IntVar(&c.KafkaPort, "kafka-port", 27192, "reference Kafka broker: client port")
	fs.IntVar(&c.KafkaControllerPort, "kafka-controller-port", 27193, "reference Kafka broker: KRaft controller port")
}

var (
	knownTargets   = []string{targetKafka, targetFerry, targetFluss, targetBridge}
	knownProducers = []string{producerPerfTest, producerFranz, producerFranzAvro}
	knownConsumers = []string{consumerFranz, consumerPerf}
)

// Validate names the first bad flag. Port availability is checked when things start.
func (c *config) Validate() error {
	switch {
	case c.Records <= 0 || c.Records > 100_000_000:
		return fmt.Errorf("-records %d: must be 1..100000000", c.Records)
	case c.Partitions <= 0 || c.Partitions > 1024:
		return fmt.Errorf("-partitions %d: must be 1..1024", c.Partitions)
	case !slices.Contains([]string{"none", "gzip", "snappy", "lz4", "zstd"}, c.Compression):
		return fmt.Errorf("-compression %q: want none, gzip, snappy, lz4 or zstd", c.Compression)
	case !slices.Contains([]string{"", "none", "gzip", "lz4", "zstd"}, c.FetchCompression):
		return fmt.Errorf("-fetch-compression %q: want none, gzip, lz4 or zstd", c.FetchCompression)
	case !slices.Contains([]string{"NONE", "LZ4_FRAME", "ZSTD"}, c.ArrowCompression):
		return fmt.Errorf("-arrow-compression %q: want NONE, LZ4_FRAME or ZSTD", c.ArrowCompression)
	case c.LingerMS < 0 || c.LingerMS > 60_000:
		return fmt.Errorf("-linger-ms %d: must be 0..60000", c.LingerMS)
	case c.BatchSize < 1024 || c.BatchSize > 16<<20:
		return fmt.Errorf("-batch-size %d: must be 1024..%d", c.BatchSize, 16<<20)
	case c.MaxInFlight < 1 || c.MaxInFlight > 100:
		return fmt.Errorf("-max-in-flight %d: must be 1..100", c.MaxInFlight)
	case c.Warmup < -1 || c.Warmup > 100_000_000:
		return fmt.Errorf("-warmup %d: must be -1 (half of -records), 0 or up to 100000000", c.Warmup)
	case c.Rounds < 1 || c.Rounds > 100:
		return fmt.Errorf("-rounds %d: must be 1..100", c.Rounds)
	case c.WarmupRounds < 0 || c.WarmupRounds > 10:
		return fmt.Errorf("-warmup-rounds %d: must be 0..10", c.WarmupRounds)
	case c.Java == "":
		return errors.New("-java: empty")
	case !slices.Contains([]string{"debug", "info", "warn", "error"}, c.LogLevel):
		return fmt.Errorf("-log-level %q: want debug, info, warn or error", c.LogLevel)
	case c.Timeout <= 0:
		return fmt.Errorf("-timeout %v: must be positive", c.Timeout)
	case c.RunTimeout <= 0 || c.RunTimeout > c.Timeout:
		return fmt.Errorf("-run-timeout %v: must be positive and at most -timeout (%v)", c.RunTimeout, c.Timeout)
	case c.Overload < 0 || c.Overload > time.Hour:
		return fmt.Errorf("-overload %v: must be 0 (off) up to 1h", c.Overload)
	case c.OverloadFactor < 1 || c.OverloadFactor > 32:
		return fmt.Errorf("-overload-factor %d: must be 1..32", c.OverloadFactor)
	case c.TailRate < 1 || c.TailRate > 100_000:
		return fmt.Errorf("-tail-rate %d: must be 1..100000", c.TailRate)
	case c.TailDuration < 0 || c.TailDuration > 10*time.Minute:
		return fmt.Errorf("-tail-duration %v: must be 0 (off) up to 10m", c.TailDuration)
	case c.Tablets < 1 || c.Tablets > 5:
		return fmt.Errorf("-tablets %d: must be 1..5", c.Tablets)
	case c.Replication < 1 || c.Replication > c.Tablets:
		return fmt.Errorf("-replication %d: must be 1..-tablets (%d)", c.Replication, c.Tablets)
	case c.ServiceProcs < 0 || c.ServiceProcs > 256:
		return fmt.Errorf("-service-gomaxprocs %d: must be 0..256", c.ServiceProcs)
	case c.ExternalFluss != "" && (!c.runs(targetFerry) || c.Tablets != 1 || c.Overload > 0):
		return errors.New("-external-fluss: needs ferry in -targets, -tablets 1 and no -overload (the cluster's servers are not the bench's)")
	}
	if err := checkList("-targets", c.Targets, knownTargets); err != nil {
		return err
	}
	if err := checkList("-producers", c.Producers, knownProducers); err != nil {
		return err
	}
	if err := checkList("-consumers", c.Consumers, knownConsumers); err != nil {
		return err
	}
	if c.ServicePortBase < 1024 || c.ServicePortBase+53 > 65535 {
		return fmt.Errorf("-service-port-base %d: must be 1024..%d", c.ServicePortBase, 65535-53)
	}
	seen := map[int]string{}
	for _, p := range c.ports() {
		if p.port < 1024 || p.port > 65535 {
			return fmt.Errorf("%s %d: must be 1024..65535", p.flag, p.port)
		}
		if other, dup := seen[p.port]; dup {
			return fmt.Errorf("%s %d: already used by %s", p.flag, p.port, other)
		}
		seen[p.port] = p.flag
	}
	return nil
}

// checkList accepts a comma-separated, non-empty list of known names without repeats.
func checkList(flagName, list string, known []string) error {
	if list == "" {
		return fmt.Errorf("%s: empty, want some of %s", flagName, strings.Join(known, ","))
	}
	var seen []string
	for _, s := range strings.Split(list, ",") {
		if !slices.Contains(known, s) {
			return fmt.Errorf("%s: unknown %q, want some of %s", flagName, s, strings.Join(known, ","))
		}
		if slices.Contains(seen, s) {
			return fmt.Errorf("%s: %q named twice", flagName, s)
		}
		seen = append(seen, s)
	}
	return nil
}

// optionFlag collects repeated key=value flags.
type optionFlag map[string]string

func (o *optionFlag) String() string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(*o)) {
		kv = append(kv, k+"="+(*o)[k])
	}
	return strings.Join(kv, ",")
}

func (o *optionFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want key=value", s)
	}
	if *o == nil {
		*o = optionFlag{}
	}
	(*o)[k] = v
	return nil
}

type flagPort struct {
	flag string
	port int
}

func (c *config) ports() []flagPort {
	b := c.ServicePortBase
	ps := []flagPort{
		{"-zk-port", c.ZooKeeperPort}, {"-coordinator-port", c.CoordinatorPort}, {"-tablet-port", c.TabletPort},
		{"-service-port-base (+1 catalogsvc)", b + 1}, {"-service-port-base (+2 transcodesvc)", b + 2},
		{"-service-port-base (+12 transcodesvc-2)", b + 12}, {"-service-port-base (+3 appendsvc)", b + 3},
		{"-service-port-base (+4 frontdoor)", b + 4}, {"-service-port-base (+5 fetchsvc)", b + 5},
		{"-service-port-base (+6 schemasvc)", b + 6}, {"-service-port-base (+7 schemasvc REST)", b + 7},
		{"-service-port-base (+53 appendsvc metrics)", b + 53},
		{"-ferry-kafka-port", c.FerryKafkaPort},
		{"-kafka-port", c.KafkaPort}, {"-kafka-controller-port", c.KafkaControllerPort},
	}
	for i := 1; i < c.Tablets; i++ {
		ps = append(ps, flagPort{fmt.Sprintf("-tablet-port (+%d, tablet server %d)", i, i+1), c.TabletPort + i})
	}
	return ps
}

// extraTabletPorts are the ports of the tablet servers beyond the first.
func (c *config) extraTabletPorts() []int {
	var ps []int
	for i := 1; i < c.Tablets; i++ {
		ps = append(ps, c.TabletPort+i)
	}
	return ps
}

func (c *config) runs(target string) bool {
	return slices.Contains(strings.Split(c.Targets, ","), target)
}

func (c *config) uses(producer string) bool {
	return slices.Contains(strings.Split(c.Producers, ","), producer)
}

// consumes tells whether consumer reads the records back (-consume and -consumers).
func (c *config) consumes(consumer string) bool {
	return c.Consume && slices.Contains(strings.Split(c.Consumers, ","), consumer)
}

// warmupRecords resolves -warmup -1.
func (c *config) warmupRecords() int64 {
	if c.Warmup < 0 {
		return c.Records / 2
	}
	return c.Warmup
}

// producedRounds is how many times every producer writes its topic: warm-up rounds and
// measured ones.
func (c *config) producedRounds() int64 { return int64(c.WarmupRounds + c.Rounds) }

// inRoundOrder returns xs in round's order: reversed in even rounds, so no producer always
// runs right after another one's load (or always on the servers' coldest code).
func inRoundOrder[T any](round int, xs []T) []T {
	if round%2 != 0 {
		return xs
	}
	r := slices.Clone(xs)
	slices.Reverse(r)
	return r
}

// parseConfig parses and validates the command line.
func parseConfig(args []string, stderr io.Writer) (*config, error) {
	var cfg config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.flags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Ctrl-C or SIGTERM cancels the context; every phase then stops what it started before
	// run returns (deferred stops), so no broker, JVM or service outlives the command.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := run(ctx, cfg, log, os.Stdout); err != nil {
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			log.Error("bench interrupted; everything it started is stopped", "err", err)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			log.Error("bench ran out of -timeout; everything it started is stopped", "timeout", cfg.Timeout, "err", err)
		default:
			log.Error("bench failed", "err", err)
		}
		cancel()
		stop()
		os.Exit(1)
	}
}
