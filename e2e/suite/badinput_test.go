package suite

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestBadRecordRejectsItsBatchOnly: one Produce request carries a batch for partition 0 with a
// record that does not fit the schema, a good batch for partition 1 and one for partition 2,
// which the two-bucket table does not have. Partition 0 must be answered INVALID_RECORD naming
// the record's index, with none of its batch in Fluss; partition 1 must succeed and be
// readable; partition 2 gets UNKNOWN_TOPIC_OR_PARTITION.
func TestBadRecordRejectsItsBatchOnly(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "bad_input")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "name", Type: "STRING"}}
	topic := topicTable(t, f, db, "strict", 2, cols, nil)

	now := time.Now()
	bad := encodeBatch(now, [][]byte{
		[]byte(`{"id": 1, "name": "fine"}`),
		[]byte(`{"id": "not a number", "name": "bad"}`),
		[]byte(`{"id": 3, "name": "fine too"}`),
	})
	good := encodeBatch(now, [][]byte{[]byte(`{"id": 10, "name": "p1-a"}`), []byte(`{"id": 11, "name": "p1-b"}`)})

	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	// Partition 2 does not exist: the table has two buckets.
	for p, batch := range [][]byte{bad, good, good} {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)

	cl := newKgo(t, e.kafka)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Metadata first: the catalog learns the new table, and the client learns the broker.
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata for %s: %v %+v", topic, err, mresp)
	}
	kresp, err := cl.Broker(int(e.nodeID)).Request(ctx, req)
	if err != nil {
		t.Fatalf("produce request: %v", err)
	}
	resp := kresp.(*kmsg.ProduceResponse)
	if resp.Version < 8 {
		t.Fatalf("produce answered at v%d; record errors need v8+", resp.Version)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
		t.Fatalf("response = %+v, want one topic with three partitions", resp)
	}
	byPartition := map[int32]kmsg.ProduceResponseTopicPartition{}
	for _, p := range resp.Topics[0].Partitions {
		byPartition[p.Partition] = p
	}

	p0 := byPartition[0]
	if err := kerr.ErrorForCode(p0.ErrorCode); err != kerr.InvalidRecord {
		t.Errorf("partition 0: error %v, want INVALID_RECORD", err)
	}
	if len(p0.ErrorRecords) != 1 || p0.ErrorRecords[0].RelativeOffset != 1 {
		t.Errorf("partition 0: record errors %+v, want exactly record 1", p0.ErrorRecords)
	} else if msg := p0.ErrorRecords[0].ErrorMessage; msg == nil || !strings.Contains(*msg, "id") {
		t.Errorf("partition 0: record error message %v does not name field id", msg)
	}
	if p0.ErrorMessage == nil || *p0.ErrorMessage == "" {
		t.Errorf("partition 0: no error message")
	} else {
		t.Logf("partition 0: %s; record 1: %s", *p0.ErrorMessage, deref(p0.ErrorRecords[0].ErrorMessage))
	}

	p1 := byPartition[1]
	if p1.ErrorCode != 0 || p1.BaseOffset != 0 {
		t.Fatalf("partition 1: error %v, base offset %d; want success at offset 0", kerr.ErrorForCode(p1.ErrorCode), p1.BaseOffset)
	}

	if err := kerr.ErrorForCode(byPartition[2].ErrorCode); err != kerr.UnknownTopicOrPartition {
		t.Errorf("partition 2 (beyond the buckets): error %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}

	// Only partition 1's two records are in the table: bucket 0 holds nothing.
	rows := f.Scan(t, db, "strict", testenv.ScanOptions{Timeout: 30 * time.Second})
	if len(rows) != 2 {
		t.Fatalf("table holds %d rows, want partition 1's 2: %+v", len(rows), rows)
	}
	for i, r := range rows {
		if r.Bucket != 1 || r.Offset != int64(i) || canonical(t, r.Row["id"]) != canonical(t, num(int64(10+i))) {
			t.Errorf("row %d = bucket %d offset %d %v, want bucket 1 offset %d id %d", i, r.Bucket, r.Offset, r.Row, i, 10+i)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// encodeBatch builds an uncompressed Kafka record batch (magic 2) without a producer id
// holding values (keys and headers empty), all stamped ts.
func encodeBatch(ts time.Time, values [][]byte) []byte {
	return encodeKeyedBatch(ts, make([][]byte, len(values)), values)
}

// encodeKeyedBatch is encodeBatch with a key per value; a nil key or value is null.
func encodeKeyedBatch(ts time.Time, keys, values [][]byte) []byte {
	appendBytes := func(r, b []byte) []byte {
		if b == nil {
			return binary.AppendVarint(r, -1)
		}
		return append(binary.AppendVarint(r, int64(len(b))), b...)
	}
	var records []byte
	for i, v := range values {
		var r []byte
		r = append(r, 0)                     // attributes
		r = binary.AppendVarint(r, 0)        // timestamp delta
		r = binary.AppendVarint(r, int64(i)) // offset delta
		r = appendBytes(r, keys[i])
		r = appendBytes(r, v)
		r = binary.AppendVarint(r, 0) // no headers
		records = binary.AppendVarint(records, int64(len(r)))
		records = append(records, r...)
	}
	ms := ts.UnixMilli()
	// The part the CRC covers: attributes to the end.
	var tail []byte
	tail = binary.BigEndian.AppendUint16(tail, 0)                     // attributes: no codec, create time
	tail = binary.BigEndian.AppendUint32(tail, uint32(len(values)-1)) // last offset delta
	tail = binary.BigEndian.AppendUint64(tail, uint64(ms))            // first timestamp
	tail = binary.BigEndian.AppendUint64(tail, uint64(ms))            // max timestamp
	tail = binary.BigEndian.AppendUint64(tail, ^uint64(0))            // producer id -1
	tail = binary.BigEndian.AppendUint16(tail, ^uint16(0))            // producer epoch -1
	tail = binary.BigEndian.AppendUint32(tail, ^uint32(0))            // base sequence -1
	tail = binary.BigEndian.AppendUint32(tail, uint32(len(values)))
	tail = append(tail, records...)

	var b []byte
	b = binary.BigEndian.AppendUint64(b, 0) // base offset
	// Batch length counts everything after itself: leader epoch, magic, crc, tail.
	b = binary.BigEndian.AppendUint32(b, uint32(4+1+4+len(tail)))
	b = binary.BigEndian.AppendUint32(b, 0) // partition leader epoch
	b = append(b, 2)                        // magic
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(tail, crc32.MakeTable(crc32.Castagnoli)))
	return append(b, tail...)
}
