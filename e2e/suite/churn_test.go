package suite

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestProduceWhileDatabasesChurn produces to freshly created tables while another client
// creates and drops databases, as other test packages (or other teams) do on a shared cluster.
// Every produce must succeed promptly. It finds appendsvc's table-id resolution (a scan of every
// database) failing under concurrent DDL: LIST_TABLES of a database dropped mid-scan answers
// DATABASE_NOT_EXIST, which reaches the producer as UNKNOWN_SERVER_ERROR; and, seen in a full
// run, an existing table id cached as unknown ("append to unknown table id"), answered
// UNKNOWN_TOPIC_OR_PARTITION for the 10s of appendsvc's miss cache. So it runs only with
// FERRY_TEST_FAULTS=1 until that is fixed.
func TestProduceWhileDatabasesChurn(t *testing.T) {
	if os.Getenv("FERRY_TEST_FAULTS") != "1" {
		t.Skip("set FERRY_TEST_FAULTS=1 to run (fails until appendsvc resolves table ids under concurrent DDL)")
	}
	e, f := need(t)
	db := dbName(t, f, "churn")

	ctx, cancel := context.WithCancel(context.Background())
	churnDone := make(chan int)
	// The churn goroutine is owned by this test: cancel stops it, and the test waits for it.
	go func() {
		n := 0
		for ctx.Err() == nil {
			name := testenv.UniqueName("e2e_churn")
			callCtx, callCancel := context.WithTimeout(ctx, 30*time.Second)
			if f.Helper.CreateDatabase(callCtx, name, false) == nil {
				_ = f.Helper.DropDatabase(callCtx, name, true)
				n++
			}
			callCancel()
			// Paced: DDL at a realistic rate, not a flood of the (possibly shared) cluster.
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		churnDone <- n
	}()
	defer func() {
		cancel()
		t.Logf("%d databases created and dropped meanwhile", <-churnDone)
	}()

	cols := []testenv.Column{{Name: "id", Type: "BIGINT"}}
	failures := 0
	const rounds = 15
	for r := 0; r < rounds; r++ {
		table := fmt.Sprintf("t%02d", r)
		topic := topicTable(t, f, db, table, 2, cols, nil)
		cl := newKgo(t, e.kafka)
		pctx, pcancel := context.WithTimeout(context.Background(), 8*time.Second)
		start := time.Now()
		err := cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Partition: int32(r % 2), Value: []byte(`{"id": 1}`)}).FirstErr()
		pcancel()
		cl.Close()
		if err != nil {
			failures++
			t.Errorf("round %d: produce to the new table %s failed after %v: %v", r, topic, time.Since(start).Round(time.Millisecond), err)
		}
	}
	t.Logf("%d of %d produces to new tables failed", failures, rounds)
}
