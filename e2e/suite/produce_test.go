package suite

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/services/testenv"
)

// jsonColumns is the JSON table of the produce tests: value columns of several types plus the
// key, timestamp and headers columns.
var jsonColumns = []testenv.Column{
	{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
	{Name: "name", Type: "STRING"},
	{Name: "amount", Type: "DECIMAL(10, 2)"},
	{Name: "tags", Type: "ARRAY<STRING>"},
	{Name: "k", Type: "STRING"},
	{Name: "ts", Type: "TIMESTAMP_LTZ(3)"},
	{Name: "hdrs", Type: "MAP<STRING, BYTES>"},
}

var jsonProps = map[string]string{
	"kafka.key.column":       "k",
	"kafka.timestamp.column": "ts",
	"kafka.headers.column":   "hdrs",
}

const jsonBuckets = 3

// jsonRecord is record i of a produce run: spread over every partition, some without a key, one
// header repeated on some (the map keeps the last value).
func jsonRecord(tag string, i int) sent {
	s := sent{
		Partition: int32(i % jsonBuckets),
		Value:     fmt.Appendf(nil, `{"id": %d, "name": "%s-%d ✓", "amount": "%d.%02d", "tags": ["t%d", "x"]}`, i, tag, i, i*3, i%100, i%7),
		Timestamp: time.UnixMilli(1_767_225_600_000 + int64(i)*1001),
		Headers:   []header{{Key: "run", Value: []byte(tag)}, {Key: "seq", Value: []byte{byte(i), byte(i >> 8)}}},
	}
	if i%5 != 0 {
		s.Key = fmt.Appendf(nil, "key-%d", i)
	}
	if i%4 == 0 {
		s.Headers = append(s.Headers, header{Key: "run", Value: []byte("again")})
	}
	return s
}

// jsonRow is the row record i must become; the index travels in the id column.
func jsonRow(n int) rowExpectation {
	return func(s sent) map[string]any {
		var id int
		if _, err := fmt.Sscanf(string(s.Value), `{"id": %d,`, &id); err != nil || id < 0 || id >= n {
			return map[string]any{"unparseable value": string(s.Value)}
		}
		var tag string
		for _, h := range s.Headers {
			if h.Key == "run" {
				tag = string(h.Value)
				break
			}
		}
		return map[string]any{
			"id":     num(int64(id)),
			"name":   fmt.Sprintf("%s-%d ✓", tag, id),
			"amount": fmt.Sprintf("%d.%02d", id*3, id%100),
			"tags":   []any{fmt.Sprintf("t%d", id%7), "x"},
			"k":      strOrNil(s.Key),
			"ts":     ltz(s.Timestamp),
			"hdrs":   headerMap(s.Headers),
		}
	}
}

const produceN = 240

// TestProduceJSON produces JSON records with real Go clients over several partitions (acks=all,
// several batches per partition) and reads the table back with the Java Fluss client: every row
// must be where its acknowledgement said, with every column as sent.
func TestProduceJSON(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "produce_json")

	clients := []struct {
		name    string
		produce func(t *testing.T, topic string, recs []sent) []sent
	}{
		{"franz-go", func(t *testing.T, topic string, recs []sent) []sent {
			cl := newKgo(t, e.kafka, kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
			return kgoProduce(t, cl, toKgo(topic, recs), 60)
		}},
		{"franz-go-idempotent-default", func(t *testing.T, topic string, recs []sent) []sent {
			// franz-go's default: idempotent, as frontdoor serves InitProducerId (else it would
			// quietly fall back to plain produce).
			requireInitProducerID(t, e.kafka)
			cl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			return kgoProduce(t, cl, toKgo(topic, recs), 80)
		}},
		{"sarama", func(t *testing.T, topic string, recs []sent) []sent {
			return saramaProduce(t, e.kafka, topic, recs, 60)
		}},
	}
	// Every codec a producer may compress with reaches Fluss as the same rows.
	for _, codec := range []struct {
		name string
		c    kgo.CompressionCodec
	}{
		{"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()},
	} {
		clients = append(clients, struct {
			name    string
			produce func(t *testing.T, topic string, recs []sent) []sent
		}{"franz-go-" + codec.name, func(t *testing.T, topic string, recs []sent) []sent {
			cl := newKgo(t, e.kafka, kgo.ProducerBatchCompression(codec.c), kgo.ProducerLinger(5*time.Millisecond))
			return kgoProduce(t, cl, toKgo(topic, recs), 120)
		}})
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			table := "j_" + sanitize(c.name)
			topic := topicTable(t, f, db, table, jsonBuckets, jsonColumns, jsonProps)
			recs := make([]sent, produceN)
			for i := range recs {
				recs[i] = jsonRecord(c.name, i)
			}
			start := time.Now()
			acked := c.produce(t, topic, recs)
			t.Logf("%s: %d records acknowledged in %v", c.name, len(acked), time.Since(start).Round(time.Millisecond))
			verifyRows(t, f, db, table, acked, jsonRow(produceN))
		})
	}
}

func toKgo(topic string, recs []sent) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	for i, s := range recs {
		out[i] = &kgo.Record{Topic: topic, Partition: s.Partition, Key: s.Key, Value: s.Value, Timestamp: s.Timestamp, Headers: toKgoHeaders(s.Headers)}
	}
	return out
}

// saramaProduce sends recs with sarama's SyncProducer (acks=all, manual partitions) in chunks.
func saramaProduce(t *testing.T, addr, topic string, recs []sent, chunk int) []sent {
	t.Helper()
	out, err := saramaProduceErr(addr, topic, recs, chunk)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// saramaProduceErr is saramaProduce returning the failure (for goroutines other than the test's).
func saramaProduceErr(addr, topic string, recs []sent, chunk int) ([]sent, error) {
	cfg := sarama.NewConfig()
	cfg.ClientID = "ferry-e2e-sarama"
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max = 10
	cfg.Producer.Retry.Backoff = 200 * time.Millisecond
	cfg.Metadata.Retry.Max = 20
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		return nil, fmt.Errorf("sarama producer: %w", err)
	}
	defer p.Close()
	var out []sent
	for start := 0; start < len(recs); start += chunk {
		var msgs []*sarama.ProducerMessage
		for _, s := range recs[start:min(start+chunk, len(recs))] {
			m := &sarama.ProducerMessage{Topic: topic, Partition: s.Partition, Timestamp: s.Timestamp}
			if s.Key != nil {
				m.Key = sarama.ByteEncoder(s.Key)
			}
			if s.Value != nil {
				m.Value = sarama.ByteEncoder(s.Value)
			}
			for _, h := range s.Headers {
				m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
			}
			msgs = append(msgs, m)
		}
		if err := p.SendMessages(msgs); err != nil {
			return out, fmt.Errorf("sarama produce of records from %d: %w", start, err)
		}
		for i, m := range msgs {
			s := recs[start+i]
			if m.Partition != s.Partition {
				return out, fmt.Errorf("sarama sent record %d to partition %d, want %d", start+i, m.Partition, s.Partition)
			}
			s.Offset = m.Offset
			out = append(out, s)
		}
	}
	return out, nil
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}
