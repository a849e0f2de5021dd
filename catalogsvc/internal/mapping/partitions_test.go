package mapping

import (
	"strings"
	"testing"

	"github.com/ferrygw/ferry/services/fluss/types"
)

func TestPartitionTopicName(t *testing.T) {
	long := strings.Repeat("v", 200)
	tests := []struct {
		table  string
		values []string
		want   string // "" = refused
	}{
		{"shop.daily", []string{"20261204"}, "shop.daily.20261204"},
		{"shop.orders", []string{"eu-west", "2026_12"}, "shop.orders.eu-west.2026_12"},
		{"iot.frames.v1", []string{"A"}, "iot.frames.v1.A"}, // a kafka.topic with dots
		{"shop.daily", []string{"__internal"}, "shop.daily.__internal"},
		{"shop.daily", nil, ""},
		{"shop.daily", []string{""}, ""},
		{"shop.daily", []string{"a.b"}, ""},      // would split into two values
		{"shop.daily", []string{"a$b"}, ""},      // Fluss's own separator
		{"shop.daily", []string{"bad name"}, ""}, // not a Kafka name
		{"shop.daily", []string{long, long}, ""}, // longer than 249
	}
	for _, tt := range tests {
		got, err := PartitionTopicName(tt.table, tt.values)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("PartitionTopicName(%q, %q) = %q, %v; want %q", tt.table, tt.values, got, err, tt.want)
		}
	}
}

func TestPartitionTopic(t *testing.T) {
	table := with(func(t *Table) {
		t.Columns = append(t.Columns, column("dt", tString), column("region", tString))
		t.PartitionKeys = []string{"region", "dt"}
	})
	tm, r := Resolve(table, opts)
	if r != nil {
		t.Fatal(r)
	}
	p := Partition{ID: 77, Values: []string{"eu", "20261204"}}
	pm, err := PartitionTopic(tm, p, opts.ClusterID)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case pm.Topic != "shop.orders.eu.20261204":
		t.Errorf("topic %s", pm.Topic)
	case pm.FlussPartition.GetId() != 77 || pm.FlussPartition.GetName() != "eu$20261204" || pm.FlussPartition.GetTableTopic() != "shop.orders":
		t.Errorf("partition %+v", pm.FlussPartition)
	case pm.PartitionCount != tm.PartitionCount || pm.TableId != tm.TableId || pm.SchemaId != tm.SchemaId || len(pm.Columns) != len(tm.Columns):
		t.Errorf("the partition's topic does not read the table: %+v", pm)
	case tm.FlussPartition != nil || tm.Topic != "shop.orders":
		t.Errorf("the table's mapping was changed: %+v", tm)
	}
	// Ids: stable, distinct from the table's and from other partitions', per cluster.
	again, _ := PartitionTopic(tm, p, opts.ClusterID)
	other, _ := PartitionTopic(tm, Partition{ID: 78, Values: []string{"eu", "20261205"}}, opts.ClusterID)
	elsewhere, _ := PartitionTopic(tm, p, "another-cluster")
	if string(again.TopicId) != string(pm.TopicId) || again.MappingId != pm.MappingId {
		t.Error("the same partition got another id")
	}
	for _, o := range [][]byte{tm.TopicId, other.TopicId, elsewhere.TopicId} {
		if string(o) == string(pm.TopicId) {
			t.Errorf("topic id %x shared", o)
		}
	}
	if pm.MappingId == tm.MappingId || pm.MappingId == other.MappingId {
		t.Error("mapping id shared with the table or another partition")
	}
	// A partition recreated under its name is a new topic.
	if re, _ := PartitionTopic(tm, Partition{ID: 99, Values: p.Values}, opts.ClusterID); string(re.TopicId) == string(pm.TopicId) {
		t.Error("a recreated partition kept its topic id")
	}
	if _, err := PartitionTopic(tm, Partition{ID: 1, Values: []string{"eu"}}, opts.ClusterID); err == nil {
		t.Error("a partition with one value of two was named")
	}
}

// column is a column of type typ.
func column(name string, typ types.DataType) types.Field { return types.Field{Name: name, Type: typ} }
