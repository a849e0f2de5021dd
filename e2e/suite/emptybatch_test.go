package suite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/e2e/clients"
)

// TestConsumeStepsOverEmptyBatches: a tombstone for a key a primary-key table does not have changes
// nothing, yet Fluss writes a log batch without records for it, which takes an offset. Such a
// batch is served as a Kafka batch without records (Kafka sends those too, after compaction), so
// a consumer steps over it: here one sits between the two records and one at the end of the log.
// A Fetch at the last one gets it (base offset 3, last offset delta 0, no records); kcat (-e) reads
// both records and ends at the end of the partition, which it only sees once its position reached
// the high watermark; Java and franz-go read both records.
func TestConsumeStepsOverEmptyBatches(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "emptybatch")
	topic := pkTable(t, f, db, "pk", 1)
	cl := newKgo(t, e.kafka)
	for _, o := range []pkOp{{id: 1, v: 1}, {id: 999, delete: true}, {id: 2, v: 1}, {id: 998, delete: true}} {
		kgoProduce(t, cl, []*kgo.Record{pkKgoRecord(topic, o)}, 1)
	}

	fr := kmsg.NewPtrFetchRequest()
	fr.SetVersion(11)
	fr.ReplicaID, fr.MaxWaitMillis, fr.MaxBytes, fr.SessionEpoch = -1, 100, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes = 3, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	resp, _ := wireRoundTrip(t, e.kafka, fr)
	p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	var kb kmsg.RecordBatch
	if p.ErrorCode != 0 || p.HighWatermark != 4 {
		t.Fatalf("fetch at 3: error %d, high watermark %d; want 0, 4", p.ErrorCode, p.HighWatermark)
	}
	if err := kb.ReadFrom(p.RecordBatches); err != nil || kb.FirstOffset != 3 || kb.LastOffsetDelta != 0 || kb.NumRecords != 0 {
		t.Fatalf("fetch at 3: batch %+v (%v) in %d bytes; want base 3, last offset delta 0, no records", kb, err, len(p.RecordBatches))
	}

	for _, name := range []string{"kcat", "java", "franz"} {
		t.Run(name, func(t *testing.T) {
			c, err := clients.ByName(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Available(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			opts := clients.ConsumeOptions{Bootstrap: e.kafka, Topic: topic, Count: 2, Timeout: 60 * time.Second}
			if name == "kcat" {
				opts.Count = 3 // one more than there is: -e must end the run at the partition's end
				opts.Timeout = 30 * time.Second
			}
			res, err := c.Consume(ctx, opts)
			if err != nil {
				t.Fatalf("%v\nstderr: %s", err, res.Stderr)
			}
			if len(res.Messages) != 2 || res.Messages[0].Offset != 0 || res.Messages[1].Offset != 2 {
				t.Fatalf("read %+v, want the records at offsets 0 and 2; stderr: %s", res.Messages, res.Stderr)
			}
			if name == "kcat" && (res.ExitCode != 1 || !strings.Contains(res.Stderr, "reached the end of its partitions")) {
				t.Fatalf("kcat: exit %d, want 1 at the end of the partition; stderr: %s", res.ExitCode, res.Stderr)
			}
			t.Logf("%s: %v", name, res.Elapsed.Round(time.Millisecond))
		})
	}
}
