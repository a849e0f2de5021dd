package suite

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestConsumeRealClients: every real client of e2e/clients reads, through Ferry, a table written
// through Ferry (keys, headers, timestamps restored; JSON values equal by value) and a table the
// Fluss Java writer wrote (rows as JSON objects, at the scanner's offsets and commit times): every
// record exactly once, in offset order per partition. Without a group where the client can,
// and as a group member committing what it read, after which the group's committed offsets are
// the ends of the partitions.
func TestConsumeRealClients(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "consume_clients")
	const n = 30

	// Through Ferry: every record part in a column.
	ferryTopic := topicTable(t, f, db, "via_ferry", 3, consumeColumns, consumeProps)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: ferryTopic, Partition: int32(i % 3), Key: fmt.Appendf(nil, "k%d", i),
			Value:     fmt.Appendf(nil, `{"id": %d, "name": "n %d ✓", "amount": %d.5, "ok": true, "tags": ["x"]}`, i, i, i),
			Timestamp: time.Now().Add(-time.Minute).Add(time.Duration(i) * time.Millisecond).Truncate(time.Millisecond),
			Headers:   []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "v%d", i)}, {Key: "h", Value: []byte("again")}}})
	}
	acked := kgoProduce(t, newKgo(t, e.kafka), recs, n)
	viaFerry := map[[2]int64]sent{}
	for _, s := range acked {
		viaFerry[[2]int64{int64(s.Partition), s.Offset}] = s
	}

	// By the Java writer.
	javaTopic := topicTable(t, f, db, "via_java", 2, []testenv.Column{{Name: "id", Type: "INT"}, {Name: "name", Type: "STRING"}}, nil)
	var rows []map[string]any
	for i := range n {
		rows = append(rows, map[string]any{"id": i, "name": fmt.Sprintf("row %d", i)})
	}
	f.Write(t, db, "via_java", rows)
	viaJava := map[[2]int64]testenv.ScanRow{}
	for _, r := range f.Scan(t, db, "via_java", testenv.ScanOptions{Expect: n}) {
		viaJava[[2]int64{int64(r.Bucket), r.Offset}] = r
	}

	checkFerry := func(t *testing.T, c clients.Client, m clients.Message) {
		s, ok := viaFerry[[2]int64{int64(m.Partition), m.Offset}]
		switch {
		case !ok:
			t.Errorf("partition %d offset %d was not produced", m.Partition, m.Offset)
		case !bytes.Equal(m.Key, s.Key) || !sameJSON(m.Value, s.Value) || m.TimestampMs != s.Timestamp.UnixMilli():
			t.Errorf("partition %d offset %d: key %q value %s ts %d; produced %q %s %d", m.Partition, m.Offset,
				m.Key, m.Value, m.TimestampMs, s.Key, s.Value, s.Timestamp.UnixMilli())
		case len(m.Headers) != 2 || m.Headers[0].Key != "h" || !bytes.Equal(m.Headers[0].Value, s.Headers[0].Value) ||
			m.Headers[1].Key != "h" || string(m.Headers[1].Value) != "again":
			t.Errorf("partition %d offset %d: headers %+v, produced %+v", m.Partition, m.Offset, m.Headers, s.Headers)
		}
	}
	checkJava := func(t *testing.T, c clients.Client, m clients.Message) {
		r, ok := viaJava[[2]int64{int64(m.Partition), m.Offset}]
		want := fmt.Sprintf(`{"id":%s,"name":%q}`, r.Row["id"], r.Row["name"])
		switch {
		case !ok:
			t.Errorf("partition %d offset %d was not written", m.Partition, m.Offset)
		case m.Key != nil && !(c.EmptyReadsAsNull && len(m.Key) == 0) || string(m.Value) != want || m.TimestampMs != r.Timestamp:
			t.Errorf("partition %d offset %d: key %q value %s ts %d; want null key, %s, ts %d", m.Partition, m.Offset,
				m.Key, m.Value, m.TimestampMs, want, r.Timestamp)
		}
	}

	for _, c := range selectedClients(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			if err := c.Available(context.Background()); err != nil {
				t.Fatalf("%s not available: %v", c.Name, err)
			}
			tables := []struct {
				name, topic string
				partitions  int
				check       func(*testing.T, clients.Client, clients.Message)
			}{{"via-ferry", ferryTopic, 3, checkFerry}, {"via-java", javaTopic, 2, checkJava}}
			for _, tb := range tables {
				if ok, why := c.Supports(clients.ConsumeAssign); ok {
					t.Run(tb.name+"/assign", func(t *testing.T) {
						consumeWithClient(t, c, clients.ConsumeOptions{Bootstrap: e.kafka, Topic: tb.topic, Count: n}, tb.check)
					})
				} else {
					// A client that only consumes in groups reads this table in a group of its own.
					t.Logf("%s: no group-less consumer (%s): reads %s in a group", c.Name, why, tb.name)
					t.Run(tb.name+"/group-only", func(t *testing.T) {
						consumeWithClient(t, c, clients.ConsumeOptions{Bootstrap: e.kafka, Topic: tb.topic, Count: n,
							Group: "read-" + db + "-" + c.Name + "-" + tb.name}, tb.check)
					})
				}
			}
			if ok, why := c.Supports(clients.ConsumeGroup); !ok {
				t.Logf("%s: no group consumer: %s", c.Name, why)
				return
			}
			t.Run("via-ferry/group", func(t *testing.T) {
				group := "g-" + db + "-" + c.Name
				consumeWithClient(t, c, clients.ConsumeOptions{Bootstrap: e.kafka, Topic: ferryTopic, Count: n, Group: group, Commit: true}, checkFerry)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				committed, err := kadm.NewClient(newKgo(t, e.kafka)).FetchOffsets(ctx, group)
				if err != nil {
					t.Fatal(err)
				}
				ends := map[int32]int64{}
				for k := range viaFerry {
					ends[int32(k[0])] = max(ends[int32(k[0])], k[1]+1)
				}
				for p, end := range ends {
					if o, ok := committed.Lookup(ferryTopic, p); !ok || o.Err != nil || o.At != end {
						t.Errorf("group %s committed %+v for partition %d, want %d", group, o, p, end)
					}
				}
			})
		})
	}
}

// consumeWithClient reads opts.Count records with c and checks each with check, that none is read
// twice and that offsets grow per partition.
func consumeWithClient(t *testing.T, c clients.Client, opts clients.ConsumeOptions, check func(*testing.T, clients.Client, clients.Message)) {
	t.Helper()
	opts.Timeout = 60 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := c.Consume(ctx, opts)
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		t.Fatalf("%s consume: %v", c.Name, err)
	}
	last := map[int32]int64{}
	seen := map[[2]int64]bool{}
	for _, m := range res.Messages {
		k := [2]int64{int64(m.Partition), m.Offset}
		if seen[k] {
			t.Errorf("partition %d offset %d read twice", m.Partition, m.Offset)
		}
		seen[k] = true
		if prev, ok := last[m.Partition]; ok && m.Offset <= prev {
			t.Errorf("partition %d: offset %d after %d", m.Partition, m.Offset, prev)
		}
		last[m.Partition] = m.Offset
		check(t, c, m)
	}
	var parts []int
	for p := range last {
		parts = append(parts, int(p))
	}
	sort.Ints(parts)
	t.Logf("%s read %d records from partitions %v in %v", c.Name, len(res.Messages), parts, res.Elapsed.Round(time.Millisecond))
}

// TestKafkaPythonTailsInGroup: kafka-python, a group member, reads every record and then keeps
// polling at the end of its partitions for 30 s, as a consumer tailing a topic does. Every poll
// there gets partitions without records, which kafka-python 3.0 can only take as an empty record
// set: a null one (length -1) raised a TypeError out of poll as soon as it caught up.
func TestKafkaPythonTailsInGroup(t *testing.T) {
	e, f := need(t)
	c, err := clients.ByName("kafka-python")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Available(context.Background()); err != nil {
		t.Fatalf("kafka-python not available: %v", err)
	}
	db := dbName(t, f, "kafka_python_tail")
	topic := topicTable(t, f, db, "tail", 3, consumeColumns, consumeProps)
	const n = 9
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Key: fmt.Appendf(nil, "k%d", i),
			Value: fmt.Appendf(nil, `{"id": %d, "name": "n%d", "amount": 1.5, "ok": true, "tags": []}`, i, i)})
	}
	kgoProduce(t, newKgo(t, e.kafka), recs, n)

	// One record more than there is: the runner reads n, then polls until its deadline.
	const tail = 30 * time.Second
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.Consume(ctx, clients.ConsumeOptions{Bootstrap: e.kafka, Topic: topic, Count: n + 1,
		Group: "tail-" + db, Timeout: tail + 15*time.Second})
	if err != nil {
		t.Fatalf("kafka-python consume: %v\nstderr: %s", err, res.Stderr)
	}
	if len(res.Messages) != n {
		t.Fatalf("read %d records, want %d; stderr: %s", len(res.Messages), n, res.Stderr)
	}
	last := map[int32]int64{}
	for _, m := range res.Messages {
		if prev, ok := last[m.Partition]; ok && m.Offset <= prev {
			t.Errorf("partition %d: offset %d after %d", m.Partition, m.Offset, prev)
		}
		last[m.Partition] = m.Offset
	}
	// The run must have ended at its deadline, not with an exception out of poll.
	want := fmt.Sprintf("read %d of %d records before the deadline", n, n+1)
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, want) || strings.Contains(res.Stderr, "Traceback") {
		t.Fatalf("exit %d, want 1 with %q and no exception; stderr:\n%s", res.ExitCode, want, res.Stderr)
	}
	t.Logf("kafka-python read %d records, then polled at the end of its partitions until %v after the start", n, time.Since(start).Round(time.Second))
}
