package suite

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestFrontdoorFreezeKillIdempotent makes the case a frontdoor crash can leave behind certain:
// frontdoor is frozen (SIGSTOP) while an idempotent producer sends, so the batches it had
// already passed to appendsvc are stored in Fluss but their answers are never read; then it is
// killed and started again. The producer retries those batches against the new process, which
// has only its state dir: it must rebuild the producer's sequences from the Fluss log and answer
// the retries with their offsets. Every record must be in Fluss exactly once, at the offset it
// was acknowledged with. (Without the state dir the retries get UNKNOWN_PRODUCER_ID and are
// stored again under a new epoch.) FERRY_TEST_FAULTS=0 skips it.
func TestFrontdoorFreezeKillIdempotent(t *testing.T) {
	testenv.SkipFaults(t)
	e, f := need(t)
	requireInitProducerID(t, e.kafka)
	db := dbName(t, f, "fdstate")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "pad", Type: "STRING"}}
	topic := topicTable(t, f, db, "frozen", 3, cols, nil)
	t.Cleanup(func() {
		if p := e.stack.Service(stack.Frontdoor); p == nil || p.Exited() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := e.stack.Restart(ctx, stack.Frontdoor); err != nil {
				t.Errorf("bring frontdoor back: %v", err)
			}
		}
	})

	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(500))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const total = 3000
	var (
		mu     sync.Mutex
		acked  = map[int64]sent{}
		failed = map[int64]error{}
		wg     sync.WaitGroup
	)
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) + len(failed)
	}
	faultDone := make(chan error, 1)
	go func() {
		for answered() < total/3 && ctx.Err() == nil {
			time.Sleep(2 * time.Millisecond)
		}
		p := e.stack.Service(stack.Frontdoor)
		// Freeze: what frontdoor already sent to appendsvc is stored; the answers wait unread.
		if err := syscall.Kill(-p.Pid(), syscall.SIGSTOP); err != nil {
			faultDone <- fmt.Errorf("SIGSTOP frontdoor: %w", err)
			return
		}
		time.Sleep(time.Second)
		if err := e.stack.Kill(stack.Frontdoor); err != nil {
			faultDone <- err
			return
		}
		restartCtx, restartCancel := context.WithTimeout(ctx, 2*time.Minute)
		defer restartCancel()
		faultDone <- e.stack.Restart(restartCtx, stack.Frontdoor)
	}()
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
		if i%3 == 2 {
			time.Sleep(time.Millisecond)
		}
	}
	wg.Wait()
	if err := <-faultDone; err != nil {
		t.Fatal(err)
	}
	for id, err := range failed {
		t.Errorf("record %d not acknowledged: %v", id, err)
		break
	}

	rows := f.Scan(t, db, "frozen", testenv.ScanOptions{Timeout: 60 * time.Second})
	at, copies := rowIDs(t, rows)
	dups, missing, misplaced := 0, 0, 0
	for id := int64(0); id < total; id++ {
		switch n := copies[id]; {
		case n == 0:
			missing++
		case n > 1:
			dups++
		}
		if s, ok := acked[id]; ok && at[pos{s.Partition, s.Offset}] != id {
			misplaced++
		}
	}
	rebuilt := 0
	for _, line := range strings.Split(e.stack.Service(stack.Frontdoor).LogTail(2000), "\n") {
		if strings.Contains(line, "state rebuilt from the log") && strings.Contains(line, "topic="+topic+" ") {
			rebuilt++
		}
	}
	t.Logf("%d acknowledged, %d failed; Fluss holds %d rows: %d records duplicated, %d missing, %d not at their acknowledged offset; %d partition states rebuilt",
		len(acked), len(failed), len(rows), dups, missing, misplaced, rebuilt)
	if dups > 0 || missing > 0 || misplaced > 0 {
		t.Errorf("want every record exactly once at its acknowledged offset")
	}
	if rebuilt == 0 {
		t.Error("the restarted frontdoor rebuilt no producer state from the log")
	}
}
