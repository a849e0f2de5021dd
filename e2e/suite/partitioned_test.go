package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestConsumePartitionedTable: a partitioned table's Fluss partitions are topics of their own
// (docs/mapping.md §4.5), which the Java, confluent-kafka (librdkafka) and franz-go consumers find
// with a pattern subscription. With rows in three partitions, rows written into the oldest
// partition after the consumers started and a partition created while they run, each client's
// group reads every row exactly once and commits. After a restart of every Ferry service, and a
// partition dropped (as retention drops one) while they run, each group reads exactly the rows
// written since its commit.
func TestConsumePartitionedTable(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "partitioned")
	const table = "daily"
	f.NewTable(t, testenv.TableSpec{Database: db, Table: table, BucketCount: 2, PartitionKeys: []string{"dt"},
		Columns: []testenv.Column{
			{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
			{Name: "dt", Type: "STRING", Nullable: testenv.NotNull()},
		},
		CustomProperties: map[string]string{"kafka.enabled": "true"}})
	topic := db + "." + table
	waitTopic(t, topic, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	producer := newKgo(t, e.kafka, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	next := 0
	produce := func(dt string, n int) {
		t.Helper()
		var recs []*kgo.Record
		for range n {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id": %d, "dt": %q}`, next, dt)})
			next++
		}
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", dt, err)
		}
	}
	produce("d1", 10)
	produce("d2", 10)
	produce("d3", 10)
	for _, dt := range []string{"d1", "d2", "d3"} {
		waitTopic(t, topic+"."+dt, 2) // a named partition topic is found
	}

	// The topic of a partition is for reading.
	res := producer.ProduceSync(ctx, &kgo.Record{Topic: topic + ".d1", Value: []byte(`{"id": -1, "dt": "d1"}`)})
	if err := res.FirstErr(); !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("produce to a partition's topic: %v, want INVALID_TOPIC_EXCEPTION", err)
	}

	readers := []string{"java", "confluent-kafka", "franz"}
	pattern := "^" + regexp.QuoteMeta(topic) + `\..+`
	group := func(c string) string { return "g-" + db + "-" + c }
	var groups []string
	for _, c := range readers {
		groups = append(groups, group(c))
	}
	adm := kadm.NewClient(newKgo(t, e.kafka))

	// consumeAll runs every reader in its group and, once all are reading, calls meanwhile; each
	// must read exactly the rows with ids in want, and commit.
	consumeAll := func(want []int, meanwhile func()) {
		t.Helper()
		results := make([]clients.ConsumeResult, len(readers))
		errs := make([]error, len(readers))
		var wg sync.WaitGroup
		for i, name := range readers {
			c, err := clients.ByName(name)
			if err != nil {
				t.Fatal(err)
			}
			if ok, why := c.Supports(clients.ConsumeTopicRegex); !ok {
				t.Fatalf("%s: %s", name, why)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = c.Consume(ctx, clients.ConsumeOptions{Bootstrap: e.kafka, TopicRegex: pattern, Count: len(want),
					Group: group(name), Commit: true, From: "earliest", MetadataMaxAgeMs: 1000, Timeout: 3 * time.Minute})
			}()
		}
		waitGroupsReading(ctx, t, adm, groups, topic+".")
		meanwhile()
		wg.Wait()
		for i, name := range readers {
			err := errs[i]
			if err == nil {
				err = results[i].Err()
			}
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			checkPartitionRows(t, name, topic, results[i].Messages, want)
		}
	}

	ids := func(from, to int) []int {
		var out []int
		for i := from; i < to; i++ {
			out = append(out, i)
		}
		return out
	}
	// First run: 30 rows there, 5 more into the oldest partition and 5 into a new one while the
	// consumers run.
	consumeAll(ids(0, 40), func() {
		produce("d1", 5)
		produce("d4", 5)
	})
	if t.Failed() {
		return
	}

	// Every Ferry service crashes and starts again.
	services := []string{stack.Frontdoor, stack.Fetch, stack.Catalog, stack.Append, stack.Transcode, stack.Transcode + "-2"}
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
	waitTopic(t, topic+".d4", 2)

	// Second run: the groups resume at their commits; d2 is dropped while they read.
	first := next
	var dropped time.Time
	consumeAll(ids(first, first+6), func() {
		fc, err := fluss.Dial(ctx, f.Bootstrap)
		if err != nil {
			t.Fatal(err)
		}
		defer fc.Close()
		if err := fc.DropPartition(ctx, fluss.TablePath{Database: db, Table: table}, fluss.PartitionSpec{"dt": "d2"}, false); err != nil {
			t.Fatal(err)
		}
		dropped = time.Now()
		produce("d1", 3)
		produce("d3", 3)
	})

	// The dropped partition's topic leaves Metadata, named and listed: at once when a fetch found
	// it gone (frontdoor names it stale to catalogsvc), at the latest at catalogsvc's next refresh.
	want := []string{topic, topic + ".d1", topic + ".d3", topic + ".d4"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := adm.Metadata(ctx, topic+".d2")
		if err != nil {
			t.Fatal(err)
		}
		named := md.Topics[topic+".d2"].Err
		listed, err := adm.ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, td := range listed.Sorted() {
			if strings.HasPrefix(td.Topic, topic) {
				names = append(names, td.Topic)
			}
		}
		if errors.Is(named, kerr.UnknownTopicOrPartition) && slices.Equal(names, want) {
			t.Logf("the dropped partition's topic left Metadata %v after the drop", time.Since(dropped).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the drop: the dropped partition's topic answers %v, topics listed %v, want UNKNOWN_TOPIC_OR_PARTITION and %v",
				named, names, want)
		}
		time.Sleep(time.Second)
	}
}

// waitGroupsReading waits until every group is Stable with a member assigned partitions of
// topics starting with prefix.
func waitGroupsReading(ctx context.Context, t *testing.T, adm *kadm.Client, groups []string, prefix string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		described, err := adm.DescribeGroups(ctx, groups...)
		ready := err == nil
		for _, g := range groups {
			dg := described[g]
			reading := false
			for _, m := range dg.Members {
				if a, ok := m.Assigned.AsConsumer(); ok {
					for _, tp := range a.Topics {
						reading = reading || strings.HasPrefix(tp.Topic, prefix) && len(tp.Partitions) > 0
					}
				}
			}
			ready = ready && dg.Err == nil && dg.State == "Stable" && reading
		}
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("groups %v not all reading after 2 minutes: %+v, %v", groups, described, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkPartitionRows checks that a reader read each id of want once, each row from the topic of
// its partition, at offsets growing per topic partition.
func checkPartitionRows(t *testing.T, reader, tableTopic string, msgs []clients.Message, want []int) {
	t.Helper()
	seen := map[int]int{}
	last := map[string]int64{}
	for _, m := range msgs {
		var row struct {
			ID int    `json:"id"`
			DT string `json:"dt"`
		}
		if err := json.Unmarshal(m.Value, &row); err != nil {
			t.Errorf("%s: %s[%d]@%d: value %q: %v", reader, m.Topic, m.Partition, m.Offset, m.Value, err)
			continue
		}
		seen[row.ID]++
		if m.Topic != tableTopic+"."+row.DT {
			t.Errorf("%s: row %d of partition %s read from topic %q", reader, row.ID, row.DT, m.Topic)
		}
		key := fmt.Sprintf("%s[%d]", m.Topic, m.Partition)
		if prev, ok := last[key]; ok && m.Offset <= prev {
			t.Errorf("%s: %s offset %d after %d", reader, key, m.Offset, prev)
		}
		last[key] = m.Offset
	}
	var missing, twice []int
	for _, id := range want {
		switch seen[id] {
		case 0:
			missing = append(missing, id)
		case 1:
		default:
			twice = append(twice, id)
		}
		delete(seen, id)
	}
	var extra []int
	for id := range seen {
		extra = append(extra, id)
	}
	sort.Ints(extra)
	if len(missing)+len(twice)+len(extra) > 0 {
		t.Errorf("%s: rows missing %v, read more than once %v, not expected %v", reader, missing, twice, extra)
	}
	t.Logf("%s read %d rows from %d topic partitions", reader, len(msgs), len(last))
}
