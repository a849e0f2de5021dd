package suite

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTransactionCoordinatorMoves: two frontdoors; a transaction is opened and its batches
// staged through the transactional id's coordinator, which is then SIGKILLed. The producer
// commits through the other frontdoor once coordination has moved there (it reads the id's
// journal from Fluss), then runs one more transaction: the table holds each record once.
func TestTransactionCoordinatorMoves(t *testing.T) {
	e, f := need(t)
	fdNames, addrs := startFrontdoors(t, e, "txnmove", []int{41, 42}, map[string]string{"FERRY_BROKER_LEASE": "3s"})
	kafka := map[int32]string{41: addrs[0], 42: addrs[1]}
	names := map[int32]string{41: fdNames[0], 42: fdNames[1]}
	db := dbName(t, f, "txnmove")
	topic := topicTableAt(t, f, kafka[41], db, "t", 4, txnColumns, nil)
	txnID := db + "-move"

	coordinator := func(via string) int32 {
		cl := newKgo(t, via)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1
		req.CoordinatorKeys = []string{txnID}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return -1
		}
		return resp.Coordinators[0].NodeID
	}
	// ledBy is a partition of topic whose leader is node, or -1.
	ledBy := func(node int32) int32 {
		cl := newKgo(t, kafka[41])
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 {
			return -1
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.Leader == node {
				return p.Partition
			}
		}
		return -1
	}
	deadline := time.Now().Add(30 * time.Second)
	var owner, part int32
	for {
		a, b := coordinator(kafka[41]), coordinator(kafka[42])
		if a == b && a > 0 {
			owner = a
			if part = ledBy(owner); part >= 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("frontdoors name coordinators %d and %d; partition led by it: %d", a, b, part)
		}
		time.Sleep(300 * time.Millisecond)
	}
	other := int32(41)
	if owner == 41 {
		other = 42
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka[41], kafka[42]), kgo.TransactionalID(txnID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(base int, partition int32) {
		t.Helper()
		for i := base; i < base+10; i++ {
			r := &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, `{"id": %d, "name": "move"}`, i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(0, part) // staged on the coordinator, which then dies
	if err := e.stack.Kill(names[owner]); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(t, f, db, "t"); len(got) != 0 {
		t.Fatalf("before the commit the table holds ids %v", got)
	}
	deadline = time.Now().Add(30 * time.Second)
	for coordinator(kafka[other]) != other {
		if time.Now().After(deadline) {
			t.Fatalf("frontdoor %d did not become the coordinator after %d died", other, owner)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit through frontdoor %d: %v", other, err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(100, part)
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	var want []int64
	for _, base := range []int64{0, 100} {
		for i := range int64(10) {
			want = append(want, base+i)
		}
	}
	if got := idsOf(t, f, db, "t"); !slices.Equal(got, want) {
		t.Fatalf("table holds ids %v, want %v", got, want)
	}
}
