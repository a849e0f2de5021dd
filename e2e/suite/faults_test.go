package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestFaultKill kills a service process (SIGKILL, no goodbye) while a producer is sending,
// starts it again half a second later, and checks that no acknowledged record is lost: each one
// is in Fluss at the offset it was acknowledged with. Duplicates (at-least-once delivery on
// retries) are allowed and reported. The victims are one of the two transcodesvc instances
// (frontdoor moves its unanswered jobs to the other), the one appendsvc (every append stalls
// until it is back, then frontdoor re-sends the unanswered ones) and catalogsvc (frontdoor goes
// on with the mappings it has cached). Each takes a few seconds;
// FERRY_TEST_FAULTS=0 skips them.
func TestFaultKill(t *testing.T) {
	if os.Getenv("FERRY_TEST_FAULTS") == "0" {
		t.Skip("FERRY_TEST_FAULTS=0")
	}
	for _, victim := range []string{stack.Transcode + "-2", stack.Append, stack.Catalog} {
		t.Run(victim, func(t *testing.T) { killDuringProduce(t, victim, false) })
		// An idempotent producer's retries must not become duplicates: frontdoor resends them
		// with the Fluss writer sequence of the first attempt, and Fluss drops the copy.
		t.Run(victim+"/idempotent", func(t *testing.T) {
			need(t)
			if !offersInitProducerID(t, env) {
				t.Skip("frontdoor does not offer InitProducerId")
			}
			killDuringProduce(t, victim, true)
		})
	}
	// A killed frontdoor loses the idempotence state it kept in memory. The new process rebuilds
	// it from the Fluss log through the anchors in its state dir (the stack keeps that dir across
	// the restart), so the producer's retries of batches that were stored but not answered are
	// answered with their offsets instead of being stored again: every record exactly once.
	t.Run(stack.Frontdoor+"/idempotent", func(t *testing.T) {
		need(t)
		if !offersInitProducerID(t, env) {
			t.Skip("frontdoor does not offer InitProducerId")
		}
		killDuringProduce(t, stack.Frontdoor, true)
	})
}

func killDuringProduce(t *testing.T, victim string, idempotent bool) {
	e, f := need(t)
	db := dbName(t, f, "faults")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "pad", Type: "STRING"}}
	topic := topicTable(t, f, db, "killed", 3, cols, nil)
	// Whatever happens here, the tests after this one need the whole stack.
	t.Cleanup(func() {
		if p := e.stack.Service(victim); p == nil || p.Exited() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := e.stack.Restart(ctx, victim); err != nil {
				t.Errorf("bring %s back: %v", victim, err)
			}
		}
	})

	const total = 3000
	opts := []kgo.Opt{kgo.ProducerLinger(2 * time.Millisecond), kgo.MaxBufferedRecords(500)}
	var cl *kgo.Client
	if idempotent {
		var err error
		cl, err = kgo.NewClient(append(opts, kgo.SeedBrokers(e.kafka), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
	} else {
		cl = newKgo(t, e.kafka, opts...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var (
		mu     sync.Mutex
		acked  = map[int64]sent{} // by id
		failed = map[int64]error{}
		wg     sync.WaitGroup
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
	// The fault goroutine is owned by this test and ends before it checks anything: it kills
	// the victim a third into the run, while batches are in flight, and restarts it half a
	// second later, so it takes work again before the end.
	faultDone := make(chan error, 1)
	go func() {
		waitFor(total / 3)
		if err := e.stack.Kill(victim); err != nil {
			faultDone <- fmt.Errorf("kill %s: %w", victim, err)
			return
		}
		time.Sleep(500 * time.Millisecond)
		restartCtx, restartCancel := context.WithTimeout(ctx, 2*time.Minute)
		defer restartCancel()
		if err := e.stack.Restart(restartCtx, victim); err != nil {
			faultDone <- fmt.Errorf("restart %s: %w", victim, err)
			return
		}
		faultDone <- nil
	}()
	seenBefore := map[string]bool{}
	for _, line := range streamLost(e, victim) {
		seenBefore[line] = true
	}
	start := time.Now()
	for i := 0; i < total; i++ {
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
	t.Logf("%d acknowledged, %d failed in %v with %s killed after ~%d and restarted 0.5s later", len(acked), len(failed), elapsed.Round(time.Millisecond), victim, total/3)
	// What frontdoor saw: the lost stream (and how many unanswered jobs it moved or re-sent).
	for _, line := range streamLost(e, victim) {
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

	rows := f.Scan(t, db, "killed", testenv.ScanOptions{Timeout: 60 * time.Second})
	type pos struct {
		bucket int32
		offset int64
	}
	at := map[pos]int64{}
	copies := map[int64]int{}
	for _, r := range rows {
		id, err := r.Row["id"].(json.Number).Int64()
		if err != nil {
			t.Fatalf("row %v: %v", r.Row, err)
		}
		at[pos{r.Bucket, r.Offset}] = id
		copies[id]++
	}
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
	if idempotent && victim == stack.Frontdoor {
		// franz-go retries without a limit: every record must have made it, once.
		missing := 0
		for id := int64(0); id < total; id++ {
			if copies[id] == 0 {
				missing++
			}
		}
		if missing > 0 || len(failed) > 0 {
			t.Errorf("idempotent producer across a frontdoor kill: %d records missing from Fluss, %d failed", missing, len(failed))
		}
		// The producer went on after the restart, so the new process had to rebuild its state.
		rebuilt := 0
		for _, line := range strings.Split(e.stack.Service(stack.Frontdoor).LogTail(2000), "\n") {
			if strings.Contains(line, "state rebuilt from the log") {
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

// streamLost returns frontdoor's recent log lines about losing its stream to victim.
func streamLost(e *suiteEnv, victim string) []string {
	spec, _ := e.stack.Spec(victim)
	var out []string
	for _, line := range strings.Split(e.stack.Service(stack.Frontdoor).LogTail(400), "\n") {
		if strings.Contains(line, "backend stream lost") && strings.Contains(line, "backend="+spec.GRPCAddr) {
			out = append(out, line)
		}
	}
	return out
}
