package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestFaultKill kills a service process (SIGKILL, no goodbye) while a producer is sending,
// starts it again half a second later, and checks that no acknowledged record is lost: each one
// is in Fluss at the offset it was acknowledged with. Duplicates (at-least-once delivery on
// retries) are allowed and reported. The victims are one of the two transcodesvc instances
// (frontdoor moves its unanswered jobs to the other), the one appendsvc (every append stalls
// until it is back, then frontdoor re-sends the unanswered ones), catalogsvc (frontdoor goes
// on with the mappings it has cached) and frontdoor itself (the client loses its connection,
// reconnects to the restarted frontdoor and retries what was unanswered). Each takes a few
// seconds; FERRY_TEST_FAULTS=0 skips them.
func TestFaultKill(t *testing.T) {
	testenv.SkipFaults(t)
	victims := []string{stack.Transcode + "-2", stack.Append, stack.Catalog, stack.Frontdoor}
	if singleMode() {
		victims = []string{stack.Single} // every service at once
	}
	for _, victim := range victims {
		t.Run(victim, func(t *testing.T) { produceThroughFault(t, suiteTarget(t), victim, crash, false) })
		// An idempotent producer's retries must not become duplicates: frontdoor resends them
		// with the Fluss writer sequence of the first attempt, and Fluss drops the copy. A killed
		// frontdoor rebuilds that state from the Fluss log through the anchors in its state dir,
		// which the stack keeps across the restart (docs/idempotence.md).
		t.Run(victim+"/idempotent", func(t *testing.T) {
			tg := suiteTarget(t)
			requireInitProducerID(t, tg.kafka)
			produceThroughFault(t, tg, victim, crash, true)
		})
	}
}

// TestFaultTabletRestart restarts the Fluss tablet server (SIGTERM, then the same server with
// its data started again) while a producer is sending. The suite's shared Fluss cluster belongs
// to the test runner, so this test starts a stack of its own: Fluss and the four services, on
// free ports (about half a minute more). Nothing acknowledged may be lost; with an idempotent
// producer nothing may be stored twice either, as Fluss recovers its writer state on restart.
// A SIGKILL is not tested here: a one-replica Fluss tablet server killed that way loses
// acknowledged appends itself (docs/limits.md).
func TestFaultTabletRestart(t *testing.T) {
	testenv.SkipFaults(t)
	tg := privateTarget(t)
	t.Run("tablet", func(t *testing.T) { produceThroughFault(t, tg, "tablet", restart, false) })
	t.Run("tablet/idempotent", func(t *testing.T) {
		requireInitProducerID(t, tg.kafka)
		produceThroughFault(t, tg, "tablet", restart, true)
	})
}

// faultTarget is a stack to break: its processes, frontdoor's Kafka address and its Fluss
// cluster.
type faultTarget struct {
	stack *stack.Stack
	kafka string
	fluss *testenv.Cluster
}

func suiteTarget(t *testing.T) faultTarget {
	e, f := need(t)
	return faultTarget{stack: e.stack, kafka: e.kafka, fluss: f}
}

// privateTarget starts Fluss and the services on free ports, stopped when the test ends.
func privateTarget(t *testing.T) faultTarget {
	t.Helper()
	need(t) // the suite's stack proves the build and the jars; its Fluss is not the one used
	root, err := stack.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := servicesConfig("e2e-faults", root)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ZooKeeperPort, cfg.CoordinatorPort, cfg.TabletPort = ports[0], ports[1], ports[2]
	cfg.ServerHeap = "512m"
	// A tablet server stopping gracefully writes its snapshots first.
	cfg.StopGrace = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := stack.Start(ctx, cfg, log)
	if err != nil {
		t.Fatalf("private stack: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			s.KeepDir()
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stop private stack: %v", err)
		}
		if s.Kept() {
			t.Logf("private stack's run directory kept: %s", s.Dir())
		}
	})
	h, err := testenv.NewHelper(cfg.HelperPath(), cfg.FlussBootstrap())
	if err != nil {
		t.Fatal(err)
	}
	return faultTarget{stack: s, kafka: cfg.KafkaAddr(), fluss: &testenv.Cluster{Bootstrap: cfg.FlussBootstrap(), Helper: h}}
}

// fault is what happens to the victim mid-run.
type fault int

const (
	crash   fault = iota // SIGKILL, started again half a second later
	restart              // SIGTERM with the stack's grace, started again at once
)

func (f fault) String() string {
	if f == crash {
		return "killed and restarted 0.5s later"
	}
	return "stopped and restarted"
}

// produceThroughFault sends records while victim suffers f, then checks Fluss against what was
// acknowledged.
func produceThroughFault(t *testing.T, tg faultTarget, victim string, f fault, idempotent bool) {
	db := dbName(t, tg.fluss, "faults")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "pad", Type: "STRING"}}
	topic := topicTableAt(t, tg.fluss, tg.kafka, db, "killed", 3, cols, nil)
	// Whatever happens here, the tests after this one need the whole stack.
	t.Cleanup(func() {
		if p := tg.stack.Service(victim); p == nil || p.Exited() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := tg.stack.Restart(ctx, victim); err != nil {
				t.Errorf("bring %s back: %v", victim, err)
			}
		}
	})

	const total = 3000
	opts := []kgo.Opt{kgo.ProducerLinger(2 * time.Millisecond), kgo.MaxBufferedRecords(500)}
	var cl *kgo.Client
	if idempotent {
		var err error
		cl, err = kgo.NewClient(append(opts, kgo.SeedBrokers(tg.kafka), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
	} else {
		cl = newKgo(t, tg.kafka, opts...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var (
		mu     sync.Mutex
		acked  = map[int64]sent{} // by id
		failed = map[int64]error{}
		// stall is the longest time without an acknowledgement: how long the fault held
		// the producer up.
		lastAck time.Time
		stall   time.Duration
		wg      sync.WaitGroup
	)
	progress := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) + len(failed)
	}
	// waitFor waits until n records are answered (or ctx ends).
	waitFor := func(n int) {
		for progress() < n && ctx.Err() == nil {
			time.Sleep(2 * time.Millisecond)
		}
	}
	// The fault goroutine is owned by this test and ends before it checks anything: it strikes
	// the victim a third into the run, while batches are in flight, and brings it back, so it
	// takes work again before the end.
	faultDone := make(chan error, 1)
	var faultOver atomic.Bool
	go func() {
		defer faultOver.Store(true)
		waitFor(total / 3)
		if f == crash {
			if err := tg.stack.Kill(victim); err != nil {
				faultDone <- fmt.Errorf("kill %s: %w", victim, err)
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		restartCtx, restartCancel := context.WithTimeout(ctx, 2*time.Minute)
		defer restartCancel()
		if err := tg.stack.Restart(restartCtx, victim); err != nil {
			faultDone <- fmt.Errorf("restart %s: %w", victim, err)
			return
		}
		faultDone <- nil
	}()
	seenBefore := map[string]bool{}
	for _, line := range streamLost(tg.stack, victim) {
		seenBefore[line] = true
	}
	start := time.Now()
	// At least total records, and on until the victim is back: a tablet server takes seconds to
	// stop and start, and every record sent meanwhile is one the fault can touch. While frontdoor
	// cannot answer, Produce blocks on the client's full buffer, which bounds the count.
	sentCount := 0
	for i := 0; i < total || !faultOver.Load(); i++ {
		sentCount++
		id := int64(i)
		rec := &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: fmt.Appendf(nil, `{"id": %d, "pad": "%0100d"}`, i, i)}
		wg.Add(1)
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[id] = err
				return
			}
			acked[id] = fromKgo(r)
			now := time.Now()
			if !lastAck.IsZero() && now.Sub(lastAck) > stall {
				stall = now.Sub(lastAck)
			}
			lastAck = now
		})
		// Paced, about 3000 records a second, so the kill and the restart land mid-stream.
		if i%3 == 2 {
			time.Sleep(time.Millisecond)
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := <-faultDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d sent, %d acknowledged, %d failed in %v with %s %s after ~%d; longest time without an acknowledgement %v",
		sentCount, len(acked), len(failed), elapsed.Round(time.Millisecond), victim, f, total/3, stall.Round(time.Millisecond))
	// What frontdoor saw: the lost stream (and how many unanswered jobs it moved or re-sent).
	for _, line := range streamLost(tg.stack, victim) {
		if !seenBefore[line] {
			t.Logf("frontdoor: %s", line)
		}
	}
	for id, err := range failed {
		t.Logf("record %d not acknowledged: %v", id, err)
		break
	}
	if len(acked) == 0 {
		t.Fatal("nothing acknowledged")
	}

	rows := tg.fluss.Scan(t, db, "killed", testenv.ScanOptions{Timeout: 60 * time.Second})
	at, copies := rowIDs(t, rows)
	lost := 0
	for id, s := range acked {
		got, ok := at[pos{s.Partition, s.Offset}]
		if !ok || got != id {
			lost++
			if lost <= 5 {
				t.Errorf("record %d acknowledged at partition %d offset %d, but that offset holds %v (present: %v)", id, s.Partition, s.Offset, got, ok)
			}
		}
	}
	dups, extra := 0, 0
	for id, n := range copies {
		if n > 1 {
			dups++
			extra += n - 1
		}
		if _, ok := acked[id]; !ok {
			t.Logf("record %d was not acknowledged but is in Fluss %d time(s)", id, n)
		}
	}
	t.Logf("Fluss holds %d rows: %d records duplicated (%d extra copies); %d acknowledged records lost", len(rows), dups, extra, lost)
	if idempotent && dups > 0 {
		t.Errorf("idempotent producer: %d records were written more than once", dups)
	}
	if idempotent && (victim == stack.Frontdoor || victim == stack.Single) {
		// franz-go retries without a limit: every record must have made it, once.
		missing := 0
		for id := int64(0); id < int64(sentCount); id++ {
			if copies[id] == 0 {
				missing++
			}
		}
		if missing > 0 || len(failed) > 0 {
			t.Errorf("idempotent producer across a frontdoor kill: %d records missing from Fluss, %d failed", missing, len(failed))
		}
		// The producer went on after the restart, so the new process had to rebuild its state.
		rebuilt := 0
		for _, line := range strings.Split(tg.stack.Service(process(tg.stack, stack.Frontdoor)).LogTail(2000), "\n") {
			if strings.Contains(line, "state rebuilt from the log") && strings.Contains(line, "topic="+topic+" ") {
				rebuilt++
				if rebuilt == 1 {
					t.Logf("frontdoor: %s", line)
				}
			}
		}
		if rebuilt == 0 {
			t.Error("the restarted frontdoor rebuilt no producer state from the log")
		}
	}
	if lost > 0 {
		t.Errorf("%d acknowledged records lost or not at their acknowledged offsets", lost)
	}
}

// streamLost returns frontdoor's recent log lines about losing its stream to victim (none when
// the victim is not one of frontdoor's backends).
func streamLost(s *stack.Stack, victim string) []string {
	spec, ok := s.Spec(victim)
	if !ok || victim == stack.Frontdoor || victim == stack.Single {
		return nil
	}
	var out []string
	for _, line := range strings.Split(s.Service(stack.Frontdoor).LogTail(400), "\n") {
		if strings.Contains(line, "backend stream lost") && strings.Contains(line, "backend="+spec.GRPCAddr) {
			out = append(out, line)
		}
	}
	return out
}

// TestFaultKillIdempotentClients runs the idempotent producers of Java kafka-clients (default
// settings) and librdkafka (confluent-kafka with enable.idempotence=true) through an appendsvc
// crash: once appendsvc has counted a few thousand records (its /metrics), it is SIGKILLed and
// started again half a second later, while the rest are in flight. The clients retry what was
// not answered; every record must be in Fluss exactly once, at the offset the client was given,
// in send order within its partition.
func TestFaultKillIdempotentClients(t *testing.T) {
	testenv.SkipFaults(t)
	e, f := need(t)
	requireInitProducerID(t, e.kafka)
	db := dbName(t, f, "faults_clients")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "pad", Type: "STRING"}}
	for _, name := range []string{"java", "confluent-kafka"} {
		t.Run(name, func(t *testing.T) {
			c, err := clients.ByName(name)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			if err := c.Available(ctx); err != nil {
				if os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") == "1" {
					t.Fatal(err)
				}
				t.Skipf("%v (run tools/install-clients.sh)", err)
			}
			table := "idem_" + sanitize(name)
			topic := topicTableAt(t, f, e.kafka, db, table, 3, cols, nil)
			t.Cleanup(func() {
				if p := e.stack.Service(process(e.stack, stack.Append)); p == nil || p.Exited() {
					rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer rcancel()
					if err := e.stack.Restart(rctx, process(e.stack, stack.Append)); err != nil {
						t.Errorf("bring appendsvc back: %v", err)
					}
				}
			})

			const total, strikeAt = 60000, 1000
			recs := make([]clients.Record, total)
			for i := range recs {
				key := fmt.Sprintf("key-%d", i)
				recs[i] = clients.Record{Key: &key, Value: fmt.Sprintf(`{"id": %d, "pad": "%080d"}`, i, i)}
			}
			// The fault goroutine is owned by this subtest, which waits for it before checking.
			var struckAt atomic.Int64
			faultDone := killAppendAfter(ctx, t, e.stack, strikeAt, func(n int64) { struckAt.Store(n) })
			idem := true
			res, err := c.Produce(ctx, clients.Options{Bootstrap: e.kafka, Topic: topic, Acks: "all", Idempotent: &idem, Timeout: 3 * time.Minute}, recs)
			if ferr := <-faultDone; ferr != nil {
				t.Fatalf("fault: %v", ferr)
			}
			if err != nil {
				t.Fatalf("%s: %v\nstderr: %s", name, err, tailString(res.Stderr, 2000))
			}
			if err := res.Err(); err != nil {
				t.Fatalf("%s: %v\nstderr: %s", name, err, tailString(res.Stderr, 2000))
			}
			if n := struckAt.Load(); n >= total {
				t.Fatalf("appendsvc was killed after all %d records were appended: the run did not cross the fault", n)
			}
			t.Logf("%s: %d records acknowledged in %v; appendsvc killed after it had appended %d", name, total, res.Elapsed.Round(time.Millisecond), struckAt.Load())

			found := findByID(t, f, db, table, total, true)
			moved := 0
			for i, d := range res.Deliveries {
				if *d.Partition != found[i].Partition || *d.Offset != found[i].Offset {
					moved++
					if moved <= 5 {
						t.Errorf("record %d acknowledged at %d@%d, stored at %d@%d", i, *d.Partition, *d.Offset, found[i].Partition, found[i].Offset)
					}
				}
			}
			if moved > 0 {
				t.Errorf("%d records not at their acknowledged offsets", moved)
			}
		})
	}
}

// killAppendAfter SIGKILLs appendsvc once it has counted n more appended records (its /metrics)
// than now, calls struck with how many that was, and starts it again half a second later. The
// channel gets the fault's error or nil; the caller must receive from it before checking.
func killAppendAfter(ctx context.Context, t *testing.T, s *stack.Stack, n float64, struck func(int64)) <-chan error {
	t.Helper()
	base, err := appendedRecords(s)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for {
			got, err := appendedRecords(s)
			if err != nil {
				done <- err
				return
			}
			if got-base >= n {
				struck(int64(got - base))
				break
			}
			if ctx.Err() != nil {
				done <- ctx.Err()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := s.Kill(process(s, stack.Append)); err != nil {
			done <- err
			return
		}
		time.Sleep(500 * time.Millisecond)
		done <- s.Restart(ctx, process(s, stack.Append))
	}()
	return done
}

// appendedRecords is appendsvc's count of records Fluss acknowledged, from its /metrics.
func appendedRecords(s *stack.Stack) (float64, error) {
	page, err := scrape(s, stack.Append)
	if err != nil {
		return 0, err
	}
	n, _ := page.sum("ferry_append_records_total", nil)
	return n, nil
}

// pos is a row's place in a table: bucket and offset.
type pos struct {
	bucket int32
	offset int64
}

// rowIDs maps each row's place to its id column and counts the copies of each id.
func rowIDs(t *testing.T, rows []testenv.ScanRow) (at map[pos]int64, copies map[int64]int) {
	t.Helper()
	at, copies = map[pos]int64{}, map[int64]int{}
	for _, r := range rows {
		id, err := r.Row["id"].(json.Number).Int64()
		if err != nil {
			t.Fatalf("row %v: %v", r.Row, err)
		}
		at[pos{r.Bucket, r.Offset}] = id
		copies[id]++
	}
	return at, copies
}
