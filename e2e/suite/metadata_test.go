package suite

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestMetadataShowsMappedTable: a table that opts in is the topic database.table with one
// partition per bucket, every partition led by frontdoor, which is the one broker listed at the
// advertised address; a table that does not opt in is not a topic, nor is one that opts in but
// cannot be one (a primary-key table with a nested column, whose rows Ferry cannot encode).
func TestMetadataShowsMappedTable(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "metadata")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT"}, {Name: "name", Type: "STRING"}}
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "hidden", Columns: cols, BucketCount: 2})
	hidden := db + ".hidden"
	// Opted in, but this primary-key table cannot be a topic: named, it is INVALID_TOPIC_EXCEPTION
	// (not retriable, so producers fail at once instead of waiting for it).
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "keyed", Columns: []testenv.Column{
		{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "tags", Type: "ARRAY<STRING>"}},
		PrimaryKey: []string{"id"}, BucketCount: 2, CustomProperties: map[string]string{"kafka.enabled": "true"}})
	keyed := db + ".keyed"
	// Created last: waiting for it to show proves the catalog has read the two tables above, so
	// their answers below are final rather than "not seen yet".
	topic := topicTable(t, f, db, "orders", 3, cols, nil)

	adm := kadm.NewClient(newKgo(t, e.kafka))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, topic, hidden, keyed)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	host, port, _ := net.SplitHostPort(e.kafka)
	if len(md.Brokers) != 1 {
		t.Fatalf("brokers = %v, want frontdoor alone", md.Brokers)
	}
	if b := md.Brokers[0]; b.NodeID != e.nodeID || b.Host != host || strconv.Itoa(int(b.Port)) != port {
		t.Errorf("broker = %+v, want node %d at %s", b, e.nodeID, e.kafka)
	}
	if md.Controller != e.nodeID {
		t.Errorf("controller = %d, want %d", md.Controller, e.nodeID)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		t.Fatalf("topic %s: present %v, err %v", topic, ok, td.Err)
	}
	if len(td.Partitions) != 3 {
		t.Fatalf("topic %s has %d partitions, want 3 (the buckets)", topic, len(td.Partitions))
	}
	for p := int32(0); p < 3; p++ {
		pd, ok := td.Partitions[p]
		if !ok {
			t.Errorf("partition %d missing", p)
			continue
		}
		if pd.Err != nil || pd.Leader != e.nodeID || len(pd.Replicas) != 1 || pd.Replicas[0] != e.nodeID {
			t.Errorf("partition %d = %+v, want leader and only replica %d", p, pd, e.nodeID)
		}
	}
	if td.ID == (kadm.TopicID{}) {
		t.Errorf("topic %s has no topic id", topic)
	}
	if hd := md.Topics[hidden]; hd.Err != kerr.UnknownTopicOrPartition {
		t.Errorf("table without kafka.enabled: err %v, want UNKNOWN_TOPIC_OR_PARTITION", hd.Err)
	}

	if kd := md.Topics[keyed]; kd.Err != kerr.InvalidTopicException {
		t.Errorf("opted-in primary-key table with an ARRAY column: err %v, want INVALID_TOPIC_EXCEPTION", kd.Err)
	}

	// An all-topics request lists the topic (and not the hidden or the refused table).
	all, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatalf("all-topics metadata: %v", err)
	}
	if _, ok := all.Topics[topic]; !ok {
		t.Errorf("all-topics metadata lacks %s: %v", topic, all.Topics.Names())
	}
	for _, name := range []string{hidden, keyed} {
		if _, ok := all.Topics[name]; ok {
			t.Errorf("all-topics metadata lists %s, which is not a topic", name)
		}
	}
}
