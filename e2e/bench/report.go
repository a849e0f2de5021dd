package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ferrygw/ferry/e2e/stack"
)

// Targets and producers, as they appear in the table.
const (
	targetFerry = "ferry"
	targetKafka = "kafka"
	targetFluss = "fluss"
	// targetBridge is the reference Kafka broker plus Bridge.java appending into Fluss.
	targetBridge = "kafka+bridge"
	// targetFerryPK and targetFlussPK write primary-key tables: Ferry (upserts from Kafka
	// records) and the Fluss UpsertWriter.
	targetFerryPK = "ferry-pk"
	targetFlussPK = "fluss-pk"

	producerPerfTest = "perf-test"
	producerFranz    = "franz-go"
	// producerFranzAvro is franz-go sending the rows as Avro (avro.go) into an avro-format
	// table; Ferry only, the reference broker has no registry.
	producerFranzAvro = "franz-go-avro"
	producerJava      = "java-writer"
	// producerJavaUpsert is the Fluss UpsertWriter (UpsertBench.java).
	producerJavaUpsert = "java-upsert"

	// consumerFranz is the franz-go group-less consumer; consumerScanner the Fluss Java
	// LogScanner (ScanBench.java).
	consumerFranz   = "franz-go"
	consumerScanner = "log-scanner"
	// consumerPerf is kafka-consumer-perf-test (consumeperf.go).
	consumerPerf = "perf-test"
)

// Phases of a result: what the run measured.
const (
	phaseProduce = "produce"
	phaseConsume = "consume"
	phaseTail    = "tail"
)

// result is one client's measurement against one target: a producer's (phase produce), a
// consumer's reading a topic or table back (consume), or a producer and a consumer on a live
// tail (tail).
type result struct {
	// Phase is phaseProduce (also when empty), phaseConsume or phaseTail.
	Phase  string
	Target string
	// Producer is the client: the producer, or for consume the consumer.
	Producer string
	Records  int64
	// RecPerSec and MBPerSec are the throughput; MB is 2^20 bytes of record values, as
	// kafka-producer-perf-test counts it (for the Java writer: the same rows' JSON size).
	RecPerSec float64
	MBPerSec  float64
	// WirePerRecord is the bytes of Fetch answers the consumer read per record (consume runs
	// of franz-go only; 0 elsewhere): what crossed the wire, as the server compressed it.
	WirePerRecord float64
	// JobsPerRequest is the jobs per Fluss ProduceLog request appendsvc sent during a Ferry
	// produce run into a log table (ferry_append_request_jobs; 0 where not measured).
	JobsPerRequest float64
	// P50 and P99 are per-record latencies from send to acknowledgement; HasLatency is false
	// where the producer measures none (the Java writer times the whole run only).
	P50, P99   time.Duration
	HasLatency bool
	// Max is the highest latency (tail runs only).
	Max time.Duration
	// MinP99 and MaxP99 are the range of P99 over the rounds (tail runs only).
	MinP99, MaxP99 time.Duration
	// Rounds is how many measurements this result summarizes (see summarize); MinRecPerSec
	// and MaxRecPerSec are their range.
	Rounds                     int
	MinRecPerSec, MaxRecPerSec float64
	// Procs is what each server process (and the Java writer) spent on the run, which handled
	// Handled records (the measured ones and the warm-up).
	Procs   []procUsage
	Handled int64
}

// summarize returns the median round by records/s (the lower middle one for an even count),
// with the range of all rounds. Latencies are the median round's, not medians of their own, so
// one row always describes one real run.
func summarize(rounds []result) result {
	if len(rounds) == 0 {
		return result{}
	}
	sorted := slices.Clone(rounds)
	slices.SortStableFunc(sorted, func(a, b result) int { return cmp.Compare(a.RecPerSec, b.RecPerSec) })
	m := sorted[(len(sorted)-1)/2]
	m.Rounds = len(rounds)
	m.MinRecPerSec, m.MaxRecPerSec = sorted[0].RecPerSec, sorted[len(sorted)-1].RecPerSec
	return m
}

// summarizeTail returns the median tail round by p50 latency (the lower middle one for an even
// count), with the range of p99 over all rounds.
func summarizeTail(rounds []result) result {
	if len(rounds) == 0 {
		return result{}
	}
	sorted := slices.Clone(rounds)
	slices.SortStableFunc(sorted, func(a, b result) int { return cmp.Compare(a.P50, b.P50) })
	m := sorted[(len(sorted)-1)/2]
	m.Rounds = len(rounds)
	m.MinP99, m.MaxP99 = m.P99, m.P99
	for _, r := range rounds {
		m.MinP99, m.MaxP99 = min(m.MinP99, r.P99), max(m.MaxP99, r.P99)
	}
	return m
}

// phase is r.Phase, produce when empty.
func (r result) phase() string {
	if r.Phase == "" {
		return phaseProduce
	}
	return r.Phase
}

// byPhase returns the results of one phase, in order.
func byPhase(rs []result, phase string) []result {
	var out []result
	for _, r := range rs {
		if r.phase() == phase {
			out = append(out, r)
		}
	}
	return out
}

// throughput fills RecPerSec and MBPerSec from counts and a duration.
func throughput(records, bytes int64, elapsed time.Duration) (recPerSec, mbPerSec float64) {
	if elapsed <= 0 {
		return 0, 0
	}
	s := elapsed.Seconds()
	return float64(records) / s, float64(bytes) / (1 << 20) / s
}

// find returns the result of producer against target, if measured (rs of one phase).
func find(rs []result, target, producer string) (result, bool) {
	for _, r := range rs {
		if r.Target == target && r.Producer == producer {
			return r, true
		}
	}
	return result{}, false
}

// ratio formats a/b as "1.23x", or "-" when either side is missing or zero.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// writeTable prints every result and, for Ferry rows, how they compare with Kafka (same
// producer), with the Kafka+bridge pipeline and with the Fluss Java writer (rows/s); Ferry's
// primary-key rows compare with the Java UpsertWriter instead.
func writeTable(w io.Writer, rs []result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	multi := slices.ContainsFunc(rs, func(r result) bool { return r.Rounds > 1 })
	header := "target\tproducer\trecords\trecords/s\tMB/s\tp50 ms\tp99 ms\tFerry/Kafka\tFerry/Kafka+bridge\tFerry/Fluss-Java\t"
	if multi {
		header += "rounds\tmin..max records/s\t"
	}
	fmt.Fprintln(tw, header)
	java, haveJava := find(rs, targetFluss, producerJava)
	upsert, haveUpsert := find(rs, targetFlussPK, producerJavaUpsert)
	bridge, haveBridge := find(rs, targetBridge, producerFranz)
	for _, r := range rs {
		p50, p99 := "-", "-"
		if r.HasLatency {
			p50, p99 = millis(r.P50), millis(r.P99)
		}
		vsKafka, vsBridge, vsJava := "", "", ""
		if r.Target == targetFerry || r.Target == targetFerryPK {
			vsKafka, vsBridge, vsJava = "-", "-", "-"
			if k, ok := find(rs, targetKafka, r.Producer); ok {
				vsKafka = ratio(r.RecPerSec, k.RecPerSec)
			}
			if haveBridge {
				vsBridge = ratio(r.RecPerSec, bridge.RecPerSec)
			}
			switch {
			case r.Target == targetFerryPK && haveUpsert:
				vsJava = ratio(r.RecPerSec, upsert.RecPerSec)
			case r.Target == targetFerry && haveJava:
				vsJava = ratio(r.RecPerSec, java.RecPerSec)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t", r.Target, r.Producer, r.Records,
			groupThousands(int64(r.RecPerSec+0.5)), r.MBPerSec, p50, p99, vsKafka, vsBridge, vsJava)
		if multi {
			fmt.Fprintf(tw, "%d\t%s..%s\t", max(r.Rounds, 1), groupThousands(int64(r.MinRecPerSec+0.5)), groupThousands(int64(r.MaxRecPerSec+0.5)))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// writeConsumeTable prints every consume result and, for Ferry rows, how they compare with the
// same consumer on Kafka and with the Fluss LogScanner reading the table Ferry wrote.
func writeConsumeTable(w io.Writer, rs []result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	multi := slices.ContainsFunc(rs, func(r result) bool { return r.Rounds > 1 })
	header := "target\tconsumer\trecords\trecords/s\tMB/s\twire B/record\tFerry/Kafka\tFerry/LogScanner\t"
	if multi {
		header += "rounds\tmin..max records/s\t"
	}
	fmt.Fprintln(tw, header)
	scanner, haveScanner := find(rs, targetFluss, consumerScanner)
	for _, r := range rs {
		vsKafka, vsScanner := "", ""
		if r.Target == targetFerry {
			vsKafka = "-"
			if k, ok := find(rs, targetKafka, r.Producer); ok {
				vsKafka = ratio(r.RecPerSec, k.RecPerSec)
			}
			vsScanner = "-"
			if haveScanner {
				vsScanner = ratio(r.RecPerSec, scanner.RecPerSec)
			}
		}
		wire := "-"
		if r.WirePerRecord > 0 {
			wire = fmt.Sprintf("%.1f", r.WirePerRecord)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.2f\t%s\t%s\t%s\t", r.Target, r.Producer, r.Records,
			groupThousands(int64(r.RecPerSec+0.5)), r.MBPerSec, wire, vsKafka, vsScanner)
		if multi {
			fmt.Fprintf(tw, "%d\t%s..%s\t", max(r.Rounds, 1), groupThousands(int64(r.MinRecPerSec+0.5)), groupThousands(int64(r.MaxRecPerSec+0.5)))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// writeTailTable prints the produce→consume latency of each tail result.
func writeTailTable(w io.Writer, rs []result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	multi := slices.ContainsFunc(rs, func(r result) bool { return r.Rounds > 1 })
	header := "target\tclients\trecords\trecords/s\tp50 ms\tp99 ms\tmax ms\t"
	if multi {
		header += "rounds\tmin..max p99 ms\t"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t", r.Target, r.Producer, r.Records,
			groupThousands(int64(r.RecPerSec+0.5)), millis(r.P50), millis(r.P99), millis(r.Max))
		if multi {
			fmt.Fprintf(tw, "%d\t%s..%s\t", max(r.Rounds, 1), millis(r.MinP99), millis(r.MaxP99))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func millis(d time.Duration) string {
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
}

// groupThousands writes n with thin separators: 1234567 → "1 234 567".
func groupThousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// isFerry tells Ferry's own services from the Fluss servers and the rest.
func isFerry(name string) bool {
	switch {
	case name == stack.Frontdoor, name == stack.Catalog, name == stack.Append, name == stack.Fetch,
		strings.HasPrefix(name, stack.Transcode), name == stack.Single:
		return true
	}
	return false
}

// writeUsage prints, per result, each process's CPU seconds per million records handled and its
// peak RSS, with Ferry's services summed ("ferry": CPU added up, RSS added up too, as the
// processes run side by side); a JVM's JIT compiler time is shown inside its figure.
func writeUsage(w io.Writer, rs []result) error {
	var names []string
	for _, r := range rs {
		for _, u := range r.Procs {
			if !slices.Contains(names, u.Name) {
				names = append(names, u.Name)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "target\tphase\tclient\tferry\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t", n)
	}
	fmt.Fprintln(tw)
	for _, r := range rs {
		if r.Handled <= 0 {
			continue
		}
		perM := func(d time.Duration) float64 { return d.Seconds() / (float64(r.Handled) / 1e6) }
		cell := func(cpu, jit time.Duration, rss int64) string {
			if jit > 0 {
				return fmt.Sprintf("%.2f s/M (JIT %.2f) %d MiB", perM(cpu), perM(jit), rss>>20)
			}
			return fmt.Sprintf("%.2f s/M %d MiB", perM(cpu), rss>>20)
		}
		var ferryCPU time.Duration
		var ferryRSS int64
		by := map[string]procUsage{}
		for _, u := range r.Procs {
			by[u.Name] = u
			if isFerry(u.Name) {
				ferryCPU += u.CPU
				ferryRSS += u.PeakRSS
			}
		}
		total := "-"
		if ferryCPU > 0 {
			total = cell(ferryCPU, 0, ferryRSS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t", r.Target, r.phase(), r.Producer, total)
		for _, n := range names {
			if u, ok := by[n]; ok {
				fmt.Fprintf(tw, "%s\t", cell(u.CPU, u.JIT, u.PeakRSS))
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// isClient tells the Kafka clients' processes (the producer or consumer that drives a run) from
// what a deployment runs: servers, Ferry's services, the bridge and the Java writers.
func isClient(name string) bool {
	return name == "franz-go" || name == "producer" || name == "consumer"
}

// cpuPerM is r's CPU seconds per million handled records: Ferry's services, and everything but
// the client (the pipeline: servers, bridge or Java writer, and Ferry's services in Ferry's rows
// only, as they idle in the others); ok is false without usage.
func (r result) cpuPerM() (ferry, pipeline float64, ok bool) {
	if r.Handled <= 0 || len(r.Procs) == 0 {
		return 0, 0, false
	}
	var f, all time.Duration
	ferryRow := r.Target == targetFerry || r.Target == targetFerryPK
	for _, u := range r.Procs {
		if isFerry(u.Name) {
			f += u.CPU
		}
		if !isClient(u.Name) && (ferryRow || !isFerry(u.Name)) {
			all += u.CPU
		}
	}
	m := float64(r.Handled) / 1e6
	return f.Seconds() / m, all.Seconds() / m, true
}

// procCPUPerM is one process's CPU seconds per million handled records in r (0 if absent).
func (r result) procCPUPerM(name string) float64 {
	for _, u := range r.Procs {
		if u.Name == name && r.Handled > 0 {
			return u.CPU.Seconds() / (float64(r.Handled) / 1e6)
		}
	}
	return 0
}

// writeSummary prints, per produce row, what issue #29's table states: records/s and latency,
// CPU per million records (Ferry's services; the whole pipeline without the client), and the
// ratios to Kafka (same producer), to Kafka+bridge and to the Fluss Java writer (the
// UpsertWriter for primary-key rows), in records/s and in CPU: Ferry's services ÷ the broker,
// the pipeline ÷ the bridge's pipeline (broker, bridge and Fluss servers).
func writeSummary(w io.Writer, rs []result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tproducer\trecords/s\tp50 ms\tp99 ms\tferry s/M\tpipeline s/M\t"+
		"rec/s ÷Kafka\trec/s ÷bridge\trec/s ÷Java\tferry CPU ÷broker\tpipeline CPU ÷bridge\tjobs/Fluss request\t")
	java, haveJava := find(rs, targetFluss, producerJava)
	upsert, haveUpsert := find(rs, targetFlussPK, producerJavaUpsert)
	bridge, haveBridge := find(rs, targetBridge, producerFranz)
	_, bridgeCPU, bridgeUsage := bridge.cpuPerM()
	cpuRatio := func(a, b float64) string {
		if a <= 0 || b <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", a/b)
	}
	for _, r := range rs {
		p50, p99 := "-", "-"
		if r.HasLatency {
			p50, p99 = millis(r.P50), millis(r.P99)
		}
		ferryCPU, pipeCPU, ok := r.cpuPerM()
		ferryCell, pipeCell := "-", "-"
		if ok {
			pipeCell = fmt.Sprintf("%.2f", pipeCPU)
			if ferryCPU > 0 {
				ferryCell = fmt.Sprintf("%.2f", ferryCPU)
			}
		}
		vsKafka, vsBridge, vsJava, vsBroker, vsBridgeCPU := "", "", "", "", ""
		if r.Target == targetFerry || r.Target == targetFerryPK {
			vsKafka, vsBridge, vsJava, vsBroker, vsBridgeCPU = "-", "-", "-", "-", "-"
			if k, ok := find(rs, targetKafka, r.Producer); ok {
				vsKafka = ratio(r.RecPerSec, k.RecPerSec)
				vsBroker = cpuRatio(ferryCPU, k.procCPUPerM("kafka-broker"))
			}
			if haveBridge {
				vsBridge = ratio(r.RecPerSec, bridge.RecPerSec)
				if bridgeUsage {
					vsBridgeCPU = cpuRatio(pipeCPU, bridgeCPU)
				}
			}
			switch {
			case r.Target == targetFerryPK && haveUpsert:
				vsJava = ratio(r.RecPerSec, upsert.RecPerSec)
			case r.Target == targetFerry && haveJava:
				vsJava = ratio(r.RecPerSec, java.RecPerSec)
			}
		}
		jobs := ""
		if r.JobsPerRequest > 0 {
			jobs = fmt.Sprintf("%.2f", r.JobsPerRequest)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Target, r.Producer,
			groupThousands(int64(r.RecPerSec+0.5)), p50, p99, ferryCell, pipeCell, vsKafka, vsBridge, vsJava, vsBroker, vsBridgeCPU, jobs)
	}
	return tw.Flush()
}
