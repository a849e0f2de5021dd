package suite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// Transactions (docs/transactions.md, issue #31) with real clients and real Fluss: what the Fluss
// Java reader (flusshelper) and a read_committed consumer see is exactly the committed
// transactions.

var txnColumns = []testenv.Column{
	{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
	{Name: "name", Type: "STRING"},
}

// javaTxn compiles testdata/FerryTxn.java and returns a runner of its modes.
func javaTxn(t *testing.T) func(args ...string) string {
	t.Helper()
	cp := os.Getenv("FERRY_TEST_KAFKA_CLIENTS_CP")
	javac, err1 := exec.LookPath("javac")
	java, err2 := exec.LookPath("java")
	if cp == "" || err1 != nil || err2 != nil {
		if os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") == "1" {
			t.Fatal("FERRY_TEST_KAFKA_CLIENTS_CP, javac or java missing")
		}
		t.Skip("skipping: FERRY_TEST_KAFKA_CLIENTS_CP, javac or java missing")
	}
	classes := t.TempDir()
	if out, err := exec.Command(javac, "-cp", cp, "-d", classes, filepath.Join("testdata", "FerryTxn.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, java, append([]string{"-cp", cp + string(os.PathListSeparator) + classes, "FerryTxn"}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("java %v: %v\nstderr:\n%s", args, err, tailString(stderr.String(), 4000))
		}
		return strings.TrimSpace(string(out))
	}
}

// idsOf scans a table and returns its ids, sorted, failing on a repeated one.
func idsOf(t *testing.T, f *testenv.Cluster, db, table string) []int64 {
	t.Helper()
	rows := f.Scan(t, db, table, testenv.ScanOptions{Timeout: 60 * time.Second})
	var ids []int64
	for _, r := range rows {
		id, err := r.Row["id"].(json.Number).Int64()
		if err != nil {
			t.Fatalf("row %v: %v", r.Row, err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Fatalf("%s.%s: id %d stored twice", db, table, ids[i])
		}
	}
	return ids
}

// TestTransactionsJava: the Java producer commits and aborts transactions across two tables, with
// sendOffsetsToTransaction; Fluss holds exactly the committed records, a read_committed consumer
// through Ferry reads exactly them, and the group's offset is the last committed transaction's.
// A second producer with the same transactional id fences the first, and a transaction left open
// past its timeout is aborted and leaves nothing.
func TestTransactionsJava(t *testing.T) {
	e, f := need(t)
	run := javaTxn(t)
	db := dbName(t, f, "txn")
	a := topicTable(t, f, db, "a", 3, txnColumns, nil)
	b := topicTable(t, f, db, "b", 2, txnColumns, nil)
	group := db + "-group"

	const n = 6
	if out := run("run", e.kafka, db+"-run", a, b, "6", group); out != "OK" {
		t.Fatalf("java run: %s", out)
	}
	var wantA, wantB []int64
	for tx := 0; tx < n; tx += 2 {
		for j := range 4 {
			wantA = append(wantA, int64(tx*10+j))
		}
		wantB = append(wantB, int64(tx*10+5), int64(tx*10+6))
	}
	if got := idsOf(t, f, db, "a"); !slices.Equal(got, wantA) {
		t.Errorf("table a holds ids %v, want the committed %v", got, wantA)
	}
	if got := idsOf(t, f, db, "b"); !slices.Equal(got, wantB) {
		t.Errorf("table b holds ids %v, want the committed %v", got, wantB)
	}

	t.Run("read_committed", func(t *testing.T) {
		cl := newKgo(t, e.kafka, kgo.ConsumeTopics(a), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var got []int64
		for len(got) < len(wantA) && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				var v struct {
					ID   int64  `json:"id"`
					Name string `json:"name"`
				}
				if err := json.Unmarshal(r.Value, &v); err != nil {
					t.Fatalf("record %q: %v", r.Value, err)
				}
				if v.Name != "committed" {
					t.Errorf("read_committed consumer read %q", r.Value)
				}
				got = append(got, v.ID)
			})
		}
		slices.Sort(got)
		if !slices.Equal(got, wantA) {
			t.Fatalf("read_committed consumer read ids %v, want %v", got, wantA)
		}
	})

	t.Run("offsets", func(t *testing.T) {
		adm := kadm.NewClient(newKgo(t, e.kafka))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		o, ok := offs.Lookup(a, 0)
		// Transaction 4 was the last to commit, with offset 5; transaction 5's 6 was aborted.
		if !ok || o.Err != nil || o.At != 5 {
			t.Fatalf("group %s offset of %s[0]: %+v (found %v), want 5", group, a, o, ok)
		}
	})

	t.Run("fencing", func(t *testing.T) {
		topic := topicTable(t, f, db, "fenced", 2, txnColumns, nil)
		if out := run("fence", e.kafka, db+"-fence", topic); out != "FENCED" {
			t.Fatalf("java fence: %s", out)
		}
		if got := idsOf(t, f, db, "fenced"); !slices.Equal(got, []int64{1001}) {
			t.Fatalf("table holds ids %v, want only the current producer's 1001", got)
		}
	})

	t.Run("refused record", func(t *testing.T) {
		topic := topicTable(t, f, db, "refused", 2, txnColumns, nil)
		if out := run("badrecord", e.kafka, db+"-bad", topic); out != "OK" {
			t.Fatalf("java badrecord: %s", out)
		}
		if got := idsOf(t, f, db, "refused"); !slices.Equal(got, []int64{3001}) {
			t.Fatalf("table holds ids %v, want only 3001", got)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		topicTable(t, f, db, "expired", 2, txnColumns, nil)
		if out := run("timeout", e.kafka, db+"-timeout", db+".expired"); !strings.HasPrefix(out, "ABORTED") {
			t.Fatalf("java timeout: %s", out)
		}
		if got := idsOf(t, f, db, "expired"); len(got) != 0 {
			t.Fatalf("a timed-out transaction left ids %v", got)
		}
	})
}

// TestTransactionsFranzGo: franz-go's GroupTransactSession copies a topic into another
// (read-process-write with the consumed offsets in the transaction), aborting its first
// transaction: the output table holds each input record exactly once and the group's offsets are
// the input's end. Then a transactional client writes to a primary-key table and a partitioned
// table, committing one transaction and aborting another: only the committed rows are stored.
func TestTransactionsFranzGo(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "txnkgo")
	in := topicTable(t, f, db, "in", 2, txnColumns, nil)
	out := topicTable(t, f, db, "out", 2, txnColumns, nil)
	const n = 40
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: in, Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"id": %d, "name": "in"}`, i)})
	}
	if err := newKgo(t, e.kafka).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	t.Run("GroupTransactSession", func(t *testing.T) {
		group := db + "-copier"
		sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(e.kafka), kgo.TransactionalID(db+"-copier"),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.TransactionTimeout(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		aborted, committed := false, 0
		for committed < n && ctx.Err() == nil {
			fs := sess.PollFetches(ctx)
			if errs := fs.Errors(); len(errs) > 0 {
				t.Fatalf("poll: %v", errs)
			}
			if fs.NumRecords() == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				t.Fatal(err)
			}
			var outs []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) {
				outs = append(outs, &kgo.Record{Topic: out, Partition: r.Partition, Value: r.Value})
			})
			if err := sess.ProduceSync(ctx, outs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			how := kgo.TryCommit
			if !aborted {
				how, aborted = kgo.TryAbort, true
			}
			ok, err := sess.End(ctx, how)
			if err != nil {
				t.Fatalf("end: %v", err)
			}
			if ok && how == kgo.TryCommit {
				committed += len(outs)
			}
		}
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i)
		}
		if got := idsOf(t, f, db, "out"); !slices.Equal(got, want) {
			t.Fatalf("output holds ids %v, want each of 0..%d once", got, n-1)
		}
		offs, err := kadm.NewClient(newKgo(t, e.kafka)).FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		for p := range int32(2) {
			if o, ok := offs.Lookup(in, p); !ok || o.At != n/2 {
				t.Errorf("group offset of %s[%d]: %+v, want %d", in, p, o, n/2)
			}
		}
	})

	t.Run("primary key and partitioned tables", func(t *testing.T) {
		pk := pkTable(t, f, db, "pk", 2)
		f.NewTable(t, testenv.TableSpec{Database: db, Table: "daily", BucketCount: 2, PartitionKeys: []string{"dt"},
			Columns: []testenv.Column{
				{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
				{Name: "dt", Type: "STRING", Nullable: testenv.NotNull()},
			},
			Properties: map[string]string{"table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "DAY",
				"table.auto-partition.time-zone": "UTC", "table.auto-partition.num-retention": "5"},
			CustomProperties: map[string]string{"kafka.enabled": "true"}})
		daily := db + ".daily"
		waitTopic(t, daily, 2)
		days := []string{time.Now().UTC().Format("20060102"), time.Now().UTC().AddDate(0, 0, -1).Format("20060102")}
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka), kgo.TransactionalID(db+"-shapes"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		round := func(base int, how kgo.TransactionEndTry) {
			t.Helper()
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			var rs []*kgo.Record
			for i := base; i < base+6; i++ {
				r := pkKgoRecord(pk, pkOp{id: int64(i), v: i})
				r.Partition = int32(i % 2)
				rs = append(rs, r, &kgo.Record{Topic: daily, Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"id": %d, "dt": "%s"}`, i, days[i%2])})
			}
			if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			if err := cl.EndTransaction(ctx, how); err != nil {
				t.Fatalf("end: %v", err)
			}
		}
		round(0, kgo.TryCommit)
		round(100, kgo.TryAbort)
		round(200, kgo.TryCommit)
		want := []int64{0, 1, 2, 3, 4, 5, 200, 201, 202, 203, 204, 205}
		if got := idsOf(t, f, db, "pk"); !slices.Equal(got, want) {
			t.Errorf("primary-key table changelog holds ids %v, want %v", got, want)
		}
		if got := idsOf(t, f, db, "daily"); !slices.Equal(got, want) {
			t.Errorf("partitioned table holds ids %v, want %v", got, want)
		}
	})
}

// TestTransactionsConfluentKafka: confluent-kafka-python (librdkafka) commits two transactions
// and aborts one; the table holds exactly the committed records.
func TestTransactionsConfluentKafka(t *testing.T) {
	e, f := need(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	py := filepath.Join(wd, "..", "..", ".cache", "clients", "venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		if os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") == "1" {
			t.Fatalf("confluent-kafka venv missing (tools/install-clients.sh): %v", err)
		}
		t.Skipf("skipping: confluent-kafka venv missing: %v", err)
	}
	db := dbName(t, f, "txnpy")
	topic := topicTable(t, f, db, "t", 2, txnColumns, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "-B", filepath.Join("testdata", "ferry_txn.py"), e.kafka, db+"-py", topic).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "OK") {
		t.Fatalf("confluent-kafka: %v\n%s", err, tailString(string(out), 4000))
	}
	want := []int64{0, 1, 2, 3, 4, 200, 201, 202, 203, 204}
	if got := idsOf(t, f, db, "t"); !slices.Equal(got, want) {
		t.Fatalf("table holds ids %v, want the committed %v", got, want)
	}
}

// TestTransactionFrontdoorCrash: frontdoor keeps its transactions in a journal in its state dir
// (docs/transactions.md). A transaction open when frontdoor is SIGKILLed is committed by its
// producer after the restart, whole; nothing of it is visible before; and a new producer with the
// same transactional id then fences the old one and carries on.
func TestTransactionFrontdoorCrash(t *testing.T) {
	testenv.SkipFaults(t)
	e, f := need(t)
	db := dbName(t, f, "txncrash")
	topic := topicTable(t, f, db, "t", 2, txnColumns, nil)
	fd := process(e.stack, stack.Frontdoor)
	t.Cleanup(func() {
		if p := e.stack.Service(fd); p == nil || p.Exited() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := e.stack.Restart(ctx, fd); err != nil {
				t.Errorf("bring frontdoor back: %v", err)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	txnClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka), kgo.TransactionalID(db+"-crash"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	round := func(cl *kgo.Client, base int) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := base; i < base+10; i++ {
			r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"id": %d, "name": "crash"}`, i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	first := txnClient()
	round(first, 0)
	if err := first.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	round(first, 100) // staged, then frontdoor dies
	if err := e.stack.Kill(fd); err != nil {
		t.Fatal(err)
	}
	// The journal is in Fluss, not on frontdoor's disk: the state that
	// comes back below comes from there.
	if _, err := os.Stat(filepath.Join(e.stack.Dir(), "state", fd, "transactions")); !os.IsNotExist(err) {
		t.Fatalf("frontdoor kept a transaction journal on its disk (stat: %v)", err)
	}
	if err := e.stack.Restart(ctx, fd); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(t, f, db, "t"); len(got) != 10 {
		t.Fatalf("before the commit the table holds ids %v, want the first transaction's 10", got)
	}
	if err := first.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the crash: %v", err)
	}
	second := txnClient()
	round(second, 200)
	if err := second.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit of the new session: %v", err)
	}
	if err := first.BeginTransaction(); err == nil {
		err = first.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(`{"id": 999, "name": "zombie"}`)}).FirstErr()
		if err == nil {
			err = first.EndTransaction(ctx, kgo.TryCommit)
		}
		if err == nil {
			t.Fatal("the fenced producer committed")
		}
	}
	var want []int64
	for _, base := range []int64{0, 100, 200} {
		for i := range int64(10) {
			want = append(want, base+i)
		}
	}
	if got := idsOf(t, f, db, "t"); !slices.Equal(got, want) {
		t.Fatalf("table holds ids %v, want %v", got, want)
	}
}

// TestTransactionalMessageCopier runs Kafka's TransactionalMessageCopier (kafka-tools, what Kafka's
// exactly-once system tests use) through Ferry with random aborts, and SIGKILLs appendsvc, then
// frontdoor (the transaction coordinator, whose journal is in its state dir), while it copies:
// the output table holds each input record exactly once and the group's committed offset is the
// input's end.
func TestTransactionalMessageCopier(t *testing.T) {
	testenv.SkipFaults(t)
	e, f := need(t)
	lib := kafkaToolsLib(t)
	db := dbName(t, f, "txncopy")
	in := topicTable(t, f, db, "in", 1, txnColumns, nil)
	out := topicTable(t, f, db, "out", 2, txnColumns, nil)
	const n = 4000
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: in, Partition: 0, Value: fmt.Appendf(nil, `{"id": %d, "name": "copy"}`, i)})
	}
	if err := newKgo(t, e.kafka).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	group := db + "-copier"
	cmd := exec.CommandContext(ctx, "java", "-cp", filepath.Join(lib, "*"), "org.apache.kafka.tools.TransactionalMessageCopier",
		"--broker-list", e.kafka, "--input-topic", in, "--input-partition", "0", "--output-topic", out,
		"--transactional-id", db+"-copier", "--consumer-group", group, "--transaction-size", "25",
		"--enable-random-aborts", "--use-group-metadata")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill appendsvc once a few hundred records are copied, frontdoor later.
	killed := make(chan error, 2)
	victims := []struct {
		name  string
		after int
	}{{process(e.stack, stack.Append), 300}, {process(e.stack, stack.Frontdoor), 1500}}
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var status struct {
			Processed int `json:"totalProcessed"`
		}
		if json.Unmarshal(sc.Bytes(), &status) == nil && len(victims) > 0 && status.Processed >= victims[0].after {
			name := victims[0].name
			victims = victims[1:]
			go func() {
				if err := e.stack.Kill(name); err != nil {
					killed <- err
					return
				}
				killed <- e.stack.Restart(ctx, name)
			}()
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("copier: %v\nstdout tail:\n%s\nstderr tail:\n%s", err, tailString(strings.Join(lines, "\n"), 3000), tailString(stderr.String(), 3000))
	}
	if len(victims) > 0 {
		t.Fatalf("the copier finished before %s was killed:\n%s", victims[0].name, tailString(strings.Join(lines, "\n"), 3000))
	}
	for range 2 {
		if err := <-killed; err != nil {
			t.Fatalf("kill and restart: %v", err)
		}
	}
	t.Logf("copier: %s", lines[len(lines)-1])
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i)
	}
	if got := idsOf(t, f, db, "out"); !slices.Equal(got, want) {
		t.Fatalf("output holds %d ids, want each of 0..%d exactly once", len(got), n-1)
	}
	offs, err := kadm.NewClient(newKgo(t, e.kafka)).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(in, 0); !ok || o.At != n {
		t.Fatalf("group offset of %s[0]: %+v, want %d", in, o, n)
	}
}

// TestTransactionAPIsMatchKafkaBroker: the transaction APIs are listed at the versions a Kafka 4
// broker lists them, and answer requests about an unknown transactional id as it does.
func TestTransactionAPIsMatchKafkaBroker(t *testing.T) {
	e, _ := need(t)
	if !clients.BrokerInstalled() {
		if os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") == "1" {
			t.Fatal("reference Kafka broker not installed (tools/install-clients.sh)")
		}
		t.Skip("reference Kafka broker not installed (tools/install-clients.sh)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	broker, err := clients.StartBroker(ctx, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Stop() })
	kafka, ferry := newKgo(t, broker.Bootstrap), newKgo(t, e.kafka)
	ranges := func(cl *kgo.Client) map[int16][2]int16 {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "ferry-e2e", "1.0"
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int16][2]int16{}
		for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
			out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		return out
	}
	brokerRanges, ferryRanges := ranges(kafka), ranges(ferry)
	// TxnOffsetCommit v6 names topics by id, which Ferry does not serve (as OffsetCommit v10).
	if b, f := brokerRanges[28], ferryRanges[28]; f != [2]int16{b[0], 5} || b[1] != 6 {
		t.Errorf("TxnOffsetCommit: ferry lists v%d-v%d, the broker v%d-v%d; want the broker's up to v5", f[0], f[1], b[0], b[1])
	}
	for _, key := range []int16{22, 24, 25, 26, 65, 66} {
		if ferryRanges[key] != brokerRanges[key] {
			t.Errorf("%s: ferry lists v%d-v%d, the broker v%d-v%d", kmsg.NameForKey(key),
				ferryRanges[key][0], ferryRanges[key][1], brokerRanges[key][0], brokerRanges[key][1])
		}
	}
	const unknown = "no-such-transactional-id"
	cases := map[string]func() kmsg.Request{
		"ListTransactions unknown state": func() kmsg.Request {
			r := kmsg.NewPtrListTransactionsRequest()
			r.StateFilters = []string{"Bogus"}
			return r
		},
		"ListTransactions bad pattern": func() kmsg.Request {
			r := kmsg.NewPtrListTransactionsRequest()
			r.TransactionalIDPattern = kmsg.StringPtr("(")
			return r
		},
		"InitProducerId timeout 0": func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr(unknown), 0
			return r
		},
		"InitProducerId empty transactional id": func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr(""), 60000
			return r
		},
	}
	for name, req := range cases {
		want := answer(t, ctx, kafka, req())
		got := answer(t, ctx, ferry, req())
		if got != want {
			t.Errorf("%s:\nferry %s\nkafka %s", name, got, want)
		}
	}
}
