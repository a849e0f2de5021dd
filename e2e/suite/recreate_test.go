package suite

import (
	"context"
	"strings"
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

// TestConsumeAfterTableRecreated drops the table a consumer reads and creates it again under the
// same name. The consumer's next fetch meets the old table id gone (UNKNOWN_TOPIC_OR_PARTITION);
// frontdoor then asks catalogsvc again naming that id as stale, so the fetch after reads the new
// table (from its start, the consumer's offset being past its end) instead of the old id failing
// until frontdoor's -mapping-ttl (30 s) runs out, the consumer retrying all along. The 20 s bound
// is that contract, as in TestProduceAfterTableRecreated.
func TestConsumeAfterTableRecreated(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "recreate_read")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "v", Type: "STRING"}}
	topic := topicTable(t, f, db, "events", 1, cols, nil)
	write := func(tag string, n int) {
		rows := make([]map[string]any, n)
		for i := range rows {
			rows[i] = map[string]any{"id": i, "v": tag}
		}
		f.Write(t, db, "events", rows)
	}
	write("before", 5)
	// Capped at Kafka 2.7's versions, as in TestProduceAfterTableRecreated: without topic ids the
	// client goes on fetching the topic by name.
	cl := newKgo(t, e.kafka, kgo.MaxVersions(kversion.V2_7_0()), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	// consume polls until want records with value tag arrived, and returns how long it took.
	consume := func(tag string, want int, budget time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		got := 0
		for got < want {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d records %q of %d within %v", got, tag, want, budget)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if strings.Contains(string(r.Value), `"`+tag+`"`) {
					got++
				}
			})
		}
		return time.Since(start)
	}
	consume("before", 5, time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Helper.DropTable(ctx, db, "events"); err != nil {
		t.Fatal(err)
	}
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "events", Columns: cols, BucketCount: 1,
		CustomProperties: map[string]string{"kafka.enabled": "true"}})
	write("after", 3)
	t.Logf("read the recreated table's records after %v", consume("after", 3, 20*time.Second).Round(time.Millisecond))
}
