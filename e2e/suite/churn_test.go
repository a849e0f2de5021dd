package suite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestProduceWhileDatabasesChurn produces to freshly created tables while another client
// creates and drops databases, as other test packages (or other teams) do on a shared cluster.
// Every produce must succeed promptly. It guards appendsvc's table resolution: it once scanned
// every database to find a table id, and LIST_TABLES of a database dropped mid-scan failed the
// produce; tables are now resolved by the path frontdoor sends. FERRY_TEST_FAULTS=0 skips it.
func TestProduceWhileDatabasesChurn(t *testing.T) {
	testenv.SkipFaults(t)
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
