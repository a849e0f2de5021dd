package suite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestConsumeCompressed: a table's kafka.fetch.compression reaches the wire (every record batch
// of a Fetch answer carries the codec's attribute bits) and every selected real client decodes
// it: each record exactly once with its key and value. Java and franz-go read through
// incremental fetch sessions (KIP-227), and a Java group member resuming from a committed
// offset validates it with OffsetForLeaderEpoch (KIP-320), as frontdoor's metrics show.
func TestConsumeCompressed(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "consume_codecs")
	const n = 40
	codecs := []struct {
		name string
		bits int16
	}{{"none", 0}, {"gzip", 1}, {"lz4", 3}, {"zstd", 4}, {"", 3}} // "": the default
	topics := map[string]string{}
	// record i goes to partition i%2, so it lands at offset i/2 there.
	record := func(topic string, i int) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: int32(i % 2), Key: fmt.Appendf(nil, "k%d", i),
			Value: fmt.Appendf(nil, `{"id":%d,"name":"a name repeated to compress %d"}`, i, i)}
	}
	for _, c := range codecs {
		props := map[string]string{"kafka.key.column": "k"}
		table := "codec_default"
		if c.name != "" {
			props["kafka.fetch.compression"] = c.name
			table = "codec_" + c.name
		}
		topic := topicTable(t, f, db, table, 2, []testenv.Column{{Name: "k", Type: "STRING"}, {Name: "id", Type: "INT"}, {Name: "name", Type: "STRING"}}, props)
		topics[c.name] = topic
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, record(topic, i))
		}
		kgoProduce(t, newKgo(t, e.kafka, kgo.RecordPartitioner(kgo.ManualPartitioner())), recs, n)

		// The wire: a Fetch v12 of partition 0 from offset 0.
		cl := newKgo(t, e.kafka)
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxBytes, req.MaxWaitMillis, req.SessionEpoch = 12, 1<<20, 100, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
			t.Fatalf("%s: fetch error %d, %d bytes", topic, p.ErrorCode, len(p.RecordBatches))
		}
		for rest := p.RecordBatches; len(rest) > 0; {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(rest); err != nil {
				t.Fatalf("%s: %v", topic, err)
			}
			if b.Attributes&7 != c.bits {
				t.Errorf("%s (%q): batch at %d has codec %d, want %d", topic, c.name, b.FirstOffset, b.Attributes&7, c.bits)
			}
			rest = rest[12+b.Length:]
		}
	}

	check := func(t *testing.T, _ clients.Client, m clients.Message) {
		want := record("", int(m.Offset)*2+int(m.Partition))
		if string(m.Key) != string(want.Key) || !sameJSON(m.Value, want.Value) {
			t.Errorf("partition %d offset %d: key %q value %s", m.Partition, m.Offset, m.Key, m.Value)
		}
	}
	incremental := func() float64 {
		v, _ := scrapeService(t, e, stack.Frontdoor).sum("ferry_frontdoor_fetch_requests_total", map[string]string{"session": "incremental"})
		return v
	}
	for _, c := range selectedClients(t) {
		t.Run(c.Name, func(t *testing.T) {
			before := incremental()
			// The Java consumer opens a fetch session on its first fetch and keeps fetching
			// while it hands records out, so its run has incremental fetches (other tests'
			// consumers may add to the count). franz-go may read everything in its first
			// fetch; its sessions are checked below with a consumer that has to fetch again.
			defer func() {
				d := incremental() - before
				t.Logf("%s: %v incremental fetches", c.Name, d)
				if c.Name == "java" && d < 1 {
					t.Errorf("%s: no incremental fetch, want its fetches in a session", c.Name)
				}
			}()
			for _, codec := range codecs {
				if codec.name == "" {
					continue
				}
				if codec.name == "zstd" && c.Name == "kafkajs" {
					// kafkajs has no zstd codec (its runner registers snappy and lz4 only).
					t.Logf("kafkajs: zstd skipped: no codec")
					continue
				}
				opts := clients.ConsumeOptions{Bootstrap: e.kafka, Topic: topics[codec.name], Count: n}
				if ok, _ := c.Supports(clients.ConsumeAssign); !ok {
					opts.Group = "codec-" + db + "-" + c.Name + "-" + codec.name
				}
				t.Run(codec.name, func(t *testing.T) { consumeWithClient(t, c, opts, check) })
			}
			if ok, _ := c.Supports(clients.ConsumeGroup); !ok || c.Name != "java" {
				return
			}
			// A group resuming from committed offsets that carry a leader epoch (as the Java
			// consumer's own commits do): the member validates them before fetching.
			epochRequests := func() float64 {
				v, _ := scrapeService(t, e, stack.Frontdoor).sum("ferry_frontdoor_requests_total",
					map[string]string{"api": "OffsetForLeaderEpoch", "result": "ok"})
				return v
			}
			epochsBefore := epochRequests()
			group := "resume-" + db + "-" + c.Name
			var commit kadm.Offsets
			for p := range int32(2) {
				commit.Add(kadm.Offset{Topic: topics["lz4"], Partition: p, At: n / 4, LeaderEpoch: 0})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := kadm.NewClient(newKgo(t, e.kafka)).CommitAllOffsets(ctx, group, commit); err != nil {
				t.Fatal(err)
			}
			resumed := func(t *testing.T, c clients.Client, m clients.Message) {
				check(t, c, m)
				if m.Offset < n/4 {
					t.Errorf("partition %d: offset %d before the committed %d", m.Partition, m.Offset, n/4)
				}
			}
			consumeWithClient(t, c, clients.ConsumeOptions{Bootstrap: e.kafka, Topic: topics["lz4"], Count: n / 2, Group: group}, resumed)
			if d := epochRequests() - epochsBefore; d < 1 {
				t.Errorf("no OffsetForLeaderEpoch answered while the second member resumed")
			} else {
				t.Logf("%v OffsetForLeaderEpoch requests answered", d)
			}
		})
	}

	// franz-go: a consumer that has caught up fetches again within its session when more
	// records arrive, so the fetch that returns them is incremental.
	t.Run("franz-session", func(t *testing.T) {
		before := incremental()
		cl := newKgo(t, e.kafka, kgo.ConsumeTopics(topics["none"]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		read := func(want int) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for got := 0; got < want; {
				fs := cl.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("%d of %d records read: %v", got, want, err)
				}
				fs.EachRecord(func(r *kgo.Record) {
					check(t, clients.Client{}, clients.Message{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
				})
				got += fs.NumRecords()
			}
		}
		read(n)
		var more []*kgo.Record
		for i := n; i < n+10; i++ {
			more = append(more, record(topics["none"], i))
		}
		kgoProduce(t, newKgo(t, e.kafka), more, len(more))
		read(len(more))
		if d := incremental() - before; d < 1 {
			t.Errorf("franz-go: no incremental fetch, want its fetches in a session")
		} else {
			t.Logf("franz-go: %v incremental fetches", d)
		}
	})
}
