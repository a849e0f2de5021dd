package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestProduceAcks covers the acknowledgement levels other than all: acks=1 is acknowledged with
// offsets like acks=all; acks=0 gets no response at all, so the records are found by content —
// each exactly once, in send order within its partition.
func TestProduceAcks(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "acks")
	const n = 90

	t.Run("acks=1", func(t *testing.T) {
		topic := topicTable(t, f, db, "leader_ack", jsonBuckets, jsonColumns, jsonProps)
		recs := make([]sent, n)
		for i := range recs {
			recs[i] = jsonRecord("acks1", i)
		}
		cl := newKgo(t, e.kafka, kgo.RequiredAcks(kgo.LeaderAck()))
		verifyRows(t, f, db, "leader_ack", kgoProduce(t, cl, toKgo(topic, recs), 30), jsonRow(n))
	})

	t.Run("acks=0", func(t *testing.T) {
		topic := topicTable(t, f, db, "no_ack", jsonBuckets, jsonColumns, jsonProps)
		cl := newKgo(t, e.kafka, kgo.RequiredAcks(kgo.NoAck()))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		recs := make([]sent, n)
		for i := range recs {
			recs[i] = jsonRecord("acks0", i)
		}
		if err := cl.ProduceSync(ctx, toKgo(topic, recs)...).FirstErr(); err != nil {
			t.Fatalf("produce with acks=0: %v", err)
		}
		rows := f.Scan(t, db, "no_ack", testenv.ScanOptions{Expect: n, Timeout: 60 * time.Second})
		if len(rows) != n {
			t.Fatalf("%d rows, want %d", len(rows), n)
		}
		want := jsonRow(n)
		seen := map[int64]bool{}
		perBucket := map[int32][]testenv.ScanRow{}
		for _, r := range rows {
			id, err := r.Row["id"].(json.Number).Int64()
			if err != nil || id < 0 || id >= n || seen[id] {
				t.Fatalf("row %v: bad or repeated id", r.Row)
			}
			seen[id] = true
			s := recs[id]
			if r.Bucket != s.Partition {
				t.Errorf("record %d in bucket %d, sent to partition %d", id, r.Bucket, s.Partition)
			}
			if got, exp := canonicalRow(t, r.Row), canonicalRow(t, want(s)); got != exp {
				t.Errorf("record %d:\n got %s\nwant %s", id, got, exp)
			}
			perBucket[r.Bucket] = append(perBucket[r.Bucket], r)
		}
		for b, rs := range perBucket {
			sort.Slice(rs, func(i, j int) bool { return rs[i].Offset < rs[j].Offset })
			var ids []string
			for i, r := range rs {
				ids = append(ids, fmt.Sprint(r.Row["id"]))
				if i > 0 && idOf(r) < idOf(rs[i-1]) {
					t.Errorf("bucket %d: records out of send order: ids by offset %v", b, ids)
					break
				}
			}
		}
	})
}

func idOf(r testenv.ScanRow) int64 {
	id, _ := r.Row["id"].(json.Number).Int64()
	return id
}

// canonicalRow is canonical with MAP columns in key order.
func canonicalRow(t *testing.T, row map[string]any) string {
	t.Helper()
	for _, c := range mapColumns {
		sortPairs(row, c)
	}
	return canonical(t, row)
}
