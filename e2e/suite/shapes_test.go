package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/testenv"
)

// Table shapes beyond plain log tables (docs/mapping.md §4): primary-key tables written as
// upserts and deletes, partitioned tables routed by their partition columns, bucket-keyed
// tables routed by Fluss's bucketing function. Everything is read back with the official Java
// client (lookups and scans).

// pkOp is one record of a primary-key scenario: an upsert of v, or a tombstone.
type pkOp struct {
	id     int64
	v      int
	delete bool
}

// pkScenario is what producer p sends: for ids p*100+0..9 an insert (v=1), an update (v=2),
// tombstones for ids ending in 0..2 (one of them, ending in 2, twice: the second deletes a key
// that is gone, which is no error), and the id ending in 0 inserted again (v=3).
func pkScenario(p int) []pkOp {
	base := int64(p * 100)
	var ops []pkOp
	for i := range int64(10) {
		ops = append(ops, pkOp{id: base + i, v: 1})
	}
	for i := range int64(10) {
		ops = append(ops, pkOp{id: base + i, v: 2})
	}
	for i := range int64(3) {
		ops = append(ops, pkOp{id: base + i, delete: true})
	}
	ops = append(ops, pkOp{id: base + 2, delete: true}, pkOp{id: base, v: 3})
	return ops
}

// pkExpect is the changelog each key must show and the row a lookup must find (absent: 0).
func pkExpect(ops []pkOp) (changelog map[int64]string, latest map[int64]int) {
	changelog, latest = map[int64]string{}, map[int64]int{}
	add := func(id int64, s string) {
		if changelog[id] != "" {
			s = " " + s
		}
		changelog[id] += s
	}
	for _, o := range ops {
		old, present := latest[o.id]
		switch {
		case o.delete && present:
			add(o.id, fmt.Sprintf("-D:%d", old))
			delete(latest, o.id)
		case o.delete:
		case present:
			add(o.id, fmt.Sprintf("-U:%d +U:%d", old, o.v))
			latest[o.id] = o.v
		default:
			add(o.id, fmt.Sprintf("+I:%d", o.v))
			latest[o.id] = o.v
		}
	}
	return changelog, latest
}

// pkTable creates a primary-key table (id BIGINT, name STRING, v INT) whose Kafka keys are
// JSON objects of the primary key.
func pkTable(t *testing.T, f *testenv.Cluster, db, table string, buckets int) string {
	t.Helper()
	info := f.NewTable(t, testenv.TableSpec{Database: db, Table: table, BucketCount: buckets, PrimaryKey: []string{"id"},
		Columns: []testenv.Column{
			{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
			{Name: "name", Type: "STRING"},
			{Name: "v", Type: "INT"},
		},
		CustomProperties: map[string]string{"kafka.enabled": "true"}})
	if len(info.PrimaryKey) != 1 {
		t.Fatalf("table info %+v: want primary key id", info)
	}
	topic := db + "." + table
	waitTopic(t, topic, buckets)
	return topic
}

func pkKgoRecord(topic string, o pkOp) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, `{"id": %d}`, o.id)}
	if !o.delete {
		r.Value = fmt.Appendf(nil, `{"id": %d, "name": "n%d", "v": %d}`, o.id, o.id, o.v)
	}
	return r
}

// checkPrimaryKeyTable reads the table back both ways: every key's latest row by lookup (deleted
// keys absent) and its changelog in order.
func checkPrimaryKeyTable(t *testing.T, f *testenv.Cluster, db, table string, ops []pkOp) {
	t.Helper()
	wantLog, latest := pkExpect(ops)
	ids := make([]int64, 0, len(wantLog))
	changes := 0
	for id, s := range wantLog {
		ids = append(ids, id)
		changes += len(strings.Fields(s))
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	keys := make([]map[string]any, len(ids))
	for i, id := range ids {
		keys[i] = map[string]any{"id": id}
	}
	for i, g := range f.Lookup(t, db, table, keys) {
		v, present := latest[ids[i]]
		switch {
		case g.Found != present:
			t.Errorf("lookup id %d: found=%v, want %v (row %v)", ids[i], g.Found, present, g.Row)
		case present && (fmt.Sprint(g.Row["v"]) != fmt.Sprint(v) || fmt.Sprint(g.Row["name"]) != fmt.Sprintf("n%d", ids[i])):
			t.Errorf("lookup id %d: row %v, want v=%d", ids[i], g.Row, v)
		}
	}
	rows := f.Scan(t, db, table, testenv.ScanOptions{Expect: changes, Timeout: 60 * time.Second})
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Bucket != rows[j].Bucket {
			return rows[i].Bucket < rows[j].Bucket
		}
		return rows[i].Offset < rows[j].Offset
	})
	gotLog := map[int64][]string{}
	for _, r := range rows {
		var id int64
		if _, err := fmt.Sscan(fmt.Sprint(r.Row["id"]), &id); err != nil {
			t.Fatalf("changelog row %v: %v", r.Row, err)
		}
		gotLog[id] = append(gotLog[id], r.ChangeType+":"+fmt.Sprint(r.Row["v"]))
	}
	bad := 0
	for _, id := range ids {
		if g := strings.Join(gotLog[id], " "); g != wantLog[id] {
			bad++
			if bad <= 10 {
				t.Errorf("changelog of id %d = %q, want %q", id, g, wantLog[id])
			}
		}
	}
	if len(rows) != changes || len(gotLog) != len(wantLog) {
		t.Errorf("changelog has %d changes of %d keys, want %d of %d", len(rows), len(gotLog), changes, len(wantLog))
	}
	t.Logf("%d keys: lookups and changelog (%d changes) as expected: %v", len(ids), changes, bad == 0)
}

// TestPrimaryKeyTableFromSeveralProducers has three franz-go producers (idempotent, the
// default) write inserts, updates and tombstones of their own keys into one primary-key table
// at once.
func TestPrimaryKeyTableFromSeveralProducers(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "shapes")
	topic := pkTable(t, f, db, "pk_kgo", 3)
	var all []pkOp
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for p := range 3 {
		ops := pkScenario(p)
		all = append(all, ops...)
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka), kgo.ProducerLinger(5*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			recs := make([]*kgo.Record, len(ops))
			for i, o := range ops {
				recs[i] = pkKgoRecord(topic, o)
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				errs <- fmt.Errorf("producer %d: %w", p, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkPrimaryKeyTable(t, f, db, "pk_kgo", all)
}

// TestPrimaryKeyTableRefusals: records that cannot be upserts or deletes fail with
// INVALID_RECORD naming the record, and nothing of their batch is written.
func TestPrimaryKeyTableRefusals(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "shapes")
	topic := pkTable(t, f, db, "pk_bad", 2)
	cl := newKgo(t, e.kafka, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	good := &kgo.Record{Topic: topic, Key: []byte(`{"id": 1}`), Value: []byte(`{"id": 1, "v": 1}`)}
	cases := map[string]*kgo.Record{
		"tombstone without key":  {Topic: topic},
		"key names another row":  {Topic: topic, Key: []byte(`{"id": 2}`), Value: []byte(`{"id": 3, "v": 1}`)},
		"key is not JSON object": {Topic: topic, Key: []byte(`7`)},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			// One batch: a good record and the bad one.
			res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: good.Key, Value: good.Value}, bad)
			for _, r := range res {
				if !errors.Is(r.Err, kerr.InvalidRecord) {
					t.Errorf("record %q: err %v, want INVALID_RECORD for the whole batch", r.Record.Key, r.Err)
				}
			}
		})
	}
	// A good batch afterwards is written alone: the refused batches left nothing behind.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(`{"id": 9}`), Value: []byte(`{"id": 9, "name": "n9", "v": 5}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	checkPrimaryKeyTable(t, f, db, "pk_bad", []pkOp{{id: 9, v: 5}})
}

// TestPartitionedTableByDay sends one batch spanning three days to a table auto-partitioned by
// day: every row lands in its day's partition (created on the way when auto-partitioning has
// not made it yet). A batch with a row for a day the table no longer keeps fails as a whole,
// that record named.
func TestPartitionedTableByDay(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "shapes")
	const table = "daily"
	f.NewTable(t, testenv.TableSpec{Database: db, Table: table, BucketCount: 2, PartitionKeys: []string{"dt"},
		Columns: []testenv.Column{
			{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
			{Name: "dt", Type: "STRING", Nullable: testenv.NotNull()},
		},
		Properties: map[string]string{"table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "DAY",
			"table.auto-partition.time-zone": "UTC", "table.auto-partition.num-retention": "5"},
		CustomProperties: map[string]string{"kafka.enabled": "true"}})
	topic := db + "." + table
	waitTopic(t, topic, 2)

	now := time.Now().UTC()
	days := []string{now.Format("20060102"), now.AddDate(0, 0, -1).Format("20060102"), now.AddDate(0, 0, -2).Format("20060102")}
	cl := newKgo(t, e.kafka, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 1, Value: fmt.Appendf(nil, `{"id": %d, "dt": "%s"}`, i, days[i%3])})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// A row 30 days back is past the retention of 5 days: the batch fails, naming it.
	old := now.AddDate(0, 0, -30).Format("20060102")
	res := cl.ProduceSync(ctx,
		&kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, `{"id": 100, "dt": "%s"}`, days[0])},
		&kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, `{"id": 101, "dt": "%s"}`, old)})
	for _, r := range res {
		if !errors.Is(r.Err, kerr.InvalidRecord) {
			t.Errorf("record %s: err %v, want INVALID_RECORD for the whole batch", r.Record.Value, r.Err)
		}
	}

	rows := f.Scan(t, db, table, testenv.ScanOptions{Expect: 30, Timeout: 60 * time.Second})
	names := partitionNames(t, f, db, table)
	perDay := map[string]int{}
	for _, r := range rows {
		if r.PartitionID == nil {
			t.Fatalf("row %v has no partition", r.Row)
		}
		dt := fmt.Sprint(r.Row["dt"])
		if names[*r.PartitionID] != dt {
			t.Errorf("row %v is in partition %q", r.Row, names[*r.PartitionID])
		}
		if r.Bucket != 1 {
			t.Errorf("row %v in bucket %d, want the producer's partition 1 (the table has no bucket key)", r.Row, r.Bucket)
		}
		if fmt.Sprint(r.Row["id"]) == "100" {
			t.Errorf("row 100 of the refused batch was written")
		}
		perDay[dt]++
	}
	if len(rows) != 30 || perDay[days[0]] != 10 || perDay[days[1]] != 10 || perDay[days[2]] != 10 {
		t.Errorf("%d rows, per day %v; want 30, 10 per day", len(rows), perDay)
	}
	if _, ok := perDay[old]; ok {
		t.Errorf("the expired day %s was written", old)
	}
}

// partitionNames maps a table's partition ids to their names.
func partitionNames(t *testing.T, f *testenv.Cluster, db, table string) map[int64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := fluss.Dial(ctx, f.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	parts, err := c.ListPartitions(ctx, fluss.TablePath{Database: db, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for _, p := range parts {
		out[p.ID] = p.Name
	}
	return out
}

// TestBucketKeyMatchesJavaWriter writes the same 10 000 rows to two bucket-keyed log tables,
// one through Ferry, one with the Java AppendWriter: every row is in the same bucket in both.
func TestBucketKeyMatchesJavaWriter(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "shapes")
	cols := []testenv.Column{
		{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
		{Name: "region", Type: "STRING", Nullable: testenv.NotNull()},
		{Name: "name", Type: "STRING"},
	}
	for _, table := range []string{"bk_ferry", "bk_java"} {
		f.NewTable(t, testenv.TableSpec{Database: db, Table: table, BucketCount: 7, BucketKeys: []string{"region", "id"}, Columns: cols,
			CustomProperties: map[string]string{"kafka.enabled": "true"}})
	}
	topic := db + ".bk_ferry"
	waitTopic(t, topic, 7)
	const n = 10000
	rows := make([]map[string]any, n)
	recs := make([]*kgo.Record, n)
	for i := range n {
		region := []string{"eu", "us", "ap", "sa"}[i%4]
		rows[i] = map[string]any{"id": i * 7, "region": region, "name": fmt.Sprintf("n%d", i)}
		// The producer's partition is ignored: Fluss's bucketing decides.
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i % 7), Value: fmt.Appendf(nil, `{"id": %d, "region": "%s", "name": "n%d"}`, i*7, region, i)}
	}
	cl := newKgo(t, e.kafka, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	f.Write(t, db, "bk_java", rows)
	bucketOf := func(table string) map[string]int32 {
		out := map[string]int32{}
		for _, r := range f.Scan(t, db, table, testenv.ScanOptions{Expect: n, Timeout: 90 * time.Second}) {
			out[fmt.Sprint(r.Row["region"], "/", r.Row["id"])] = r.Bucket
		}
		return out
	}
	ferry, java := bucketOf("bk_ferry"), bucketOf("bk_java")
	if len(ferry) != n || len(java) != n {
		t.Fatalf("%d rows through Ferry, %d through the Java writer; want %d each", len(ferry), len(java), n)
	}
	differ := 0
	for k, b := range java {
		if ferry[k] != b {
			differ++
			if differ <= 5 {
				t.Errorf("row %s: bucket %d through Ferry, %d through the Java AppendWriter", k, ferry[k], b)
			}
		}
	}
	t.Logf("%d rows: %d in a different bucket than the Java AppendWriter chose", n, differ)
}

// TestFaultKillAppendDuringUpserts kills appendsvc (SIGKILL) while an idempotent producer
// upserts a primary-key table: every key ends at its last value and its changelog shows each
// update exactly once (an update applied twice would show up as a second -U/+U pair).
func TestFaultKillAppendDuringUpserts(t *testing.T) {
	testenv.SkipFaults(t)
	e, f := need(t)
	db := dbName(t, f, "shapes")
	topic := pkTable(t, f, db, "pk_fault", 3)
	t.Cleanup(func() {
		if p := e.stack.Service(stack.Append); p == nil || p.Exited() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := e.stack.Restart(ctx, stack.Append); err != nil {
				t.Errorf("bring appendsvc back: %v", err)
			}
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka), kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(500))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	const keys, rounds = 500, 20
	const total, strikeAt = keys * rounds, 2000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		acked  int
		failed []error
	)
	// Once appendsvc has counted strikeAt upserts it is killed, and started again half a second
	// later, while the rest are in flight.
	var ackedAtKill atomic.Int64
	faultDone := killAppendAfter(ctx, t, e.stack, strikeAt, func(int64) {
		mu.Lock()
		ackedAtKill.Store(int64(acked))
		mu.Unlock()
	})
	var ops []pkOp
	start := time.Now()
	for r := 1; r <= rounds; r++ {
		for k := range int64(keys) {
			o := pkOp{id: k, v: r}
			ops = append(ops, o)
			wg.Add(1)
			cl.Produce(ctx, pkKgoRecord(topic, o), func(_ *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, err)
					return
				}
				acked++
			})
			// Paced, about 3000 records a second, so the kill lands mid-stream.
			if len(ops)%3 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}
	wg.Wait()
	if err := <-faultDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d upserts acknowledged, %d failed in %v; appendsvc killed when %d were acknowledged", acked, len(failed),
		time.Since(start).Round(time.Millisecond), ackedAtKill.Load())
	if ackedAtKill.Load() >= total {
		t.Fatal("appendsvc was killed after every upsert was acknowledged: the run did not cross the fault")
	}
	if len(failed) > 0 {
		t.Errorf("idempotent producer: %d upserts failed, first: %v", len(failed), failed[0])
	}
	checkPrimaryKeyTable(t, f, db, "pk_fault", ops)
}

// TestPrimaryKeyTableFromRealClients has Java kafka-clients (default settings), librdkafka
// (confluent-kafka and kcat) and franz-go write inserts, updates and tombstones of their own keys
// into one primary-key table at the same time, keys as JSON objects of the primary key.
func TestPrimaryKeyTableFromRealClients(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "shapes")
	topic := pkTable(t, f, db, "pk_clients", 3)
	names := []string{"java", "confluent-kafka", "kcat", "franz"}
	var all []pkOp
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for p, name := range names {
		c, err := clients.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := c.Available(ctx); err != nil {
			if os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") == "1" {
				t.Fatal(err)
			}
			t.Skipf("%v (run tools/install-clients.sh)", err)
		}
		ops := pkScenario(p)
		all = append(all, ops...)
		recs := make([]clients.Record, len(ops))
		for i, o := range ops {
			key := fmt.Sprintf(`{"id": %d}`, o.id)
			recs[i] = clients.Record{Key: &key, Tombstone: o.delete}
			if !o.delete {
				recs[i].Value = fmt.Sprintf(`{"id": %d, "name": "n%d", "v": %d}`, o.id, o.id, o.v)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Produce(ctx, clients.Options{Bootstrap: e.kafka, Topic: topic, Timeout: 2 * time.Minute}, recs)
			if err == nil {
				err = res.Err()
			}
			if err != nil {
				errs[p] = fmt.Errorf("%s: %w\nstderr: %s", name, err, tailString(res.Stderr, 2000))
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkPrimaryKeyTable(t, f, db, "pk_clients", all)
}
