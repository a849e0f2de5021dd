package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// The overload mode (-overload D): producers offer -overload-factor times what Ferry absorbs, for
// D, and every Ferry process must stay under its RSS ceiling, none may die, and every
// acknowledged record must be in Fluss.

// rssCeilings are the documented ceilings (e2e/bench/README.md, "Overload") for the default
// settings: frontdoor holds at most -kafka-inflight-bytes (512 MiB) of requests plus their
// transcoded forms in flight; a transcoder one decompressed batch and its Arrow per worker;
// appendsvc its pending jobs' batches.
var rssCeilings = map[string]int64{
	stack.Frontdoor: 1 << 30,
	stack.Catalog:   256 << 20,
	stack.Transcode: 512 << 20, // each instance
	stack.Append:    768 << 20,
	// -single: the services' ceilings together (two transcoders' worth).
	stack.Single: 1<<30 + 256<<20 + 2*512<<20 + 768<<20,
}

// ceilingOf is the ceiling of a Ferry process by name ("transcodesvc-2" is a transcodesvc).
func ceilingOf(name string) (int64, bool) {
	if strings.HasPrefix(name, stack.Transcode) {
		name = stack.Transcode
	}
	c, ok := rssCeilings[name]
	return c, ok
}

// overloadPhase starts the stack, measures what one franz-go producer gets through Ferry, then has
// -overload-factor producers each offer that rate for -overload, sampling every Ferry process's
// RSS, and checks the table against what was acknowledged.
func overloadPhase(ctx context.Context, cfg *config, root string, p payloads, log *slog.Logger, out io.Writer) (err error) {
	st, sc, err := startBenchStack(ctx, cfg, root, false, log)
	if err != nil {
		return err
	}
	defer func() {
		log.Info("stopping the Ferry stack")
		if serr := st.Stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	helper, err := testenv.NewHelper(sc.HelperPath(), sc.FlussBootstrap())
	if err != nil {
		return err
	}
	db := fmt.Sprintf("bench_overload_%d", time.Now().Unix())
	if err := helper.CreateDatabase(ctx, db, false); err != nil {
		return err
	}
	spec := testenv.TableSpec{Database: db, Table: "overload", Columns: benchColumns(), BucketCount: cfg.Partitions,
		Properties:       tableProperties(cfg),
		CustomProperties: map[string]string{"kafka.enabled": "true"}}
	if _, err := helper.CreateTable(ctx, spec); err != nil {
		return err
	}
	topic := db + ".overload"

	// Calibration: one producer at full speed.
	cal, err := runFranz(ctx, cfg, targetFerry, sc.KafkaAddr(), topic, p)
	if err != nil {
		return fmt.Errorf("calibration: %w", err)
	}
	rate := cal.RecPerSec
	log.Info("calibrated", "records/s", int64(rate), "offering", int64(rate*float64(cfg.OverloadFactor)), "for", cfg.Overload)

	var watch []watched
	for _, w := range stackWatch(st) {
		if isFerry(w.name) {
			watch = append(watch, w)
		}
	}
	win, err := startWindow(watch)
	if err != nil {
		return err
	}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	peaks := make(map[string]int64, len(watch))
	var peaksMu sync.Mutex
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			for _, w := range watch {
				if rss, err := procRSS(w.pid); err == nil {
					peaksMu.Lock()
					peaks[w.name] = max(peaks[w.name], rss)
					peaksMu.Unlock()
				}
			}
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
			}
		}
	}()

	var acked, failed, offered atomic.Int64
	var firstErr firstError
	start := time.Now()
	runCtx, cancelRun := context.WithTimeout(ctx, cfg.Overload+cfg.RunTimeout)
	defer cancelRun()
	var wg sync.WaitGroup
	for range cfg.OverloadFactor {
		opts, err := franzOpts(cfg, sc.KafkaAddr(), topic)
		if err != nil {
			stopSampling()
			return err
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			stopSampling()
			return err
		}
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			offer(runCtx, cl, p, rate, cfg.Overload, &offered, &acked, &failed, &firstErr)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopSampling()
	<-sampled
	usage, uerr := win.end()

	var problems []string
	for _, w := range watch {
		if proc := st.Service(w.name); proc == nil || proc.Exited() || proc.Pid() != w.pid {
			problems = append(problems, w.name+" died during the run")
		}
	}
	if uerr != nil {
		problems = append(problems, uerr.Error())
	}
	// Peak RSS: the kernel's high-water mark since the window opened, or the sampled peak.
	for _, u := range usage {
		peaks[u.Name] = max(peaks[u.Name], u.PeakRSS)
	}
	rows, err := tableRows(ctx, cfg, root, sc, db, "overload")
	if err != nil {
		return err
	}
	want := cal.Records + cfg.warmupRecords() + acked.Load()
	if rows < want {
		problems = append(problems, fmt.Sprintf("%d acknowledged records lost: the table holds %d rows, %d were acknowledged (calibration included)", want-rows, rows, want))
	}
	if maxRows := want + failed.Load(); rows > maxRows {
		problems = append(problems, fmt.Sprintf("the table holds %d rows, more than the %d sent", rows, maxRows))
	}

	fmt.Fprintf(out, "\noverload: %d franz-go producers each offering %d records/s (one producer's full speed, calibrated) for %v\n",
		cfg.OverloadFactor, int64(rate), cfg.Overload)
	asked := rate * float64(cfg.OverloadFactor) * cfg.Overload.Seconds()
	fmt.Fprintf(out, "the producers got %d records into their buffers, %.0f%% of the %d offered (a full buffer blocks Produce: Ferry's backpressure)\n",
		offered.Load(), 100*float64(offered.Load())/asked, int64(asked))
	fmt.Fprintf(out, "acknowledged %d (%d records/s), failed %d in %v; table rows %d (calibration %d included)\n",
		acked.Load(), int64(float64(acked.Load())/elapsed.Seconds()), failed.Load(), elapsed.Round(time.Millisecond), rows,
		cal.Records+cfg.warmupRecords())
	if e := firstErr.get(); e != nil {
		fmt.Fprintf(out, "first producer error: %v\n", e)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "process\tpeak RSS MiB\tceiling MiB\tCPU s\t")
	for _, w := range watch {
		c, _ := ceilingOf(w.name)
		var cpu time.Duration
		for _, u := range usage {
			if u.Name == w.name {
				cpu = u.CPU
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t\n", w.name, peaks[w.name]>>20, c>>20, cpu.Seconds())
		if peaks[w.name] > c {
			problems = append(problems, fmt.Sprintf("%s peaked at %d MiB, above its %d MiB ceiling", w.name, peaks[w.name]>>20, c>>20))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("overload: %s", strings.Join(problems, "; "))
	}
	fmt.Fprintln(out, "overload: every process stayed under its ceiling, none died, no acknowledged record was lost")
	return nil
}

// offer produces records at rate per second for d (or until ctx ends), counting what the client
// took, what was acknowledged and what failed. Produce blocks while the client's buffer is full:
// that is Ferry's backpressure reaching the producer, and the offer falls behind.
func offer(ctx context.Context, cl *kgo.Client, p payloads, rate float64, d time.Duration, offered, acked, failed *atomic.Int64, firstErr *firstError) {
	var wg sync.WaitGroup
	defer wg.Wait()
	start := time.Now()
	for i := int64(0); ; i++ {
		if ctx.Err() != nil || time.Since(start) >= d {
			return
		}
		// Pace: record i is due at start + i/rate.
		if due := start.Add(time.Duration(float64(i) / rate * float64(time.Second))); time.Until(due) > time.Millisecond {
			time.Sleep(time.Until(due))
		}
		wg.Add(1)
		offered.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: p.recs[i%int64(len(p.recs))]}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				failed.Add(1)
				firstErr.set(err)
				return
			}
			acked.Add(1)
		})
	}
}

// firstError keeps the first of many errors.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// procRSS is VmRSS from /proc/<pid>/status, in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("pid %d: no VmRSS", pid)
}

// tableRows counts a table's rows with the Java row counter.
func tableRows(ctx context.Context, cfg *config, root string, sc stack.Config, db, table string) (int64, error) {
	jdir, err := os.MkdirTemp("", "ferry-bench-rowcount-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(jdir)
	jw, err := compileJava(ctx, root, filepath.Clean(jdir), cfg.Java, slog.New(slog.DiscardHandler))
	if err != nil {
		return 0, err
	}
	counts, err := jw.rowCounts(ctx, sc.FlussBootstrap(), db, time.Minute, []string{table})
	if err != nil {
		return 0, err
	}
	return counts[table], nil
}
