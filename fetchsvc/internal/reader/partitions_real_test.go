package reader

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestReadFlussPartitions: the topic of one Fluss partition reads that
// partition's buckets at the offsets, and lists the offsets, the Java
// scanner reports for it; rows written later into it are read on. The
// table's own topic is refused with the partition topics' pattern, and a
// dropped partition's topic answers UNKNOWN_TOPIC_OR_PARTITION.
func TestReadFlussPartitions(t *testing.T) {
	e := newRealEnv(t)
	info := e.cluster.NewTable(t, testenv.TableSpec{Database: e.db, Table: "daily", BucketCount: 2, PartitionKeys: []string{"dt"},
		Columns: []testenv.Column{{Name: "id", Type: "INT"}, {Name: "dt", Type: "STRING", Nullable: testenv.NotNull()}}})
	var rows []map[string]any
	for i := range 30 {
		rows = append(rows, map[string]any{"id": i, "dt": []string{"d1", "d2", "d3"}[i%3]})
	}
	e.cluster.Write(t, e.db, "daily", rows)
	e.cluster.Write(t, e.db, "daily", []map[string]any{{"id": 100, "dt": "d1"}, {"id": 101, "dt": "d1"}}) // later, into d1
	scan := e.cluster.Scan(t, e.db, "daily", testenv.ScanOptions{Expect: 32})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	parts, err := e.fluss.ListPartitions(ctx, fluss.TablePath{Database: e.db, Table: "daily"})
	if err != nil || len(parts) != 3 {
		t.Fatalf("partitions: %+v, %v", parts, err)
	}
	table := e.mapping(info)
	topicOf := func(p fluss.PartitionInfo) *catalogv1.TopicMapping {
		m := proto.Clone(table).(*catalogv1.TopicMapping)
		m.Topic = table.Topic + "." + p.Name
		m.FlussPartition = &catalogv1.FlussPartition{Id: p.ID, Name: p.Name, TableTopic: table.Topic}
		return m
	}
	for _, p := range parts {
		m := topicOf(p)
		for b := range info.BucketCount {
			var want []string
			for _, r := range scan {
				if *r.PartitionID == p.ID && r.Bucket == b {
					want = append(want, fmt.Sprintf(`%d {"id":%s,"dt":%q}`, r.Offset, r.Row["id"], p.Name))
				}
			}
			var got []string
			for _, r := range e.readAll(t, m, b, 1<<20) {
				got = append(got, fmt.Sprintf("%d %s", r.Offset, r.Value))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s[%d]: read\n%s\nthe scanner read\n%s", m.Topic, b, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			resp, err := e.svc.ListOffsets(ctx, &fetchv1.ListOffsetsRequest{Mapping: m,
				Partitions: []*fetchv1.OffsetQuery{{Partition: b, Timestamp: timestampEarliest}, {Partition: b, Timestamp: timestampLatest}}})
			if err != nil {
				t.Fatal(err)
			}
			if a := resp.GetPartitions(); a[0].GetOffset() != 0 || a[1].GetOffset() != int64(len(want)) || a[0].GetErrorCode() != 0 || a[1].GetErrorCode() != 0 {
				t.Errorf("%s[%d] earliest, latest: %+v, want 0, %d", m.Topic, b, a, len(want))
			}
		}
	}

	// The table's own topic: every partition refused, naming the pattern.
	resp, err := e.svc.Read(ctx, &fetchv1.ReadRequest{MaxBytes: 1 << 20, Topics: []*fetchv1.ReadTopic{{Mapping: table,
		Partitions: []*fetchv1.ReadPartition{{Partition: 0}, {Partition: 1}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range resp.GetTopics()[0].GetPartitions() {
		if pr.GetErrorCode() != int32(kerr.InvalidRequest.Code) || !strings.Contains(pr.GetErrorMessage(), `^`+e.db+`\.daily\..+`) {
			t.Errorf("read of the table's topic: %+v", pr)
		}
	}
	lo, err := e.svc.ListOffsets(ctx, &fetchv1.ListOffsetsRequest{Mapping: table, Partitions: []*fetchv1.OffsetQuery{{Partition: 0, Timestamp: -1}}})
	if err != nil || lo.GetPartitions()[0].GetErrorCode() != int32(kerr.InvalidRequest.Code) {
		t.Errorf("list offsets of the table's topic: %+v, %v", lo, err)
	}

	// A dropped partition's topic is unknown, on this reader that has read it.
	dropped := parts[0]
	if err := e.fluss.DropPartition(ctx, fluss.TablePath{Database: e.db, Table: "daily"}, fluss.PartitionSpec{"dt": dropped.Name}, false); err != nil {
		t.Fatal(err)
	}
	m := topicOf(dropped)
	for {
		resp, err := e.svc.Read(ctx, &fetchv1.ReadRequest{MaxBytes: 1 << 20, Topics: []*fetchv1.ReadTopic{{Mapping: m,
			Partitions: []*fetchv1.ReadPartition{{Partition: 0}}}}})
		if err != nil {
			t.Fatal(err)
		}
		pr := resp.GetTopics()[0].GetPartitions()[0]
		if pr.GetErrorCode() == int32(kerr.UnknownTopicOrPartition.Code) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("read of a dropped partition: error %d (%s)", pr.GetErrorCode(), pr.GetErrorMessage())
		}
		time.Sleep(100 * time.Millisecond)
	}
	lo, err = e.svc.ListOffsets(ctx, &fetchv1.ListOffsetsRequest{Mapping: m, Partitions: []*fetchv1.OffsetQuery{{Partition: 0, Timestamp: -1}}})
	if err != nil || lo.GetPartitions()[0].GetErrorCode() != int32(kerr.UnknownTopicOrPartition.Code) {
		t.Errorf("list offsets of a dropped partition: %+v, %v", lo, err)
	}
}
