package fluss

import (
	"testing"
	"time"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// TestRealProduceToDroppedTable produces to a table id after its table was
// dropped (path not reused). Right after the drop the coordinator still
// lists the table without a leader (retriable LEADER_NOT_AVAILABLE), then
// answers GetMetadata with UNKNOWN_SERVER_ERROR; the client must turn that
// into a non-retriable TABLE_NOT_EXIST, so that callers stop retrying.
func TestRealProduceToDroppedTable(t *testing.T) {
	c := dialReal(t)
	ctx := testCtx(t)
	db := tempDatabase(t, c)
	path := TablePath{db, "dropped"}
	d := TableDescriptor{Schema: types.Schema{Columns: []types.Column{col("v", types.DataType{Root: types.BigInt, Nullable: true})}}, NumBuckets: 1}
	info := CreateTestTable(t, c, path, d)
	if err := c.DropTable(ctx, path, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for attempt := 1; ; attempt++ {
		res, err := c.ProduceLog(ctx, info.TableID, AcksAll, time.Second, []BucketBatch{{Bucket: 0, Records: badCRCBatch()}})
		if err != nil {
			t.Fatal(err)
		}
		perr := res[0].Err
		if CodeOf(perr) == CodeTableNotExist {
			if IsRetriable(perr) || res[0].BaseOffset != -1 {
				t.Fatalf("attempt %d: %v is retriable or has an offset", attempt, perr)
			}
			t.Logf("TABLE_NOT_EXIST after %d attempt(s): %v", attempt, perr)
			break
		}
		// Anything before that must tell the caller to retry.
		if !IsRetriable(perr) {
			t.Fatalf("attempt %d: %v (code %s), want retriable or TABLE_NOT_EXIST", attempt, perr, CodeOf(perr))
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %v after 30s", perr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The client still serves the coordinator.
	if _, err := c.ListDatabases(ctx); err != nil {
		t.Fatal(err)
	}
}
