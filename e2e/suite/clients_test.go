package suite

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestProduceRealClients sends JSON records through Ferry with every real client of e2e/clients
// (Java kafka-clients, kcat, kafkajs, confluent-kafka-python, franz-go, sarama, kafka-go,
// kafka-python), keyed
// so each client's own partitioner spreads them over the partitions: acks=all with the client's
// default codec, with each codec it can send, acks=1, acks=0 and idempotent; it compares every
// row and every acknowledged offset with what Fluss holds (acks=0: see findByID).
// FERRY_TEST_CLIENTS=java,kcat limits the clients; a client that is not installed is skipped,
// unless FERRY_TEST_REQUIRE_CLIENTS=1.
func TestProduceRealClients(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "clients")
	for _, c := range selectedClients(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Run("plain", func(t *testing.T) {
				produceWithClient(t, f, db, c, clientRun{kafka: e.kafka, records: 45, table: "c_" + sanitize(c.Name)})
			})
			// Every codec the client can send (acks=all), then acks=1 and acks=0. A codec the
			// client lacks (its documented limit) is no test at all rather than a skip.
			for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
				if ok, why := c.Supports(codec); !ok {
					t.Logf("%s cannot produce %s: %s", c.Name, codec, why)
					continue
				}
				t.Run(codec, func(t *testing.T) {
					produceWithClient(t, f, db, c, clientRun{kafka: e.kafka, records: 12, compression: codec, table: "c_" + sanitize(c.Name) + "_" + codec})
				})
			}
			t.Run("acks1", func(t *testing.T) {
				produceWithClient(t, f, db, c, clientRun{kafka: e.kafka, records: 12, acks: "1", table: "c_" + sanitize(c.Name) + "_acks1"})
			})
			t.Run("acks0", func(t *testing.T) {
				produceWithClient(t, f, db, c, clientRun{kafka: e.kafka, records: 12, acks: "0", table: "c_" + sanitize(c.Name) + "_acks0"})
			})
			if !c.NoIdempotence {
				t.Run("idempotent", func(t *testing.T) {
					requireInitProducerID(t, e.kafka)
					produceWithClient(t, f, db, c, clientRun{kafka: e.kafka, records: 45, idempotent: true, table: "c_" + sanitize(c.Name) + "_idem"})
				})
			}
		})
	}
}

func selectedClients(t *testing.T) []clients.Client {
	t.Helper()
	all := clients.All()
	only := strings.TrimSpace(os.Getenv("FERRY_TEST_CLIENTS"))
	if only == "" {
		return all
	}
	var out []clients.Client
	for _, name := range strings.Split(only, ",") {
		c, err := clients.ByName(strings.TrimSpace(name))
		if err != nil {
			t.Fatalf("FERRY_TEST_CLIENTS: %v", err)
		}
		out = append(out, c)
	}
	return out
}

// clientRun is one produce run of a real client.
type clientRun struct {
	kafka              string // bootstrap address
	records            int
	compression        string // "" leaves the client's default
	acks               string // "" means all
	idempotent         bool
	saslUser, saslPass string
	saslMechanism      string // "" is PLAIN
	saslTokenFile      string // OAUTHBEARER's JWT
	// tls: PEM files for a TLS listener (CA) and the client's certificate (mTLS).
	tlsCA, tlsCert, tlsKey string
	table                  string // created in the test's database
}

// produceWithClient creates run.table, produces run.records keyed JSON records with client c and
// checks every row and offset.
func produceWithClient(t *testing.T, f *testenv.Cluster, db string, c clients.Client, run clientRun) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.Available(ctx); err != nil {
		if os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") == "1" {
			t.Fatalf("%v", err)
		}
		t.Skipf("%v (run tools/install-clients.sh)", err)
	}
	n := run.records
	cols := []testenv.Column{
		{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
		{Name: "name", Type: "STRING"},
		{Name: "k", Type: "STRING"},
		{Name: "hdrs", Type: "MAP<STRING, STRING>"},
	}
	props := map[string]string{"kafka.key.column": "k", "kafka.headers.column": "hdrs"}
	if !c.NoTimestamps {
		cols = append(cols, testenv.Column{Name: "ts", Type: "TIMESTAMP_LTZ(3)"})
		props["kafka.timestamp.column"] = "ts"
	}
	table := run.table
	topic := topicTable(t, f, db, table, 3, cols, props)
	if run.kafka != env.kafka {
		// Another frontdoor (with its own catalogsvc) must have found the table too.
		var opts []kgo.Opt
		if run.saslUser != "" {
			opts = append(opts, kgoSASL(run.saslMechanism, run.saslUser, run.saslPass))
		}
		if run.saslTokenFile != "" {
			opts = append(opts, kgoToken(t, run.saslTokenFile))
		}
		if run.tlsCA != "" {
			opts = append(opts, kgo.DialTLSConfig(clientTLS(t, run.tlsCA, run.tlsCert, run.tlsKey)))
		}
		waitTopicAt(t, run.kafka, topic, 3, opts...)
	}

	recs := make([]clients.Record, n)
	for i := range recs {
		key := fmt.Sprintf("key-%d", i)
		recs[i] = clients.Record{
			Key:     &key,
			Value:   fmt.Sprintf(`{"id": %d, "name": "%s #%d ✓"}`, i, c.Name, i),
			Headers: clients.Headers{{Key: "client", Value: c.Name}, {Key: "seq", Value: fmt.Sprint(i)}},
		}
		if !c.NoTimestamps {
			ms := int64(1_767_225_600_000 + i*1000)
			recs[i].TimestampMs = &ms
		}
	}
	acks := run.acks
	if acks == "" {
		acks = "all"
	}
	opts := clients.Options{Bootstrap: run.kafka, Topic: topic, Acks: acks, Compression: run.compression, Idempotent: &run.idempotent,
		SASLUser: run.saslUser, SASLPassword: run.saslPass, SASLMechanism: run.saslMechanism, SASLTokenFile: run.saslTokenFile, TLSCA: run.tlsCA, TLSCert: run.tlsCert, TLSKey: run.tlsKey,
		Timeout: 90 * time.Second}
	res, err := c.Produce(ctx, opts, recs)
	if err != nil {
		t.Fatalf("%s: %v\nstderr: %s", c.Name, err, tailString(res.Stderr, 2000))
	}
	if err := res.Err(); err != nil {
		t.Fatalf("%s: records not acknowledged: %v\nstderr: %s", c.Name, err, tailString(res.Stderr, 2000))
	}
	t.Logf("%s: %d records acknowledged in %v", c.Name, n, res.Elapsed.Round(time.Millisecond))

	var positions []sent // where each record is: as acknowledged, or for acks=0 as found
	if acks == "0" {
		positions = findByID(t, f, db, table, n, !c.ConnectionPerRecord)
	} else {
		for _, d := range res.Deliveries {
			positions = append(positions, sent{Partition: *d.Partition, Offset: *d.Offset})
		}
	}
	acked := make([]sent, n)
	partitions := map[int32]bool{}
	for i, pos := range positions {
		s := sent{Partition: pos.Partition, Offset: pos.Offset, Key: []byte(*recs[i].Key), Value: []byte(recs[i].Value)}
		for _, h := range recs[i].Headers {
			s.Headers = append(s.Headers, header{Key: h.Key, Value: []byte(h.Value)})
		}
		if recs[i].TimestampMs != nil {
			s.Timestamp = time.UnixMilli(*recs[i].TimestampMs)
		}
		acked[i] = s
		partitions[s.Partition] = true
	}
	if len(partitions) < 2 && n >= 10 {
		t.Errorf("%s put all %d keyed records into partitions %v; the test wants several", c.Name, n, partitions)
	}
	verifyRows(t, f, db, table, acked, func(s sent) map[string]any {
		var id int
		fmt.Sscanf(string(s.Value), `{"id": %d,`, &id)
		hdrs := []any{}
		for _, h := range s.Headers {
			hdrs = append(hdrs, []any{h.Key, string(h.Value)})
		}
		row := map[string]any{"id": num(int64(id)), "name": fmt.Sprintf("%s #%d ✓", c.Name, id), "k": string(s.Key), "hdrs": hdrs}
		if !c.NoTimestamps {
			row["ts"] = ltz(s.Timestamp)
		}
		return row
	})
}

// findByID waits for n rows in the table and returns where the row with id i is, for every i.
// An acks=0 producer gets no offsets back, so the records are found by content instead: each
// must be there exactly once (frontdoor finishes every request it read, also when the producer
// disconnects right after writing it), and, when ordered (one connection), in the order it was
// sent within its partition.
func findByID(t *testing.T, f *testenv.Cluster, db, table string, n int, ordered bool) []sent {
	t.Helper()
	rows := f.Scan(t, db, table, testenv.ScanOptions{Expect: n, Timeout: 60 * time.Second})
	out := make([]sent, n)
	found := make([]bool, n)
	for _, r := range rows {
		id := idOf(r)
		if id < 0 || id >= int64(n) || found[id] {
			t.Fatalf("row %v at bucket %d offset %d: id out of range or repeated", r.Row, r.Bucket, r.Offset)
		}
		found[id] = true
		out[id] = sent{Partition: r.Bucket, Offset: r.Offset}
	}
	last := map[int32]int{}
	for i, ok := range found {
		if !ok {
			t.Fatalf("record %d never reached Fluss (%d of %d rows there)", i, len(rows), n)
		}
		if prev, seen := last[out[i].Partition]; ordered && seen && out[i].Offset < out[prev].Offset {
			t.Errorf("partition %d: record %d at offset %d is before record %d at offset %d (send order lost)",
				out[i].Partition, i, out[i].Offset, prev, out[prev].Offset)
		}
		last[out[i].Partition] = i
	}
	return out
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
