package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

func run(ctx context.Context, cfg *config, log *slog.Logger, out io.Writer) (err error) {
	root, err := stack.FindRoot(".")
	if err != nil {
		return err
	}
	load0 := loadAvg()
	if cfg.Overload > 0 {
		fmt.Fprintf(out, "machine: %d CPUs, load average %s at start; Ferry services' GOMAXPROCS %s; %s\n",
			runtime.NumCPU(), load0, serviceProcs(cfg.ServiceProcs), topology(cfg.Single))
		err := overloadPhase(ctx, cfg, root, makePayloads(cfg.Records), log, out)
		fmt.Fprintf(out, "load average %s at end\n", loadAvg())
		return err
	}
	if cfg.runs(targetKafka) || cfg.runs(targetBridge) || (cfg.runs(targetFerry) && (cfg.uses(producerPerfTest) || cfg.consumes(consumerPerf))) {
		if err := installJars(ctx, root, log); err != nil {
			return err
		}
	}
	if (cfg.runs(targetKafka) || cfg.runs(targetBridge)) && !clients.BrokerInstalled() {
		return fmt.Errorf("-targets kafka or kafka+bridge: %w", clients.ErrBrokerNotInstalled)
	}
	runRoot := filepath.Join(root, ".cache", "bench")
	if err := os.MkdirAll(runRoot, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(runRoot, "run-")
	if err != nil {
		return err
	}
	defer func() {
		// A failure's logs are worth reading; an interrupted run's are not.
		if cfg.Keep || (err != nil && ctx.Err() == nil) {
			log.Info("run directory kept", "dir", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()

	log.Info("generating records", "records", cfg.Records)
	p := makePayloads(cfg.Records)

	payloadFile := filepath.Join(dir, "records.jsonl")
	if err := p.writeFile(payloadFile); err != nil {
		return err
	}
	pt := perfTest{java: cfg.Java, lib: filepath.Join(runRoot, "kafka-tools-lib"), payload: payloadFile, cfg: cfg}

	var results []result
	if cfg.runs(targetKafka) {
		rs, err := kafkaPhase(ctx, cfg, root, dir, pt, p, log)
		if err != nil {
			return err
		}
		results = append(results, rs...)
	}
	if cfg.runs(targetFerry) || cfg.runs(targetFluss) || cfg.runs(targetBridge) {
		rs, err := flussPhase(ctx, cfg, root, dir, pt, p, log)
		if err != nil {
			return err
		}
		results = append(results, rs...)
	}
	load1 := loadAvg()
	fmt.Fprintf(out, "\n%d records per producer, %.0f bytes on average (JSON, 10 columns), %d partitions/buckets, "+
		"acks=all, idempotence off, compression %s, linger.ms %d, batch.size %d, %d requests in flight, Fluss Arrow %s, Ferry fetch answers %s, "+
		"%d Fluss tablet server(s), replication factor %d, Fluss server options {%s}\n",
		cfg.Records, p.avgSize(), cfg.Partitions, cfg.Compression, cfg.LingerMS, cfg.BatchSize, cfg.MaxInFlight, cfg.ArrowCompression, fetchCompression(cfg),
		cfg.Tablets, cfg.Replication, cfg.ServerOptions.String())
	fmt.Fprintf(out, "each producer first sent %d warm-up records in the same process (not measured); %d unmeasured warm-up round(s), "+
		"then %d round(s), median shown\n", cfg.warmupRecords(), cfg.WarmupRounds, cfg.Rounds)
	fmt.Fprintf(out, "machine: %d CPUs, load average %s at start, %s at end; Ferry services' GOMAXPROCS %s; %s\n\n",
		runtime.NumCPU(), load0, load1, serviceProcs(cfg.ServiceProcs), topology(cfg.Single))
	if err := writeTable(out, byPhase(results, phaseProduce)); err != nil {
		return err
	}
	if rs := byPhase(results, phaseConsume); len(rs) > 0 {
		fmt.Fprintf(out, "\nconsume: the first %d records of the %s topic/table read back from offset 0 of every partition/bucket "+
			"(after %d warm-up records read the same way by another client), timed from the first poll to the last record; "+
			"perf-test (kafka-consumer-perf-test): -records records in a fresh group, its fetch time, no warm-up; median round:\n\n",
			cfg.Records, consumedProducer(cfg), cfg.warmupRecords())
		if err := writeConsumeTable(out, rs); err != nil {
			return err
		}
	}
	if rs := byPhase(results, phaseTail); len(rs) > 0 {
		total, measured := tailRecords(cfg)
		fmt.Fprintf(out, "\ntail: a franz-go producer sends %d records/s (%d in all, the last %d measured) while a franz-go consumer "+
			"tails the topic from its end; latency = consumer's poll returned the record − just before Produce; median round by p50:\n\n",
			cfg.TailRate, total, measured)
		if err := writeTailTable(out, rs); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nCPU seconds per million records handled (measured and warm-up) and peak RSS, per process, median round:\n\n")
	ordered := slices.Concat(byPhase(results, phaseProduce), byPhase(results, phaseConsume), byPhase(results, phaseTail))
	if err := writeUsage(out, ordered); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nsummary of the produce rows: CPU seconds per million records handled, Ferry's services and the pipeline "+
		"(every measured process but the Kafka client: servers, services, bridge, Java writer); ratios of records/s and of CPU, median round:\n\n")
	if err := writeSummary(out, byPhase(results, phaseProduce)); err != nil {
		return err
	}
	if cfg.runs(targetFluss) {
		fmt.Fprintln(out, "\njava-writer: Fluss AppendWriter timed in its JVM; MB/s counts the same rows' JSON size.")
	}
	return nil
}

// installJars runs install.sh: kafka-tools and the broker from Maven Central, once.
func installJars(ctx context.Context, root string, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	script := filepath.Join(root, "e2e", "bench", "install.sh")
	cmd := exec.CommandContext(ctx, "bash", script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", script, err, lastLines(stderr.String(), 20))
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		log.Info("installed jars", "output", lastLines(s, 3))
	}
	return nil
}

// kafkaPhase starts the reference broker, runs the producers against it and stops it again.
func kafkaPhase(ctx context.Context, cfg *config, root, dir string, pt perfTest, p payloads, log *slog.Logger) (_ []result, err error) {
	b := &refBroker{
		script: filepath.Join(root, "e2e", "kafkabroker", "kafka-broker.sh"),
		dir:    filepath.Join(dir, "kafka"),
		addr:   "127.0.0.1:" + strconv.Itoa(cfg.KafkaPort),
	}
	log.Info("starting the reference Kafka broker", "addr", b.addr)
	if err := b.start(ctx, cfg); err != nil {
		return nil, err
	}
	defer func() {
		if serr := b.stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	prods := slices.DeleteFunc(strings.Split(cfg.Producers, ","), func(p string) bool { return p == producerFranzAvro })
	topicOf := func(prod string) string { return "bench_" + strings.ReplaceAll(prod, "-", "_") }
	const tailTopic = "bench_tail"
	topics := []string{}
	for _, prod := range prods {
		topics = append(topics, topicOf(prod))
	}
	if cfg.TailDuration > 0 {
		topics = append(topics, tailTopic)
	}
	for _, topic := range topics {
		if err := clients.CreateTopic(ctx, b.addr, topic, int32(cfg.Partitions)); err != nil {
			return nil, fmt.Errorf("create topic %s on the reference broker: %w", topic, err)
		}
	}
	// Rounds interleave the producers (and the consumers), so a burst of load elsewhere hits
	// all alike. Rounds below 1 are warm-up rounds: run, checked, not reported.
	rounds := roundResults{}
	for round := 1 - cfg.WarmupRounds; round <= cfg.Rounds; round++ {
		for _, prod := range inRoundOrder(round, prods) {
			r, err := produce(ctx, cfg, prod, targetKafka, b.addr, topicOf(prod), pt, p, round, b.watch(), log)
			if err != nil {
				return nil, err
			}
			rounds.keep(round, prod, r)
		}
		if cfg.consumes(consumerFranz) {
			r, err := consume(ctx, cfg, targetKafka, b.addr, topicOf(consumedProducer(cfg)), p, round, b.watch(), log)
			if err != nil {
				return nil, err
			}
			rounds.keep(round, phaseConsume, r)
		}
		if cfg.consumes(consumerPerf) {
			r, err := consumePerf(ctx, cfg, pt, targetKafka, b.addr, topicOf(consumedProducer(cfg)), round, b.watch(), log)
			if err != nil {
				return nil, err
			}
			rounds.keep(round, keyConsumePerf, r)
		}
		if cfg.TailDuration > 0 && round >= 1 {
			r, err := tail(ctx, cfg, targetKafka, b.addr, tailTopic, round, b.watch(), log)
			if err != nil {
				return nil, err
			}
			rounds.keep(round, phaseTail, r)
		}
	}
	var results []result
	for _, key := range []string{phaseConsume, keyConsumePerf} {
		if rs := rounds[key]; len(rs) > 0 {
			results = append(results, summarize(rs))
		}
	}
	if rs := rounds[phaseTail]; len(rs) > 0 {
		results = append(results, summarizeTail(rs))
		total, _ := tailRecords(cfg)
		if n, err := kafkaRecordCount(ctx, b.addr, tailTopic); err != nil {
			return nil, err
		} else if want := int64(cfg.Rounds) * total; n != want {
			return nil, fmt.Errorf("reference broker topic %s holds %d records, want %d", tailTopic, n, want)
		}
	}
	for _, prod := range prods {
		results = append(results, summarize(rounds[prod]))
		// The same check as for Fluss: the topic holds every record, once.
		want := cfg.producedRounds() * (cfg.Records + cfg.warmupRecords())
		n, err := kafkaRecordCount(ctx, b.addr, topicOf(prod))
		if err != nil {
			return nil, err
		}
		if n != want {
			return nil, fmt.Errorf("reference broker topic %s holds %d records, want %d", topicOf(prod), n, want)
		}
		log.Info("verified", "topic", topicOf(prod), "records", n)
	}
	return results, nil
}

// kafkaRecordCount sums the end offsets of every partition of topic.
func kafkaRecordCount(ctx context.Context, bootstrap, topic string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("list end offsets of %s: %w", topic, err)
	}
	if err := offs.Error(); err != nil {
		return 0, fmt.Errorf("list end offsets of %s: %w", topic, err)
	}
	var n int64
	offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n, nil
}

// produce runs one producer against one target, bounded by -run-timeout, and records what the
// watched server processes spent on it.
func produce(ctx context.Context, cfg *config, producer, target, bootstrap, topic string, pt perfTest, p payloads, round int,
	watch []watched, log *slog.Logger) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.RunTimeout)
	defer cancel()
	log.Info("producing", "producer", producer, "target", target, "topic", topic, "records", cfg.Records, "round", round)
	if producer == producerFranz || producer == producerFranzAvro {
		watch = append(slices.Clone(watch), self())
	}
	w, werr := startWindow(watch)
	if werr != nil {
		log.Warn("per-process usage incomplete", "err", werr)
	}
	var r result
	var err error
	switch producer {
	case producerPerfTest:
		r, err = pt.run(ctx, target, bootstrap, topic)
	case producerFranz:
		r, err = runFranz(ctx, cfg, target, bootstrap, topic, p)
	case producerFranzAvro:
		r, err = runFranz(ctx, cfg, target, bootstrap, topic, p)
		r.Producer = producerFranzAvro
	default:
		err = fmt.Errorf("unknown producer %q", producer)
	}
	if err != nil {
		return result{}, err
	}
	if err := r.addUsage(w, cfg); err != nil {
		return result{}, err
	}
	log.Info("done", "producer", producer, "target", target, "records/s", int64(r.RecPerSec), "MB/s", fmt.Sprintf("%.2f", r.MBPerSec))
	return r, nil
}

// consumedProducer is the producer whose topic (and Fluss table) the consumers read back:
// franz-go's (records in order) where it runs, else perf-test's.
func consumedProducer(cfg *config) string {
	if cfg.uses(producerFranz) {
		return producerFranz
	}
	return producerPerfTest
}

// self is this process, where the franz-go clients run.
func self() watched { return watched{name: "franz-go", pid: os.Getpid()} }

// consume reads topic back with the franz-go consumer (runFranzConsume), bounded by
// -run-timeout, and records what the watched processes and this one spent on it.
func consume(ctx context.Context, cfg *config, target, bootstrap, topic string, p payloads, round int,
	watch []watched, log *slog.Logger) (result, error) {
	log.Info("consuming", "consumer", consumerFranz, "target", target, "topic", topic, "records", cfg.Records,
		"warmup", cfg.warmupRecords(), "round", round)
	return measured(ctx, cfg, append(slices.Clone(watch), self()), cfg.Records+cfg.warmupRecords(), log,
		func(ctx context.Context) (result, error) {
			return runFranzConsume(ctx, cfg, target, bootstrap, topic, p)
		})
}

// keyConsumePerf keys kafka-consumer-perf-test's rounds (no producer's or table's name starts
// with "#").
const keyConsumePerf = "#consume-perf-test"

// consumePerf reads the first -records records of topic with kafka-consumer-perf-test in a fresh
// group, bounded by -run-timeout, and records what the watched processes and the tool's JVM
// spent on it. The tool has no warm-up of its own: its JVM starts cold every run.
func consumePerf(ctx context.Context, cfg *config, pt perfTest, target, bootstrap, topic string, round int,
	watch []watched, log *slog.Logger) (result, error) {
	log.Info("consuming", "consumer", "kafka-consumer-perf-test", "target", target, "topic", topic, "records", cfg.Records, "round", round)
	cp := consumerPerfTest{java: pt.java, lib: pt.lib}
	return measured(ctx, cfg, watch, cfg.Records, log, func(ctx context.Context) (result, error) {
		return cp.run(ctx, target, bootstrap, topic, cfg.Records)
	})
}

// tail measures produce→consume latency on topic (runTail), bounded by -run-timeout, and
// records what the watched processes and this one spent on it.
func tail(ctx context.Context, cfg *config, target, bootstrap, topic string, round int, watch []watched, log *slog.Logger) (result, error) {
	total, _ := tailRecords(cfg)
	log.Info("tailing", "target", target, "topic", topic, "records/s", cfg.TailRate, "duration", cfg.TailDuration, "round", round)
	return measured(ctx, cfg, append(slices.Clone(watch), self()), total, log,
		func(ctx context.Context) (result, error) { return runTail(ctx, cfg, target, bootstrap, topic) })
}

// measured runs fn bounded by -run-timeout inside a per-process window over watch, and adds
// the usage for handled records to its result.
func measured(ctx context.Context, cfg *config, watch []watched, handled int64, log *slog.Logger,
	fn func(context.Context) (result, error)) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.RunTimeout)
	defer cancel()
	w, werr := startWindow(watch)
	if werr != nil {
		log.Warn("per-process usage incomplete", "err", werr)
	}
	r, err := fn(ctx)
	if err != nil {
		return result{}, err
	}
	usage, err := w.end()
	if err != nil {
		return result{}, err
	}
	r.Procs, r.Handled = append(usage, r.Procs...), handled
	if r.Phase == phaseTail {
		log.Info("done", "phase", r.Phase, "target", r.Target, "p50", r.P50, "p99", r.P99, "max", r.Max)
	} else {
		log.Info("done", "phase", r.phase(), "client", r.Producer, "target", r.Target, "records/s", int64(r.RecPerSec),
			"MB/s", fmt.Sprintf("%.2f", r.MBPerSec))
	}
	return r, nil
}

// addUsage closes w and puts the servers' usage before the producer's own.
func (r *result) addUsage(w *procWindow, cfg *config) error {
	usage, err := w.end()
	if err != nil {
		return err
	}
	r.Procs, r.Handled = append(usage, r.Procs...), cfg.Records+cfg.warmupRecords()
	return nil
}

// watch is the broker's JVM, from the pid file kafka-broker.sh writes.
func (b *refBroker) watch() []watched {
	raw, err := os.ReadFile(filepath.Join(b.dir, "broker.pid"))
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil
	}
	return []watched{{name: "kafka-broker", pid: pid}}
}

// stackWatch is every process of the stack: the Fluss servers and Ferry's services.
func stackWatch(st *stack.Stack) []watched {
	var out []watched
	for _, p := range st.Processes() {
		out = append(out, watched{name: p.Name, pid: p.Pid()})
	}
	return out
}

// refBroker is the reference Kafka broker, run by e2e/kafkabroker/kafka-broker.sh on fixed ports
// (below the ephemeral range, so no client socket in TIME_WAIT can hold them).
type refBroker struct {
	script, dir, addr string
	once              sync.Once
	stopErr           error
}

func (b *refBroker) start(ctx context.Context, cfg *config) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.script, "start", "--dir", b.dir,
		"--port", strconv.Itoa(cfg.KafkaPort), "--controller-port", strconv.Itoa(cfg.KafkaControllerPort),
		"--partitions", strconv.Itoa(cfg.Partitions), "--wait", "150")
	out, err := cmd.CombinedOutput()
	if err != nil {
		// The script may have started the JVM before failing; stop whatever it left.
		return errors.Join(fmt.Errorf("start the reference Kafka broker: %w: %s", err, strings.TrimSpace(string(out))), b.stop())
	}
	return nil
}

// stop stops the broker once (SIGTERM, SIGKILL after 30 s), also when ctx is already done.
func (b *refBroker) stop() error {
	b.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, b.script, "stop", "--dir", b.dir).CombinedOutput()
		if err != nil {
			b.stopErr = fmt.Errorf("stop the reference Kafka broker: %w: %s", err, strings.TrimSpace(string(out)))
		}
	})
	return b.stopErr
}

// flussPhase starts the Ferry stack (with its own Fluss), creates the tables, runs the producers
// through Ferry and the Java writer directly, and checks every table's row count.
func flussPhase(ctx context.Context, cfg *config, root, dir string, pt perfTest, p payloads, log *slog.Logger) (_ []result, err error) {
	st, sc, err := startBenchStack(ctx, cfg, root, !cfg.runs(targetFerry), log)
	if err != nil {
		return nil, err
	}
	defer func() {
		log.Info("stopping the Ferry stack")
		if serr := st.Stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	helper, err := testenv.NewHelper(sc.HelperPath(), sc.FlussBootstrap())
	if err != nil {
		return nil, err
	}
	db := fmt.Sprintf("bench_%d", time.Now().Unix())
	if err := helper.CreateDatabase(ctx, db, false); err != nil {
		return nil, err
	}
	if cfg.ExternalFluss != "" {
		// Someone else's cluster keeps no bench data.
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if derr := helper.DropDatabase(dctx, db, true); derr != nil {
				err = errors.Join(err, fmt.Errorf("drop %s: %w", db, derr))
			}
		}()
	}
	// Java: the writer side (AppendBench) and the row counter (RowCount).
	jdir := filepath.Join(dir, "java")
	if err := os.MkdirAll(jdir, 0o755); err != nil {
		return nil, err
	}
	jw, err := compileJava(ctx, root, jdir, cfg.Java, log)
	if err != nil {
		return nil, err
	}
	// The kafka+bridge baseline: a reference broker beside the Fluss cluster, for Bridge.java.
	var br *bridge
	var broker *refBroker
	const bridgeTopic = "bench_bridge"
	if cfg.runs(targetBridge) {
		if br, err = compileBridge(ctx, root, jdir, cfg.Java, log); err != nil {
			return nil, err
		}
		broker = &refBroker{script: filepath.Join(root, "e2e", "kafkabroker", "kafka-broker.sh"),
			dir: filepath.Join(dir, "kafka-bridge"), addr: "127.0.0.1:" + strconv.Itoa(cfg.KafkaPort)}
		log.Info("starting the reference Kafka broker for the bridge", "addr", broker.addr)
		if err := broker.start(ctx, cfg); err != nil {
			return nil, err
		}
		defer func() {
			if serr := broker.stop(); serr != nil {
				err = errors.Join(err, serr)
			}
		}()
		if err := clients.CreateTopic(ctx, broker.addr, bridgeTopic, int32(cfg.Partitions)); err != nil {
			return nil, fmt.Errorf("create topic %s on the reference broker: %w", bridgeTopic, err)
		}
	}

	type table struct {
		name, producer string
		kafka          bool
		// tail is the table of the tail runs (no producer run of its own).
		tail bool
		// bridge is the table Bridge.java appends to.
		bridge bool
		// pk tables have PRIMARY KEY (id): upserts, a changelog instead of rows (pkChangelog).
		pk   bool
		rows int64
	}
	var tables []table
	if cfg.runs(targetFerry) {
		for _, prod := range strings.Split(cfg.Producers, ",") {
			// The warm-up records go to the same topic: the table holds both.
			tables = append(tables, table{name: strings.ReplaceAll(prod, "-", "_"), producer: prod, kafka: true,
				rows: cfg.Records + cfg.warmupRecords()})
		}
	}
	if cfg.PK && cfg.runs(targetFerry) {
		for _, prod := range strings.Split(cfg.Producers, ",") {
			if prod == producerFranzAvro {
				continue // the Avro row is an append row
			}
			tables = append(tables, table{name: strings.ReplaceAll(prod, "-", "_") + "_pk", producer: prod, kafka: true, pk: true})
		}
	}
	if cfg.PK && cfg.runs(targetFluss) {
		tables = append(tables, table{name: "java_upsert", producer: producerJavaUpsert, pk: true})
		if cfg.warmupRecords() > 0 {
			tables = append(tables, table{name: "java_upsert_warmup", pk: true})
		}
	}
	if cfg.runs(targetBridge) {
		tables = append(tables, table{name: "bridge", producer: producerFranz, bridge: true, rows: cfg.Records + cfg.warmupRecords()})
	}
	if cfg.runs(targetFerry) && cfg.TailDuration > 0 {
		total, _ := tailRecords(cfg)
		tables = append(tables, table{name: "tail", kafka: true, tail: true, rows: total})
	}
	if cfg.runs(targetFluss) {
		tables = append(tables, table{name: "java_writer", producer: producerJava, rows: cfg.Records})
		if w := cfg.warmupRecords(); w > 0 {
			tables = append(tables, table{name: "java_writer_warmup", rows: w})
		}
	}
	// What the consumers read back: the table Ferry's producer wrote; without Ferry, the
	// LogScanner reads the Java writer's tables.
	scanTable := strings.ReplaceAll(consumedProducer(cfg), "-", "_")
	scanWarmup := scanTable
	if !cfg.runs(targetFerry) {
		scanTable, scanWarmup = "java_writer", "java_writer_warmup"
	}
	var names []string
	for _, t := range tables {
		spec := testenv.TableSpec{Database: db, Table: t.name, Columns: benchColumns(), BucketCount: cfg.Partitions,
			Properties: tableProperties(cfg), Comment: "ferry e2e/bench"}
		if t.pk {
			spec.PrimaryKey = []string{"id"}
		}
		if t.kafka {
			// JSON is the default value format (docs/mapping.md); opting in is all it takes.
			spec.CustomProperties = map[string]string{"kafka.enabled": "true"}
			if t.producer == producerFranzAvro {
				spec.CustomProperties["kafka.value.format"] = "avro"
			}
			if cfg.FetchCompression != "" {
				spec.CustomProperties["kafka.fetch.compression"] = cfg.FetchCompression
			}
		}
		if _, err := helper.CreateTable(ctx, spec); err != nil {
			return nil, fmt.Errorf("create table %s.%s: %w", db, t.name, err)
		}
		names = append(names, t.name)
	}
	// Every bucket must have a leader before anything is measured, so no producer pays for
	// the tables' creation; RowCount retries until they answer.
	counts, err := jw.rowCounts(ctx, sc.FlussBootstrap(), db, time.Minute, names)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if counts[name] != 0 {
			return nil, fmt.Errorf("new table %s.%s already holds %d rows", db, name, counts[name])
		}
	}

	// Rounds by table name, and by these keys (no table's name: they start with "#") for the
	// consumers and the tail.
	const keyFerryConsume, keyScanner, keyTail = "#ferry-consume", "#log-scanner", "#tail"
	// Rounds below 1 are warm-up rounds: run, checked, not reported.
	rounds := roundResults{}
	for round := 1 - cfg.WarmupRounds; round <= cfg.Rounds; round++ {
		for _, t := range inRoundOrder(round, tables) {
			var r result
			var err error
			switch {
			case t.tail:
				continue
			case t.bridge:
				log.Info("bridging", "producer", producerFranz, "target", targetBridge, "records", cfg.Records, "round", round)
				watch := slices.Concat(stackWatch(st), broker.watch(), []watched{self()})
				r, err = measured(ctx, cfg, watch, cfg.Records+cfg.warmupRecords(), log, func(ctx context.Context) (result, error) {
					return br.run(ctx, cfg, broker.addr, bridgeTopic, sc.FlussBootstrap(), db, t.name, p)
				})
			case t.kafka && t.pk:
				// franz-go sends each record's primary key as its Kafka key; perf-test has no
				// keys to send, and Ferry takes the key from the value (docs/mapping.md §4.4).
				r, err = produce(ctx, cfg, t.producer, targetFerryPK, sc.KafkaAddr(), db+"."+t.name, pt, p.withKeys(), round, stackWatch(st), log)
			case t.kafka:
				before, serr := scrapeRequestJobs(ctx, cfg.appendMetricsPort())
				if errors.Is(serr, errNoRequestJobs) {
					serr = nil // no request yet: every count is 0
				}
				tp := p
				if t.producer == producerFranzAvro {
					// The schema is the registry's derived latest for the table; encoded
					// before the run, as the JSON rows are.
					if tp, err = avroPayloads(ctx, sc.RegistryURL(), db+"."+t.name, len(p.recs)); err != nil {
						return nil, err
					}
				}
				r, err = produce(ctx, cfg, t.producer, targetFerry, sc.KafkaAddr(), db+"."+t.name, pt, tp, round, stackWatch(st), log)
				if err == nil && serr == nil {
					var after requestJobs
					if after, serr = scrapeRequestJobs(ctx, cfg.appendMetricsPort()); serr == nil {
						r.JobsPerRequest = after.perRequest(before)
						log.Info("appendsvc coalescing", "producer", t.producer, "jobs", after.jobs-before.jobs,
							"fluss_requests", after.requests-before.requests, "jobs_per_request", fmt.Sprintf("%.3f", r.JobsPerRequest))
					}
				}
				if serr != nil {
					log.Warn("appendsvc's request_jobs not read", "err", serr)
				}
			case t.producer == producerJava || t.producer == producerJavaUpsert:
				rctx, cancel := context.WithTimeout(ctx, cfg.RunTimeout)
				log.Info("appending", "producer", t.producer, "rows", cfg.Records, "warmup", cfg.warmupRecords(), "round", round)
				w, werr := startWindow(stackWatch(st))
				if werr != nil {
					log.Warn("per-process usage incomplete", "err", werr)
				}
				r, err = jw.run(rctx, t.producer, sc.FlussBootstrap(), db, t.name, cfg.Records, p.bytes, t.name+"_warmup", cfg.warmupRecords())
				cancel()
				if err == nil {
					err = r.addUsage(w, cfg)
				}
				if err == nil {
					log.Info("done", "producer", t.producer, "target", r.Target, "rows/s", int64(r.RecPerSec))
				}
			default:
				continue // the warm-up table
			}
			if err != nil {
				return nil, err
			}
			rounds.keep(round, t.name, r)
		}
		if cfg.consumes(consumerFranz) && cfg.runs(targetFerry) {
			r, err := consume(ctx, cfg, targetFerry, sc.KafkaAddr(), db+"."+scanTable, p, round, stackWatch(st), log)
			if err != nil {
				return nil, err
			}
			rounds.keep(round, keyFerryConsume, r)
		}
		if cfg.consumes(consumerPerf) && cfg.runs(targetFerry) {
			r, err := consumePerf(ctx, cfg, pt, targetFerry, sc.KafkaAddr(), db+"."+scanTable, round, stackWatch(st), log)
			if err != nil {
				return nil, err
			}
			rounds.keep(round, keyConsumePerf, r)
		}
		if cfg.Consume && cfg.runs(targetFluss) {
			log.Info("scanning", "consumer", consumerScanner, "table", db+"."+scanTable, "rows", cfg.Records,
				"warmup", cfg.warmupRecords(), "round", round)
			bytes := int64(float64(cfg.Records)*p.avgSize() + 0.5)
			r, err := measured(ctx, cfg, stackWatch(st), cfg.Records+cfg.warmupRecords(), log, func(ctx context.Context) (result, error) {
				return jw.scan(ctx, sc.FlussBootstrap(), db, scanTable, cfg.Records, bytes, scanWarmup, cfg.warmupRecords(), cfg.RunTimeout)
			})
			if err != nil {
				return nil, err
			}
			rounds.keep(round, keyScanner, r)
		}
		if cfg.runs(targetFerry) && cfg.TailDuration > 0 && round >= 1 {
			r, err := tail(ctx, cfg, targetFerry, sc.KafkaAddr(), db+".tail", round, stackWatch(st), log)
			if err != nil {
				return nil, err
			}
			rounds.keep(round, keyTail, r)
		}
	}
	var results []result
	for _, key := range []string{keyFerryConsume, keyConsumePerf, keyScanner} {
		if rs := rounds[key]; len(rs) > 0 {
			results = append(results, summarize(rs))
		}
	}
	if rs := rounds[keyTail]; len(rs) > 0 {
		results = append(results, summarizeTail(rs))
	}
	for _, t := range tables {
		if rs := rounds[t.name]; len(rs) > 0 {
			results = append(results, summarize(rs))
		}
	}

	// Every acknowledged record must be a row, once: compare each table's end offsets.
	if counts, err = jw.rowCounts(ctx, sc.FlussBootstrap(), db, time.Minute, names); err != nil {
		return nil, err
	}
	for _, t := range tables {
		n := counts[t.name]
		if t.pk {
			lo, hi := pkChangelog(cfg, t.producer)
			if n < lo || n > hi {
				return nil, fmt.Errorf("primary-key table %s.%s holds %d changelog entries, want %d..%d", db, t.name, n, lo, hi)
			}
			log.Info("verified", "table", db+"."+t.name, "changelog", n)
			continue
		}
		want := cfg.producedRounds() * t.rows
		if t.tail {
			want = int64(cfg.Rounds) * t.rows
		}
		if n != want {
			return nil, fmt.Errorf("table %s.%s holds %d rows, want %d", db, t.name, n, want)
		}
		log.Info("verified", "table", db+"."+t.name, "rows", n)
	}
	return results, nil
}

// pkChangelog bounds the changelog entries (Fluss end offsets summed over buckets) a
// primary-key table holds after every round's upserts of producer ("" for the Java upsert
// warm-up table): a new key adds +I, a known one -U and +U (Fluss's default merge engine). The
// count is exact where the order of the keys is known: franz-go sends the warm-up's rows i mod
// -records, then rows 0..N-1, every round; UpsertBench rows 0..N-1 (its warm-up table
// 0..W-1). perf-test picks random lines of the payload file, so of its T upserts some d ≤ N
// keys are new: 2T-d entries, between 2T-min(N, T) and 2T-1.
func pkChangelog(cfg *config, producer string) (lo, hi int64) {
	n, w, rounds := cfg.Records, cfg.warmupRecords(), cfg.producedRounds()
	if producer == producerPerfTest {
		t := rounds * (n + w)
		return 2*t - min(n, t), 2*t - 1
	}
	seen := make([]bool, max(n, w))
	var entries int64
	upsert := func(count, mod int64) {
		for i := range count {
			if id := i % mod; seen[id] {
				entries += 2
			} else {
				seen[id] = true
				entries++
			}
		}
	}
	for range rounds {
		switch producer {
		case producerFranz:
			upsert(w, n)
			upsert(n, n)
		case producerJavaUpsert:
			upsert(n, n)
		default:
			upsert(w, w)
		}
	}
	return entries, entries
}

// tableProperties are the Fluss options of every bench table.
func tableProperties(cfg *config) map[string]string {
	return map[string]string{"table.log.arrow.compression.type": cfg.ArrowCompression,
		"table.replication.factor": strconv.Itoa(cfg.Replication)}
}

// roundResults are results by producer, consumer or tail, one per measured round. Rounds below
// 1 are warm-up rounds: run and checked, not kept.
type roundResults map[string][]result

func (m roundResults) keep(round int, key string, r result) {
	if round >= 1 {
		m[key] = append(m[key], r)
	}
}

// topology says how Ferry's services ran (-single).
func topology(single bool) string {
	if single {
		return "services in one process (-single)"
	}
	return "one process per service"
}

// serviceProcs says what -service-gomaxprocs gave the services.
func serviceProcs(n int) string {
	if n == 0 {
		return fmt.Sprintf("Go's default (%d)", runtime.NumCPU())
	}
	return strconv.Itoa(n)
}

// startBenchStack starts Fluss and, unless flussOnly, Ferry's services on the bench's ports.
func startBenchStack(ctx context.Context, cfg *config, root string, flussOnly bool, log *slog.Logger) (*stack.Stack, stack.Config, error) {
	sc := stack.DefaultConfig()
	sc.Name, sc.Root = "bench", root
	sc.ZooKeeperPort, sc.CoordinatorPort, sc.TabletPort = cfg.ZooKeeperPort, cfg.CoordinatorPort, cfg.TabletPort
	base := cfg.ServicePortBase
	sc.CatalogPort, sc.TranscodePorts, sc.AppendPort, sc.FrontdoorPort, sc.FetchPort = base+1, []int{base + 2, base + 12}, base+3, base+4, base+5
	sc.KafkaPort = cfg.FerryKafkaPort
	sc.SchemaPort, sc.RegistryPort = base+6, base+7
	// No metrics endpoints on the defaults, which would collide with a developer's stack; only
	// appendsvc's (the single process's), on the bench's own port, for its request_jobs.
	sc.CatalogMetricsPort, sc.TranscodeMetricsPorts, sc.AppendMetricsPort, sc.FrontdoorMetricsPort, sc.FetchMetricsPort, sc.SchemaMetricsPort = 0, nil, cfg.appendMetricsPort(), 0, 0, 0
	if cfg.Single {
		sc.AppendMetricsPort, sc.FrontdoorMetricsPort = 0, cfg.appendMetricsPort()
	}
	sc.LogLevel, sc.Java, sc.ServerHeap, sc.Keep = cfg.LogLevel, cfg.Java, cfg.ServerHeap, cfg.Keep
	sc.PprofPortOffset = cfg.PprofPortOffset
	sc.ServiceGOMAXPROCS = cfg.ServiceProcs
	sc.Single = cfg.Single
	sc.ExternalFluss = cfg.ExternalFluss
	sc.FlussOnly = flussOnly
	sc.ExtraTabletPorts = cfg.extraTabletPorts()
	sc.FlussServerOptions = cfg.ServerOptions
	log.Info("starting the Ferry stack", "fluss", sc.FlussBootstrap(), "kafka", sc.KafkaAddr(), "services", !sc.FlussOnly)
	st, err := stack.Start(ctx, sc, log)
	return st, sc, err
}

// loadAvg is the 1/5/15-minute load average, for the report ("?" where /proc is missing).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// fetchCompression names the codec of Ferry's Fetch answers.
func fetchCompression(cfg *config) string {
	if cfg.FetchCompression == "" {
		return "lz4 (default)"
	}
	return cfg.FetchCompression
}
