package suite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestConsumerValidatesAfterLeaderMove: a Java consumer reading four partitions led by two
// frontdoors keeps reading when one frontdoor dies and its partitions move to the other: it
// checks its positions there with OffsetForLeaderEpoch (KIP-320) and reads every record once,
// the ones written after the move included.
func TestConsumerValidatesAfterLeaderMove(t *testing.T) {
	e, f := need(t)
	c, err := clients.ByName("java")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Available(context.Background()); err != nil {
		t.Skipf("java not available: %v", err)
	}
	fdNames, addrs := startFrontdoors(t, e, "epochs", []int{31, 32}, map[string]string{"FERRY_BROKER_LEASE": "3s"})
	db := dbName(t, f, "leader_move")
	topic := topicTableAt(t, f, addrs[0], db, "moving", 4, []testenv.Column{{Name: "id", Type: "BIGINT"}}, nil)
	waitForBrokers(t, newKgo(t, addrs[0]), topic, 2)
	produce := func(from int) {
		var recs []*kgo.Record
		for i := range 100 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 4), Value: fmt.Appendf(nil, `{"id":%d}`, from+i)})
		}
		kgoProduce(t, newKgo(t, addrs[0], kgo.RecordPartitioner(kgo.ManualPartitioner())), recs, 100)
	}
	produce(0)
	metric := func(fd, name string, labels map[string]string) float64 {
		page, err := scrape(e.stack, fd)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := page.sum(name, labels)
		return v
	}
	epochRequests := func() float64 {
		return metric(fdNames[0], "ferry_frontdoor_requests_total", map[string]string{"api": "OffsetForLeaderEpoch", "result": "ok"})
	}
	type result struct {
		res clients.ConsumeResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := c.Consume(ctx, clients.ConsumeOptions{Bootstrap: addrs[0], Topic: topic, Count: 200, Timeout: 90 * time.Second})
		if err == nil {
			err = res.Err()
		}
		done <- result{res, err}
	}()
	// Once the consumer fetches from the second frontdoor in a session, that frontdoor dies.
	deadline := time.Now().Add(60 * time.Second)
	for metric(fdNames[1], "ferry_frontdoor_fetch_requests_total", map[string]string{"session": "incremental"}) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the consumer did not fetch from the second frontdoor within 60s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	epochsBefore := epochRequests()
	if err := e.stack.Kill(fdNames[1]); err != nil {
		t.Fatal(err)
	}
	produce(100)

	r := <-done
	if r.err != nil {
		t.Fatalf("java consume: %v", r.err)
	}
	seen := map[[2]int64]bool{}
	ids := map[string]bool{}
	for _, m := range r.res.Messages {
		k := [2]int64{int64(m.Partition), m.Offset}
		if seen[k] {
			t.Errorf("partition %d offset %d read twice", m.Partition, m.Offset)
		}
		seen[k] = true
		ids[string(m.Value)] = true
	}
	for i := range 200 {
		if !ids[fmt.Sprintf(`{"id":%d}`, i)] {
			t.Errorf("record %d not read", i)
		}
	}
	if d := epochRequests() - epochsBefore; d < 1 {
		t.Errorf("no OffsetForLeaderEpoch reached the frontdoor that took the partitions over")
	} else {
		t.Logf("%v OffsetForLeaderEpoch requests after the move; %d records read", d, len(r.res.Messages))
	}
}
