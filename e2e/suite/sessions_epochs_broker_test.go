package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestOffsetForLeaderEpochMatchesBroker: OffsetForLeaderEpoch v4 answers as a Kafka 4.4 broker
// answers, field by field, for a partition of three records: its epoch, an epoch it never had,
// a client epoch ahead of the partition's, a partition the topic does not have, an unknown
// topic.
func TestOffsetForLeaderEpochMatchesBroker(t *testing.T) {
	e, f := need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	broker, err := clients.StartBroker(ctx, t.TempDir(), false)
	if errors.Is(err, clients.ErrBrokerNotInstalled) && os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") != "1" {
		t.Skipf("reference broker: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Stop() })

	db := dbName(t, f, "epochs")
	ferryTopic := topicTable(t, f, db, "three", 1, []testenv.Column{{Name: "id", Type: "INT"}}, nil)
	kafkaTopic := "three"
	kcl := newKgo(t, broker.Bootstrap)
	if _, err := kadm.NewClient(kcl).CreateTopic(ctx, 1, 1, nil, kafkaTopic); err != nil {
		t.Fatal(err)
	}
	for addr, topic := range map[string]string{e.kafka: ferryTopic, broker.Bootstrap: kafkaTopic} {
		var recs []*kgo.Record
		for i := range 3 {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id":%d}`, i)})
		}
		kgoProduce(t, newKgo(t, addr), recs, 3)
	}

	type entry struct {
		code   int16
		epoch  int32
		offset int64
	}
	ask := func(addr, topic string, partition, current, epoch int32) entry {
		t.Helper()
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = 4, -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = partition, current, epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		// Sent to the only broker, whatever leads the partition.
		cl := newKgo(t, addr)
		resp, err := req.RequestWith(ctx, cl.Broker(int(firstBroker(ctx, t, cl))))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("%s: %d topics in the answer", addr, len(resp.Topics))
		}
		p := resp.Topics[0].Partitions[0]
		return entry{p.ErrorCode, p.LeaderEpoch, p.EndOffset}
	}
	for _, c := range []struct {
		name                      string
		missing                   bool
		partition, current, epoch int32
	}{
		{"the partition's epoch", false, 0, 0, 0},
		{"no current epoch", false, 0, -1, 0},
		{"an epoch never had", false, 0, -1, 5},
		{"client epoch ahead", false, 0, 1, 0},
		{"partition the topic does not have", false, 7, -1, 0},
		{"unknown topic", true, 0, -1, 0},
	} {
		kt, ft := kafkaTopic, ferryTopic
		if c.missing {
			kt, ft = "no-such-topic", db+".no_such_table"
		}
		want := ask(broker.Bootstrap, kt, c.partition, c.current, c.epoch)
		got := ask(e.kafka, ft, c.partition, c.current, c.epoch)
		if got != want {
			t.Errorf("%s: frontdoor %+v, Kafka %+v", c.name, got, want)
		} else {
			t.Logf("%s: %+v, as Kafka", c.name, got)
		}
	}
}

// firstBroker is the node id of the first broker Metadata lists.
func firstBroker(ctx context.Context, t *testing.T, cl *kgo.Client) int32 {
	t.Helper()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil || len(resp.Brokers) == 0 {
		t.Fatalf("metadata: %v", err)
	}
	return resp.Brokers[0].NodeID
}

// TestFetchSessionMatchesBroker: a fetch session's answers as a Kafka 4.4 broker gives them,
// step by step: a full fetch opens a session, an incremental fetch of a partition at its end
// answers no partition, a wrong epoch and an unknown session id are refused, epoch -1 closes
// the session. Session ids are random: only whether one is given is compared.
func TestFetchSessionMatchesBroker(t *testing.T) {
	e, f := need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	broker, err := clients.StartBroker(ctx, t.TempDir(), false)
	if errors.Is(err, clients.ErrBrokerNotInstalled) && os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") != "1" {
		t.Skipf("reference broker: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Stop() })

	db := dbName(t, f, "sessions")
	ferryTopic := topicTable(t, f, db, "three", 1, []testenv.Column{{Name: "id", Type: "INT"}}, nil)
	kafkaTopic := "three"
	if _, err := kadm.NewClient(newKgo(t, broker.Bootstrap)).CreateTopic(ctx, 1, 1, nil, kafkaTopic); err != nil {
		t.Fatal(err)
	}
	for addr, topic := range map[string]string{e.kafka: ferryTopic, broker.Bootstrap: kafkaTopic} {
		var recs []*kgo.Record
		for i := range 3 {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id":%d}`, i)})
		}
		kgoProduce(t, newKgo(t, addr), recs, 3)
	}

	type answer struct {
		code       int16
		hasSession bool
		partitions []string // partition:error:high watermark:has records
	}
	// Both sides at Fetch v12 (topics by name): kgo sends the highest version both ends know.
	v12 := kversion.Stable()
	v12.SetMaxKeyVersion(int16(kmsg.Fetch), 12)
	sides := map[string]*kgo.Client{}
	for _, addr := range []string{e.kafka, broker.Bootstrap} {
		sides[addr] = newKgo(t, addr, kgo.MaxVersions(v12))
	}
	fetch := func(addr, topic string, id, epoch int32, offset int64, name bool) (answer, int32) {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = 12, -1, 1<<20, 100
		req.SessionID, req.SessionEpoch = id, epoch
		if name {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		cl := sides[addr]
		resp, err := req.RequestWith(ctx, cl.Broker(int(firstBroker(ctx, t, cl))))
		if err != nil {
			t.Fatal(err)
		}
		a := answer{code: resp.ErrorCode, hasSession: resp.SessionID != 0}
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				a.partitions = append(a.partitions, fmt.Sprintf("%d:%d:%d:%t", p.Partition, p.ErrorCode, p.HighWatermark, len(p.RecordBatches) > 0))
			}
		}
		return a, resp.SessionID
	}
	ids := map[string]int32{}
	for _, step := range []struct {
		name          string
		id            func(addr string) int32
		epoch         int32
		offset        int64
		namePartition bool
	}{
		{"full fetch opening a session", func(string) int32 { return 0 }, 0, 0, true},
		{"incremental, the partition now at its end", func(a string) int32 { return ids[a] }, 1, 3, true},
		{"incremental, nothing named, nothing new", func(a string) int32 { return ids[a] }, 2, 0, false},
		{"wrong epoch", func(a string) int32 { return ids[a] }, 7, 0, false},
		{"unknown session", func(a string) int32 { return ids[a] + 1 }, 1, 0, false},
		{"closing epoch -1", func(a string) int32 { return ids[a] }, -1, 3, true},
		{"the closed session", func(a string) int32 { return ids[a] }, 3, 0, false},
	} {
		got, gotID := fetch(e.kafka, ferryTopic, step.id(e.kafka), step.epoch, step.offset, step.namePartition)
		want, wantID := fetch(broker.Bootstrap, kafkaTopic, step.id(broker.Bootstrap), step.epoch, step.offset, step.namePartition)
		if step.epoch == 0 {
			ids[e.kafka], ids[broker.Bootstrap] = gotID, wantID
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: frontdoor %+v, Kafka %+v", step.name, got, want)
		} else {
			t.Logf("%s: %+v, as Kafka", step.name, got)
		}
	}
}
