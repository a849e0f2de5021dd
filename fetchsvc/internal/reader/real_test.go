package reader

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	noopmetric "go.opentelemetry.io/otel/metric/noop"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/testenv"
)

// realEnv is the service over the test cluster, called in-process.
type realEnv struct {
	cluster *testenv.Cluster
	fluss   *fluss.Client
	svc     *Service
	db      string
}

func newRealEnv(t *testing.T) *realEnv {
	t.Helper()
	cluster := testenv.Fluss(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fc, err := fluss.Dial(ctx, cluster.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fc.Close() })
	svc, err := New(Config{}, fc, slog.New(slog.NewTextHandler(io.Discard, nil)), noopmetric.NewMeterProvider())
	if err != nil {
		t.Fatal(err)
	}
	return &realEnv{cluster: cluster, fluss: fc, svc: svc, db: cluster.NewDatabase(t, "fetchsvc")}
}

// mapping is the JSON-valued topic of a table, as catalogsvc maps it.
func (e *realEnv) mapping(info testenv.TableInfo) *catalogv1.TopicMapping {
	m := &catalogv1.TopicMapping{
		Topic: info.Database + "." + info.Table, Database: info.Database, Table: info.Table,
		TableId: info.TableID, SchemaId: info.SchemaID, PartitionCount: info.BucketCount,
		Kind:        catalogv1.TableKind_TABLE_KIND_LOG,
		PrimaryKeys: info.PrimaryKey, PartitionKeys: info.PartitionKeys,
		Mapping:   &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON},
		MappingId: fmt.Sprintf("test-%d", info.TableID),
	}
	if len(info.PrimaryKey) > 0 {
		m.Kind = catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY
	}
	return m
}

// record is one Kafka record as a consumer sees it.
type record struct {
	Offset     int64
	Key, Value []byte
	Timestamp  int64
}

// decodeBatches parses Kafka record batches the way a consumer does,
// checking that every batch starts after the previous one ended.
func decodeBatches(t *testing.T, data []byte, next int64) ([]record, int64) {
	t.Helper()
	var out []record
	for len(data) > 0 {
		if len(data) < 12 {
			t.Fatalf("%d bytes after the last batch", len(data))
		}
		n := 12 + int(binary.BigEndian.Uint32(data[8:]))
		var b kmsg.RecordBatch
		if err := b.ReadFrom(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
		if b.FirstOffset < next && b.FirstOffset+int64(b.LastOffsetDelta) >= next {
			// A batch holding the fetch offset may start before it, as in Kafka.
		} else if b.FirstOffset != next {
			t.Fatalf("batch at offset %d, want %d", b.FirstOffset, next)
		}
		rest := b.Records
		for range b.NumRecords {
			var r kmsg.Record
			if err := r.ReadFrom(rest); err != nil {
				t.Fatal(err)
			}
			_, w := binary.Varint(rest)
			rest = rest[w+int(r.Length):]
			off := b.FirstOffset + int64(r.OffsetDelta)
			if off >= next {
				out = append(out, record{Offset: off, Key: r.Key, Value: r.Value, Timestamp: b.FirstTimestamp + r.TimestampDelta64})
			}
		}
		next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
	}
	return out, next
}

// readAll reads partition p from offset 0 up to the high watermark.
func (e *realEnv) readAll(t *testing.T, m *catalogv1.TopicMapping, p int32, maxBytes int32) []record {
	t.Helper()
	var all []record
	next := int64(0)
	for range 1000 {
		resp, err := e.svc.Read(context.Background(), &fetchv1.ReadRequest{MaxBytes: maxBytes, MinBytes: 1,
			Topics: []*fetchv1.ReadTopic{{Mapping: m, Partitions: []*fetchv1.ReadPartition{{Partition: p, FetchOffset: next, MaxBytes: maxBytes}}}}})
		if err != nil {
			t.Fatal(err)
		}
		pr := resp.GetTopics()[0].GetPartitions()[0]
		if pr.GetErrorCode() != 0 {
			t.Fatalf("partition %d at %d: error %d %s", p, next, pr.GetErrorCode(), pr.GetErrorMessage())
		}
		var recs []record
		recs, next = decodeBatches(t, pr.GetRecords(), next)
		all = append(all, recs...)
		if next >= pr.GetHighWatermark() {
			return all
		}
	}
	t.Fatal("no end after 1000 reads")
	return nil
}

// TestReadLogTableWrittenByJava: rows the Fluss Java writer appended come
// back as records at the offsets, with the commit times, the Java scanner
// reports, their values JSON objects of the columns; small byte limits give
// the same records over more reads.
func TestReadLogTableWrittenByJava(t *testing.T) {
	e := newRealEnv(t)
	info := e.cluster.NewTable(t, testenv.TableSpec{Database: e.db, Table: "events", BucketCount: 2,
		Columns: []testenv.Column{{Name: "id", Type: "INT"}, {Name: "name", Type: "STRING"}, {Name: "amount", Type: "DECIMAL(10, 2)"}}})
	var rows []map[string]any
	for i := range 200 {
		rows = append(rows, map[string]any{"id": i, "name": fmt.Sprintf("n%d", i), "amount": fmt.Sprintf("%d.25", i)})
	}
	e.cluster.Write(t, e.db, "events", rows[:100])
	e.cluster.Write(t, e.db, "events", rows[100:])
	scan := e.cluster.Scan(t, e.db, "events", testenv.ScanOptions{})
	m := e.mapping(info)
	for _, maxBytes := range []int32{1 << 20, 1} {
		for p := range info.BucketCount {
			got := e.readAll(t, m, p, maxBytes)
			var want []testenv.ScanRow
			for _, r := range scan {
				if r.Bucket == p {
					want = append(want, r)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("max bytes %d, partition %d: %d records, the scanner read %d", maxBytes, p, len(got), len(want))
			}
			for i, w := range want {
				g := got[i]
				wantValue := fmt.Sprintf(`{"id":%s,"name":%q,"amount":%s}`, w.Row["id"], w.Row["name"], w.Row["amount"])
				if g.Offset != w.Offset || g.Timestamp != w.Timestamp || g.Key != nil || string(g.Value) != wantValue {
					t.Fatalf("partition %d record %d: offset %d ts %d key %q value %s; want offset %d ts %d value %s",
						p, i, g.Offset, g.Timestamp, g.Key, g.Value, w.Offset, w.Timestamp, wantValue)
				}
			}
		}
	}
}

// TestReadPrimaryKeyChangelog: a primary-key table is served as its
// changelog: inserts and updates as records keyed by the primary key,
// deletes as tombstones, the update-before rows as offset gaps.
func TestReadPrimaryKeyChangelog(t *testing.T) {
	e := newRealEnv(t)
	info := e.cluster.NewTable(t, testenv.TableSpec{Database: e.db, Table: "users", BucketCount: 1, PrimaryKey: []string{"id"},
		Columns: []testenv.Column{{Name: "id", Type: "INT", Nullable: testenv.NotNull()}, {Name: "v", Type: "STRING"}}})
	e.cluster.Write(t, e.db, "users", []map[string]any{{"id": 1, "v": "a"}, {"id": 2, "v": "b"}})
	e.cluster.Write(t, e.db, "users", []map[string]any{{"id": 1, "v": "c"}, testenv.Delete(map[string]any{"id": 2})})
	scan := e.cluster.Scan(t, e.db, "users", testenv.ScanOptions{})
	got := e.readAll(t, e.mapping(info), 0, 1<<20)
	var want []string
	for _, r := range scan {
		switch r.ChangeType {
		case "-U":
			continue
		case "-D":
			want = append(want, fmt.Sprintf(`%d {"id":%s} <nil>`, r.Offset, r.Row["id"]))
		default:
			want = append(want, fmt.Sprintf(`%d {"id":%s} {"id":%s,"v":%q}`, r.Offset, r.Row["id"], r.Row["id"], r.Row["v"]))
		}
	}
	var have []string
	for _, r := range got {
		v := "<nil>"
		if r.Value != nil {
			v = string(r.Value)
		}
		have = append(have, fmt.Sprintf("%d %s %s", r.Offset, r.Key, v))
	}
	if !slices.Equal(have, want) || len(want) != 4 {
		t.Fatalf("records\n%v\nwant (from the changelog scan)\n%v", have, want)
	}
}

// TestListOffsetsAndTimestamps: earliest, latest, and timestamps answered
// with the first batch committed at or after them.
func TestListOffsetsAndTimestamps(t *testing.T) {
	e := newRealEnv(t)
	info := e.cluster.NewTable(t, testenv.TableSpec{Database: e.db, Table: "t", BucketCount: 1,
		Columns: []testenv.Column{{Name: "id", Type: "INT"}}})
	e.cluster.Write(t, e.db, "t", []map[string]any{{"id": 1}, {"id": 2}})
	time.Sleep(20 * time.Millisecond) // two commit times
	e.cluster.Write(t, e.db, "t", []map[string]any{{"id": 3}})
	scan := e.cluster.Scan(t, e.db, "t", testenv.ScanOptions{})
	if len(scan) != 3 || scan[2].Timestamp <= scan[1].Timestamp {
		t.Fatalf("scan %+v: want 3 rows, the last committed later", scan)
	}
	m := e.mapping(info)
	ask := func(ts int64, p int32) *fetchv1.OffsetAnswer {
		resp, err := e.svc.ListOffsets(context.Background(), &fetchv1.ListOffsetsRequest{Mapping: m,
			Partitions: []*fetchv1.OffsetQuery{{Partition: p, Timestamp: ts}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetPartitions()[0]
	}
	for _, c := range []struct {
		name          string
		ts            int64
		offset, at    int64
		partition     int32
		kafkaErrorWas int16
	}{
		{"earliest", -2, 0, -1, 0, 0},
		{"latest", -1, 3, -1, 0, 0},
		{"before everything", 0, 0, scan[0].Timestamp, 0, 0},
		{"second batch", scan[2].Timestamp, 2, scan[2].Timestamp, 0, 0},
		{"after everything", scan[2].Timestamp + 60_000, -1, -1, 0, 0},
		{"no such partition", -1, -1, -1, 1, kerr.UnknownTopicOrPartition.Code},
		{"max timestamp (-3)", -3, -1, -1, 0, kerr.InvalidRequest.Code},
	} {
		a := ask(c.ts, c.partition)
		if a.GetOffset() != c.offset || a.GetTimestamp() != c.at || a.GetErrorCode() != int32(c.kafkaErrorWas) {
			t.Errorf("%s: offset %d timestamp %d error %d (%s); want %d %d %d", c.name, a.GetOffset(), a.GetTimestamp(),
				a.GetErrorCode(), a.GetErrorMessage(), c.offset, c.at, c.kafkaErrorWas)
		}
	}
}

// TestListOffsetsByTimestampManyBuckets: a timestamp query of several
// partitions at once (as kafka-consumer-groups --reset-offsets
// --to-datetime sends) answers every partition with its first batch's
// commit time, not only the first one's.
func TestListOffsetsByTimestampManyBuckets(t *testing.T) {
	e := newRealEnv(t)
	info := e.cluster.NewTable(t, testenv.TableSpec{Database: e.db, Table: "multi", BucketCount: 3,
		Columns: []testenv.Column{{Name: "id", Type: "INT"}}})
	// Fluss puts a writer's batch in one bucket: several writes spread.
	for i := range 9 {
		e.cluster.Write(t, e.db, "multi", []map[string]any{{"id": i}})
	}
	resp, err := e.svc.ListOffsets(context.Background(), &fetchv1.ListOffsetsRequest{Mapping: e.mapping(info),
		Partitions: []*fetchv1.OffsetQuery{{Partition: 0, Timestamp: 0}, {Partition: 1, Timestamp: 0}, {Partition: 2, Timestamp: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, a := range resp.GetPartitions() {
		if a.GetErrorCode() != 0 {
			t.Errorf("partition %d: error %d (%s)", a.GetPartition(), a.GetErrorCode(), a.GetErrorMessage())
		}
		if a.GetOffset() == 0 && a.GetTimestamp() > 0 {
			found++
		}
	}
	if found < 2 {
		t.Errorf("%d partitions answered with offset 0 and a commit time, want the 2 or 3 that got rows: %v", found, resp.GetPartitions())
	}
}

// TestReadWaitsForData: a read at the end of the log waits (max_wait_ms)
// and answers with a row written meanwhile; a read beyond the end is
// OFFSET_OUT_OF_RANGE; a dropped table's topic is UNKNOWN_TOPIC_OR_PARTITION.
func TestReadWaitsForData(t *testing.T) {
	e := newRealEnv(t)
	info := e.cluster.NewTable(t, testenv.TableSpec{Database: e.db, Table: "tail", BucketCount: 1,
		Columns: []testenv.Column{{Name: "id", Type: "INT"}}})
	m := e.mapping(info)
	read := func(offset int64, waitMs int32) *fetchv1.PartitionRecords {
		resp, err := e.svc.Read(context.Background(), &fetchv1.ReadRequest{MaxBytes: 1 << 20, MinBytes: 1, MaxWaitMs: waitMs,
			Topics: []*fetchv1.ReadTopic{{Mapping: m, Partitions: []*fetchv1.ReadPartition{{FetchOffset: offset, MaxBytes: 1 << 20}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetTopics()[0].GetPartitions()[0]
	}
	if pr := read(5, 0); pr.GetErrorCode() != int32(kerr.OffsetOutOfRange.Code) {
		t.Fatalf("read beyond the end: error %d (%s)", pr.GetErrorCode(), pr.GetErrorMessage())
	}
	done := make(chan *fetchv1.PartitionRecords, 1)
	start := time.Now()
	go func() { done <- read(0, 20_000) }()
	time.Sleep(500 * time.Millisecond)
	written := time.Now()
	e.cluster.Write(t, e.db, "tail", []map[string]any{{"id": 42}})
	pr := <-done
	t.Logf("read returned %v after it started, %v after the write began", time.Since(start), time.Since(written))
	recs, _ := decodeBatches(t, pr.GetRecords(), 0)
	if pr.GetErrorCode() != 0 || len(recs) != 1 || string(recs[0].Value) != `{"id":42}` || pr.GetHighWatermark() != 1 {
		t.Fatalf("waiting read: error %d, records %+v, high watermark %d", pr.GetErrorCode(), recs, pr.GetHighWatermark())
	}

	// A table the service has read, then dropped: its topic is unknown.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gone, err := e.cluster.Helper.CreateTable(ctx, testenv.TableSpec{Database: e.db, Table: "gone", BucketCount: 1,
		Columns: []testenv.Column{{Name: "id", Type: "INT"}}})
	if err != nil {
		t.Fatal(err)
	}
	m = e.mapping(gone)
	if pr := read(0, 0); pr.GetErrorCode() != 0 {
		t.Fatalf("read of a new table: error %d (%s)", pr.GetErrorCode(), pr.GetErrorMessage())
	}
	if err := e.cluster.Helper.DropTable(ctx, e.db, "gone"); err != nil {
		t.Fatal(err)
	}
	// Fluss may serve the dropped table's replica for a moment.
	for pr := read(0, 0); pr.GetErrorCode() != int32(kerr.UnknownTopicOrPartition.Code); pr = read(0, 0) {
		if ctx.Err() != nil {
			t.Fatalf("read of a dropped table: error %d (%s)", pr.GetErrorCode(), pr.GetErrorMessage())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
