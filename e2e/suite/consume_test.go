package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// Consumers (docs/kafka-api.md "Fetch and ListOffsets"): Kafka clients read Fluss tables through
// frontdoor and fetchsvc, whoever wrote them, with Fluss's offsets.

// consumeColumns is a table whose every record part has a column: the headers column keeps every
// header in order (the array form), so a consumed record can equal the produced one.
var consumeColumns = []testenv.Column{
	{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
	{Name: "name", Type: "STRING"},
	{Name: "amount", Type: "DECIMAL(10, 2)"},
	{Name: "ok", Type: "BOOLEAN"},
	{Name: "tags", Type: "ARRAY<STRING>"},
	{Name: "k", Type: "BYTES"},
	{Name: "ts", Type: "TIMESTAMP_LTZ(3)"},
	{Name: "hdrs", Type: "ARRAY<ROW<hk STRING, hv BYTES>>"},
}

var consumeProps = map[string]string{"kafka.key.column": "k", "kafka.timestamp.column": "ts", "kafka.headers.column": "hdrs"}

// consumed is a record as a consumer got it.
type consumed struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time
	Headers   []header
}

// consumeAll reads every partition of topic from the start with a group-less franz-go consumer
// until it has n records, checking that each partition's offsets only grow.
func consumeAll(t *testing.T, addr, topic string, n int, opts ...kgo.Opt) []consumed {
	t.Helper()
	cl := newKgo(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []consumed
	last := map[int32]int64{}
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records in a minute", len(out), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if prev, ok := last[r.Partition]; ok && r.Offset <= prev {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, prev)
			}
			last[r.Partition] = r.Offset
			c := consumed{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			for _, h := range r.Headers {
				c.Headers = append(c.Headers, header{Key: h.Key, Value: h.Value})
			}
			out = append(out, c)
		})
	}
	return out
}

// sameJSON compares two JSON documents by value: numbers by their exact decimal value (a
// DECIMAL(10, 2) column gives 12.5 back as 12.50), objects by member.
func sameJSON(a, b []byte) bool {
	parse := func(b []byte) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	va, oka := parse(a)
	vb, okb := parse(b)
	return oka && okb && equalJSON(va, vb)
}

func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		ra, oka := new(big.Rat).SetString(string(x))
		rb, okb := new(big.Rat).SetString(string(y))
		return ok && oka && okb && ra.Cmp(rb) == 0
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !equalJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equalJSON)
	default:
		return a == b
	}
}

// TestConsumeWhatFerryWrote: records produced through Ferry (keys, null keys, empty keys,
// headers with null values, timestamps) come back to a franz-go consumer exactly once, each at
// the partition and offset its producer was told, with key, timestamp, headers equal and the
// JSON value equal by value.
func TestConsumeWhatFerryWrote(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "consume")
	topic := topicTable(t, f, db, "roundtrip", 3, consumeColumns, consumeProps)
	const n = 300
	recs := make([]*kgo.Record, n)
	for i := range recs {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 3),
			Value:     fmt.Appendf(nil, `{"id": %d, "name": "n-%d ✓", "amount": %d.5, "ok": %t, "tags": ["a", "b%d"]}`, i, i, i, i%2 == 0, i),
			Timestamp: time.UnixMilli(1_767_225_600_000 + int64(i)*7),
			Headers:   []kgo.RecordHeader{{Key: "run", Value: []byte("x")}, {Key: "null"}, {Key: "run", Value: []byte{byte(i)}}},
		}
		switch i % 4 {
		case 0: // null key
		case 1:
			r.Key = []byte{}
		default:
			r.Key = fmt.Appendf(nil, "key-%d", i)
		}
		recs[i] = r
	}
	acked := kgoProduce(t, newKgo(t, e.kafka, kgo.ProducerLinger(5*time.Millisecond)), recs, 50)
	got := consumeAll(t, e.kafka, topic, n)
	if len(got) != n {
		t.Fatalf("consumed %d records, produced %d", len(got), n)
	}
	byPos := map[[2]int64]consumed{}
	for _, c := range got {
		pos := [2]int64{int64(c.Partition), c.Offset}
		if _, dup := byPos[pos]; dup {
			t.Fatalf("partition %d offset %d consumed twice", c.Partition, c.Offset)
		}
		byPos[pos] = c
	}
	for i, s := range acked {
		c, ok := byPos[[2]int64{int64(s.Partition), s.Offset}]
		switch {
		case !ok:
			t.Fatalf("record %d (partition %d offset %d) not consumed", i, s.Partition, s.Offset)
		case (c.Key == nil) != (s.Key == nil) || !bytes.Equal(c.Key, s.Key):
			t.Errorf("record %d: key %q (nil %t), produced %q (nil %t)", i, c.Key, c.Key == nil, s.Key, s.Key == nil)
		case !sameJSON(c.Value, s.Value):
			t.Errorf("record %d: value %s, produced %s", i, c.Value, s.Value)
		case !c.Timestamp.Equal(s.Timestamp):
			t.Errorf("record %d: timestamp %v, produced %v", i, c.Timestamp, s.Timestamp)
		case !slices.EqualFunc(c.Headers, s.Headers, func(a, b header) bool {
			return a.Key == b.Key && (a.Value == nil) == (b.Value == nil) && bytes.Equal(a.Value, b.Value)
		}):
			t.Errorf("record %d: headers %v, produced %v", i, c.Headers, s.Headers)
		}
	}
}

// TestConsumeWhatJavaWrote: rows the Fluss Java writer appended to a table (not through Ferry)
// are served at the offsets and with the commit times the Java scanner reports, as JSON values.
func TestConsumeWhatJavaWrote(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "consume")
	topic := topicTable(t, f, db, "java", 2, []testenv.Column{{Name: "id", Type: "INT"}, {Name: "name", Type: "STRING"}}, nil)
	var rows []map[string]any
	for i := range 500 {
		rows = append(rows, map[string]any{"id": i, "name": fmt.Sprintf("row %d", i)})
	}
	f.Write(t, db, "java", rows)
	scan := f.Scan(t, db, "java", testenv.ScanOptions{Expect: len(rows)})
	got := consumeAll(t, e.kafka, topic, len(rows))
	sort.Slice(got, func(i, j int) bool {
		return got[i].Partition < got[j].Partition || got[i].Partition == got[j].Partition && got[i].Offset < got[j].Offset
	})
	sort.Slice(scan, func(i, j int) bool {
		return scan[i].Bucket < scan[j].Bucket || scan[i].Bucket == scan[j].Bucket && scan[i].Offset < scan[j].Offset
	})
	if len(got) != len(scan) {
		t.Fatalf("consumed %d records, the scanner read %d rows", len(got), len(scan))
	}
	for i, s := range scan {
		c := got[i]
		want := fmt.Sprintf(`{"id":%s,"name":%q}`, s.Row["id"], s.Row["name"])
		if c.Partition != s.Bucket || c.Offset != s.Offset || c.Key != nil || string(c.Value) != want || c.Timestamp.UnixMilli() != s.Timestamp {
			t.Fatalf("record %d: partition %d offset %d key %q value %s ts %d; the scanner read bucket %d offset %d %s ts %d",
				i, c.Partition, c.Offset, c.Key, c.Value, c.Timestamp.UnixMilli(), s.Bucket, s.Offset, want, s.Timestamp)
		}
	}
}

// TestConsumeOffsets: ListOffsets answers earliest, latest and times (the first batch Fluss
// committed at or after them); a fetch beyond the end is OFFSET_OUT_OF_RANGE, an unknown topic
// UNKNOWN_TOPIC_OR_PARTITION.
func TestConsumeOffsets(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "consume")
	topic := topicTable(t, f, db, "offsets", 1, []testenv.Column{{Name: "id", Type: "INT"}}, nil)
	cl := newKgo(t, e.kafka)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	produce := func(ids ...int) {
		var recs []*kgo.Record
		for _, id := range ids {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id": %d}`, id)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(1, 2, 3)
	time.Sleep(50 * time.Millisecond)
	between := time.Now()
	time.Sleep(50 * time.Millisecond)
	produce(4, 5)
	adm := kadm.NewClient(cl)
	check := func(what string, res kadm.ListedOffsets, err error, want int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		o, ok := res.Lookup(topic, 0)
		if !ok || o.Err != nil || o.Offset != want {
			t.Errorf("%s: %+v, want offset %d", what, o, want)
		}
	}
	res, err := adm.ListStartOffsets(ctx, topic)
	check("earliest", res, err, 0)
	res, err = adm.ListEndOffsets(ctx, topic)
	check("latest", res, err, 5)
	res, err = adm.ListOffsetsAfterMilli(ctx, between.UnixMilli(), topic)
	check("after the first batch", res, err, 3)
	res, err = adm.ListOffsetsAfterMilli(ctx, between.Add(-time.Hour).UnixMilli(), topic)
	check("an hour before", res, err, 0)

	// Raw requests for the precise codes.
	fetch := func(topic string, offset int64) int16 {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = 12, -1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := fetch(topic, 99); code != kerr.OffsetOutOfRange.Code {
		t.Errorf("fetch beyond the end: %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(code))
	}
	if code := fetch(db+".no_such_table", 0); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("fetch of an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
}

// TestConsumeTail: a consumer waiting at the end of a topic gets each record produced while it
// waits; the produce-to-consume latency is logged (make bench measures it).
func TestConsumeTail(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "consume")
	topic := topicTable(t, f, db, "tail", 1, []testenv.Column{{Name: "id", Type: "BIGINT"}}, nil)
	consumer := newKgo(t, e.kafka, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	producer := newKgo(t, e.kafka)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 40
	var lat []time.Duration
	for i := range n {
		done := make(chan time.Time, 1)
		go func() {
			for {
				fs := consumer.PollFetches(ctx)
				if ctx.Err() != nil || fs.NumRecords() > 0 {
					done <- time.Now()
					return
				}
			}
		}()
		if i == 0 {
			time.Sleep(time.Second) // the consumer finds the end first
		}
		start := time.Now()
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id": %d}`, i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		end := <-done
		if ctx.Err() != nil {
			t.Fatalf("record %d not consumed", i)
		}
		lat = append(lat, end.Sub(start))
	}
	slices.Sort(lat)
	t.Logf("produce→consume latency over %d records: p50 %v, p90 %v, max %v", n, lat[n/2], lat[n*9/10], lat[n-1])
}

// groupConsumer is one member of a franz-go consumer group (auto-commit off, commits what it
// polled), recording what it consumed.
type groupConsumer struct {
	cl   *kgo.Client
	mu   sync.Mutex
	seen map[[2]int64]int // (partition, offset) -> times consumed
	got  []consumed
}

func newGroupConsumer(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *groupConsumer {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(300 * time.Millisecond), kgo.SessionTimeout(10 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.ClientID("ferry-e2e-group")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &groupConsumer{cl: cl, seen: map[[2]int64]int{}}
}

// poll consumes for d, committing after each poll.
func (g *groupConsumer) poll(t *testing.T, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		fs := g.cl.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() == nil {
				t.Errorf("fetch %s/%d: %v", topic, p, err)
			}
		})
		g.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			g.seen[[2]int64{int64(r.Partition), r.Offset}]++
			g.got = append(g.got, consumed{Partition: r.Partition, Offset: r.Offset, Value: r.Value})
		})
		g.mu.Unlock()
		if fs.NumRecords() > 0 {
			cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := g.cl.CommitUncommittedOffsets(cctx); err != nil {
				t.Errorf("commit: %v", err)
			}
			ccancel()
		}
	}
}

// TestConsumerGroup: three franz-go members of one group share six partitions; a member joining
// and one leaving rebalance the group; each commits what it consumed; after every Ferry service
// is killed and started again, a new member resumes at the committed offsets: every record is consumed, none is
// skipped, and a record is consumed again only if its commit was not made before a rebalance.
func TestConsumerGroup(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "consume")
	topic := topicTable(t, f, db, "grouped", 6, []testenv.Column{{Name: "id", Type: "BIGINT"}}, nil)
	producer := newKgo(t, e.kafka)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	next := 0
	produce := func(n int) {
		var recs []*kgo.Record
		for range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(next % 6), Value: fmt.Appendf(nil, `{"id": %d}`, next)})
			next++
		}
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	group := "g-" + db
	produce(600)
	a, b := newGroupConsumer(t, e.kafka, group, topic), newGroupConsumer(t, e.kafka, group, topic)
	defer a.cl.Close()
	var wg sync.WaitGroup
	run := func(g *groupConsumer, d time.Duration) {
		wg.Add(1)
		go func() { defer wg.Done(); g.poll(t, d) }()
	}
	run(a, 12*time.Second)
	run(b, 6*time.Second) // b leaves half way
	time.Sleep(3 * time.Second)
	c := newGroupConsumer(t, e.kafka, group, topic)
	run(c, 9*time.Second) // c joins
	time.Sleep(time.Second)
	produce(600)
	time.Sleep(time.Second)
	describeGroupWithKafkaTool(t, e.kafka, group, topic)
	wg.Wait()
	b.cl.Close()
	c.cl.Close()
	a.cl.Close()

	adm := kadm.NewClient(newKgo(t, e.kafka))
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if dg := described[group]; dg.Err != nil || dg.State != "Empty" {
		t.Errorf("group after every member left: %+v", dg)
	}
	// Every Ferry service crashes, then starts again.
	services := []string{stack.Frontdoor, stack.Fetch, stack.Catalog, stack.Append, stack.Transcode, stack.Transcode + "-2"}
	if singleMode() {
		services = []string{stack.Single}
	}
	for _, svc := range services {
		if err := e.stack.Kill(svc); err != nil {
			t.Fatalf("kill %s: %v", svc, err)
		}
	}
	for _, svc := range slices.Backward(services) {
		if err := e.stack.Restart(ctx, svc); err != nil {
			t.Fatalf("restart %s: %v", svc, err)
		}
	}
	waitTopic(t, topic, 6)
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	produce(300)
	d := newGroupConsumer(t, e.kafka, group, topic)
	defer d.cl.Close()
	start := map[int32]int64{}
	committed.Each(func(o kadm.OffsetResponse) { start[o.Partition] = o.At })
	d.poll(t, 8*time.Second)

	total := map[[2]int64]int{}
	for _, g := range []*groupConsumer{a, b, c, d} {
		for k, n := range g.seen {
			total[k] += n
		}
	}
	ends := map[int32]int64{}
	for p := range int32(6) {
		ends[p] = int64(next/6 + map[bool]int{true: 1}[int(p) < next%6])
	}
	again := 0
	for p, end := range ends {
		for o := int64(0); o < end; o++ {
			switch n := total[[2]int64{int64(p), o}]; {
			case n == 0:
				t.Errorf("partition %d offset %d never consumed", p, o)
			case n > 1:
				again++
			}
		}
		if start[p] == 0 {
			t.Errorf("partition %d: no committed offset before the restart", p)
		}
	}
	for k := range d.seen {
		if k[1] < start[int32(k[0])] {
			t.Errorf("after the restart, partition %d offset %d consumed below the committed %d", k[0], k[1], start[int32(k[0])])
		}
	}
	t.Logf("%d records, %d consumed more than once (commits overtaken by a rebalance); committed before restart: %v", next, again, start)

	// d committed everything; 30 more records are the group's lag, which frontdoor reports.
	d.cl.Close()
	produce(30)
	deadline := time.Now().Add(time.Minute)
	for {
		lag, ok := scrapeService(t, e, stack.Frontdoor).sum("ferry_frontdoor_consumer_group_lag", map[string]string{"group": group, "topic": topic})
		if ok && lag == 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer group lag metric: %v (present %v), want 30", lag, ok)
		}
		time.Sleep(2 * time.Second)
	}
}

// describeGroupWithKafkaTool runs Kafka's own kafka-consumer-groups --describe (the 4.4 tools jar)
// against frontdoor while the group has members: it must list every partition of topic with the
// committed offset, the log end offset, the lag and the member holding it.
func describeGroupWithKafkaTool(t *testing.T, addr, group, topic string) {
	t.Helper()
	root, err := stack.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, ".cache", "bench", "kafka-tools-lib")
	if _, err := os.Stat(lib); err != nil {
		if os.Getenv(testenv.EnvRequireFluss) == "1" {
			t.Fatalf("kafka tools not installed (tools/install-clients.sh): %v", err)
		}
		t.Logf("kafka tools not installed; kafka-consumer-groups not run: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "java", "-cp", filepath.Join(lib, "*"),
		"org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
		"--bootstrap-server", addr, "--describe", "--group", group).CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-consumer-groups --describe: %v\n%s", err, out)
	}
	t.Logf("kafka-consumer-groups --describe:\n%s", out)
	// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
	rows := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 9 || f[0] != group || f[1] != topic {
			continue
		}
		rows++
		cur, err1 := strconv.ParseInt(f[3], 10, 64)
		end, err2 := strconv.ParseInt(f[4], 10, 64)
		lag, err3 := strconv.ParseInt(f[5], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || lag != end-cur || end < cur || !strings.HasPrefix(f[6], "ferry-e2e-group") {
			t.Errorf("kafka-consumer-groups row %q: want offsets, lag = end - current and a member", line)
		}
	}
	if rows != 6 {
		t.Errorf("kafka-consumer-groups listed %d partitions of %s, want 6", rows, topic)
	}
}

// TestConsumePrimaryKeyChangelog: upserts and deletes produced through Ferry into a primary-key
// table come back to a consumer as the compacted-topic view: each key's records in changelog
// order, updates as records with the new value, deletes as tombstones keyed by the primary key.
func TestConsumePrimaryKeyChangelog(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "consume")
	topic := pkTable(t, f, db, "pk", 2)
	ops := pkScenario(0)
	cl := newKgo(t, e.kafka, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	for _, o := range ops {
		kgoProduce(t, cl, []*kgo.Record{pkKgoRecord(topic, o)}, 1)
	}
	changelog, _ := pkExpect(ops)
	want := map[string]string{} // key -> values in order, "D" for a tombstone
	n := 0
	for id, s := range changelog {
		key := fmt.Sprintf(`{"id":%d}`, id)
		for _, c := range strings.Fields(s) {
			kind, v, _ := strings.Cut(c, ":")
			switch kind {
			case "-U":
				continue
			case "-D":
				want[key] += "D "
			default:
				want[key] += fmt.Sprintf(`{"id":%d,"name":"n%d","v":%s} `, id, id, v)
			}
			n++
		}
	}
	got := map[string]string{}
	for _, c := range consumeAll(t, e.kafka, topic, n) {
		v := "D"
		if c.Value != nil {
			v = string(c.Value)
		}
		got[string(c.Key)] += v + " "
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("key %s: records %q, want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("consumed %d keys, want %d", len(got), len(want))
	}
}

// TestGroupCoordinatorMoves: with two frontdoors, both name the same coordinator for a group;
// when it dies, the other becomes the coordinator once catalogsvc drops the dead one's lease,
// and a member joining through it resumes at the offsets committed through the dead one.
func TestGroupCoordinatorMoves(t *testing.T) {
	e, f := need(t)
	fdNames, addrs := startFrontdoors(t, e, "groups", []int{21, 22}, map[string]string{"FERRY_BROKER_LEASE": "3s"})
	kafka := map[int32]string{21: addrs[0], 22: addrs[1]}
	names := map[int32]string{21: fdNames[0], 22: fdNames[1]}

	db := dbName(t, f, "consume")
	topic := topicTableAt(t, f, kafka[21], db, "moving", 4, []testenv.Column{{Name: "id", Type: "BIGINT"}}, nil)
	group := "g-" + db
	coordinator := func(via string) int32 {
		cl := newKgo(t, via)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return -1
		}
		return resp.Coordinators[0].NodeID
	}
	// Both frontdoors registered: both name one coordinator.
	deadline := time.Now().Add(30 * time.Second)
	var owner int32
	for {
		a, b := coordinator(kafka[21]), coordinator(kafka[22])
		waitBrokers := newKgo(t, kafka[21])
		_, brokers, _ := partitionLeaders(context.Background(), waitBrokers, topic)
		if a == b && a > 0 && brokers == 2 {
			owner = a
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("frontdoors name coordinators %d and %d, %d brokers listed", a, b, brokers)
		}
		time.Sleep(300 * time.Millisecond)
	}
	other := int32(21)
	if owner == 21 {
		other = 22
	}
	var recs []*kgo.Record
	for i := range 200 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 4), Value: fmt.Appendf(nil, `{"id": %d}`, i)})
	}
	kgoProduce(t, newKgo(t, kafka[other]), recs, 200)
	first := newGroupConsumer(t, kafka[owner], group, topic)
	first.poll(t, 6*time.Second)
	first.cl.Close()
	if len(first.seen) != 200 {
		t.Fatalf("first member read %d records, want 200", len(first.seen))
	}

	if err := e.stack.Kill(names[owner]); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for coordinator(kafka[other]) != other {
		if time.Now().After(deadline) {
			t.Fatalf("frontdoor %d did not become the coordinator after %d died", other, owner)
		}
		time.Sleep(300 * time.Millisecond)
	}
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i % 4), Value: fmt.Appendf(nil, `{"id": %d}`, 1000+i)}
	}
	kgoProduce(t, newKgo(t, kafka[other]), recs[:40], 40)
	second := newGroupConsumer(t, kafka[other], group, topic)
	second.poll(t, 6*time.Second)
	second.cl.Close()
	for k := range second.seen {
		if k[1] < 50 {
			t.Errorf("after the move, partition %d offset %d read again (committed 50 per partition)", k[0], k[1])
		}
	}
	if len(second.seen) != 40 {
		t.Errorf("second member read %d records, want the 40 new ones", len(second.seen))
	}
}
