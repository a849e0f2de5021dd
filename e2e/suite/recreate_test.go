package suite

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestProduceAfterTableRecreated drops a topic's table and creates it again under the same name
// (the DDL-first way to change a table) while a producer keeps its connection. The first append
// after it meets Fluss's TABLE_NOT_EXIST for the old table id; frontdoor then asks catalogsvc
// again naming that id as stale, catalogsvc rereads the tables, and the producer's retry lands in
// the new table. Without that, the old mapping would stay cached for frontdoor's -mapping-ttl
// (30 s) plus catalogsvc's refresh interval (10 s): the 20 s bound below is that contract, not a
// performance threshold.
func TestProduceAfterTableRecreated(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "recreate")
	topic := topicTable(t, f, db, "orders", jsonBuckets, jsonColumns, jsonProps)
	// franz-go refuses on its own to produce to a topic whose id changed under it (it fails such
	// records with UNKNOWN_TOPIC_ID, as against Kafka); capped at Kafka 2.7's versions, Metadata
	// carries no topic ids, so the client does what producers without that check do: retry.
	cl := newKgo(t, e.kafka, kgo.MaxVersions(kversion.V2_7_0()))

	before := make([]sent, 9)
	for i := range before {
		before[i] = jsonRecord("before", i)
	}
	kgoProduce(t, cl, toKgo(topic, before), 9)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Helper.DropTable(ctx, db, "orders"); err != nil {
		t.Fatal(err)
	}
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "orders", Columns: jsonColumns, BucketCount: jsonBuckets,
		CustomProperties: map[string]string{"kafka.enabled": "true", "kafka.key.column": "k", "kafka.timestamp.column": "ts", "kafka.headers.column": "hdrs"}})

	after := make([]sent, 12)
	for i := range after {
		after[i] = jsonRecord("after", i)
	}
	start := time.Now()
	pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer pcancel()
	res := cl.ProduceSync(pctx, toKgo(topic, after)...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce after the table was recreated: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("produced into the recreated table after %v", time.Since(start).Round(time.Millisecond))
	acked := make([]sent, len(res))
	for i, r := range res {
		acked[i] = fromKgo(r.Record)
	}
	// Only the records sent after the recreation, from offset 0 of each bucket.
	verifyRows(t, f, db, "orders", acked, jsonRow(len(after)))
}
