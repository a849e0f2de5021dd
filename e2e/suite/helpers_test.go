package suite

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/services/testenv"
)

// topicTable creates a table (in a database of the test's own) that opts in as a Kafka topic
// and returns its topic name, database.table.
func topicTable(t *testing.T, f *testenv.Cluster, db, table string, buckets int, cols []testenv.Column, props map[string]string) string {
	t.Helper()
	return topicTableAt(t, f, env.kafka, db, table, buckets, cols, props)
}

// topicTableAt is topicTable for the frontdoor at addr.
func topicTableAt(t *testing.T, f *testenv.Cluster, addr, db, table string, buckets int, cols []testenv.Column, props map[string]string) string {
	t.Helper()
	custom := map[string]string{"kafka.enabled": "true"}
	for k, v := range props {
		custom[k] = v
	}
	info := f.NewTable(t, testenv.TableSpec{Database: db, Table: table, Columns: cols, BucketCount: buckets, CustomProperties: custom})
	if int(info.BucketCount) != buckets {
		t.Fatalf("table %s.%s has %d buckets, want %d", db, table, info.BucketCount, buckets)
	}
	topic := db + "." + table
	waitTopicAt(t, addr, topic, buckets)
	return topic
}

// waitTopic waits until frontdoor's Metadata shows topic with its partitions. catalogsvc finds a
// new table at its first lookup, but on-demand refreshes are at most one per refresh-min-gap
// (1s), so a lookup right after another test's refresh can still miss it; some clients
// (kafka-go) fail a produce at once on UNKNOWN_TOPIC_OR_PARTITION instead of retrying.
func waitTopic(t *testing.T, topic string, partitions int) {
	t.Helper()
	waitTopicAt(t, env.kafka, topic, partitions)
}

// waitTopicAt is waitTopic against the frontdoor at addr, connecting with opts (e.g. SASL).
func waitTopicAt(t *testing.T, addr, topic string, partitions int, opts ...kgo.Opt) {
	t.Helper()
	// franz-go answers Metadata requests from its cache for MetadataMinAge (default 5s).
	adm := kadm.NewClient(newKgo(t, addr, append(opts, kgo.MetadataMinAge(50*time.Millisecond))...))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last string
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			td := md.Topics[topic]
			if td.Err == nil && len(td.Partitions) == partitions {
				return
			}
			last = fmt.Sprintf("err %v, %d partitions", td.Err, len(td.Partitions))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s not in frontdoor's metadata with %d partitions after 30s: %s", topic, partitions, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// newKgo is a franz-go client for the suite's frontdoor. Idempotence is off unless opts turn it
// back on.
func newKgo(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// No RecordDeliveryTimeout: franz-go measures it from each record's own timestamp, and the
		// tests send fixed timestamps in the past. Contexts bound every produce instead.
		kgo.ClientID("ferry-e2e"),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// sent is one record a client had acknowledged, with where Ferry said it went.
type sent struct {
	Partition int32
	Offset    int64
	Key       []byte // nil: null key
	Value     []byte // nil: null value
	Timestamp time.Time
	Headers   []header
}

type header struct {
	Key   string
	Value []byte // nil: null value
}

// rowExpectation maps a sent record to the row it must have become, in flusshelper's JSON form
// (numbers as json.Number).
type rowExpectation func(sent) map[string]any

// verifyRows reads the whole table back with the Java client and checks that it holds exactly the
// records in acked: each at the bucket and offset its acknowledgement named, each row equal to
// what want says, nothing else; and that each bucket's offsets are 0..n-1 (nothing lost or
// duplicated before or between them).
func verifyRows(t *testing.T, f *testenv.Cluster, db, table string, acked []sent, want rowExpectation) {
	t.Helper()
	rows := f.Scan(t, db, table, testenv.ScanOptions{Expect: len(acked), Timeout: 60 * time.Second})
	type pos struct {
		bucket int32
		offset int64
	}
	got := map[pos]testenv.ScanRow{}
	for _, r := range rows {
		p := pos{r.Bucket, r.Offset}
		if _, dup := got[p]; dup {
			t.Errorf("scan returned bucket %d offset %d twice", r.Bucket, r.Offset)
		}
		got[p] = r
	}
	perBucket := map[int32][]int64{}
	mismatches := 0
	for i, s := range acked {
		perBucket[s.Partition] = append(perBucket[s.Partition], s.Offset)
		r, ok := got[pos{s.Partition, s.Offset}]
		if !ok {
			t.Errorf("record %d acknowledged at partition %d offset %d: no row there", i, s.Partition, s.Offset)
			continue
		}
		delete(got, pos{s.Partition, s.Offset})
		if r.ChangeType != "+A" {
			t.Errorf("record %d: change type %q, want an append", i, r.ChangeType)
		}
		wantJSON, gotJSON := canonicalRow(t, want(s)), canonicalRow(t, r.Row)
		if wantJSON != gotJSON {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("record %d (partition %d offset %d):\n got row %s\nwant row %s", i, s.Partition, s.Offset, gotJSON, wantJSON)
			}
		}
	}
	if mismatches > 5 {
		t.Errorf("... %d rows differ in all", mismatches)
	}
	for p, r := range got {
		t.Errorf("row at bucket %d offset %d was never acknowledged: %v", p.bucket, p.offset, r.Row)
	}
	for b, offs := range perBucket {
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for i, o := range offs {
			if o != int64(i) {
				t.Errorf("partition %d: acknowledged offsets %v, want 0..%d", b, offs, len(offs)-1)
				break
			}
		}
	}
}

// mapColumns hold MAP values ([key, value] pairs): a map's entries have no order to compare.
var mapColumns = []string{"hdrs"}

// sortPairs sorts the [key, value] pairs of row[col] by key (then value) in place.
func sortPairs(row map[string]any, col string) {
	pairs, ok := row[col].([]any)
	if !ok {
		return
	}
	key := func(p any) string { return fmt.Sprint(p) }
	sort.SliceStable(pairs, func(i, j int) bool { return key(pairs[i]) < key(pairs[j]) })
}

// expectStoredRows reads table with the Fluss Java reader and checks it holds n rows, the row at
// offset i equal to want[i]; mapCols are MAP columns, compared in key order.
func expectStoredRows(t *testing.T, f *testenv.Cluster, db, table string, n int, want []map[string]any, mapCols ...string) {
	t.Helper()
	scanned := f.Scan(t, db, table, testenv.ScanOptions{Expect: n, Timeout: 60 * time.Second})
	if len(scanned) != n {
		t.Fatalf("Fluss holds %d rows, want %d", len(scanned), n)
	}
	for i, r := range scanned {
		for _, c := range mapCols {
			sortPairs(r.Row, c)
		}
		if g, w := canonical(t, r.Row), canonical(t, want[r.Offset]); g != w {
			t.Errorf("row %d (offset %d):\n got %s\nwant %s", i, r.Offset, g, w)
		}
	}
}

// canonical renders v as JSON with sorted keys, so rows compare independent of map order and
// json.Number spelling survives.
func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	return string(b)
}

func num(n int64) json.Number { return json.Number(fmt.Sprint(n)) }

func b64(b []byte) any {
	if b == nil {
		return nil
	}
	return base64.StdEncoding.EncodeToString(b)
}

func strOrNil(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// ltz renders a millisecond instant the way flusshelper prints TIMESTAMP_LTZ.
func ltz(ts time.Time) string {
	return ts.UTC().Format("2006-01-02T15:04:05.000000000") + "Z"
}

// ntz renders a millisecond instant as flusshelper prints TIMESTAMP (its UTC wall clock).
func ntz(ts time.Time) string {
	return ts.UTC().Format("2006-01-02T15:04:05.000000000")
}

// headerMap is the MAP<STRING, BYTES> form of headers: [key, base64] pairs, the last value of a
// repeated key winning, in first-appearance order of the keys.
func headerMap(hs []header) []any {
	var order []string
	last := map[string][]byte{}
	for _, h := range hs {
		if _, seen := last[h.Key]; !seen {
			order = append(order, h.Key)
		}
		last[h.Key] = h.Value
	}
	out := []any{}
	for _, k := range order {
		out = append(out, []any{k, b64(last[k])})
	}
	return out
}

// kgoProduce produces recs in chunks with ProduceSync and returns what was acknowledged, in
// order. Any failed record fails the test.
func kgoProduce(t *testing.T, cl *kgo.Client, recs []*kgo.Record, chunk int) []sent {
	t.Helper()
	out, err := kgoProduceErr(cl, recs, chunk)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kgoProduceErr is kgoProduce returning the first failure (for goroutines other than the test's).
func kgoProduceErr(cl *kgo.Client, recs []*kgo.Record, chunk int) ([]sent, error) {
	var out []sent
	for start := 0; start < len(recs); start += chunk {
		end := min(start+chunk, len(recs))
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		res := cl.ProduceSync(ctx, recs[start:end]...)
		cancel()
		if err := res.FirstErr(); err != nil {
			return out, fmt.Errorf("franz-go produce of records %d..%d: %w", start, end-1, err)
		}
		for _, r := range res {
			out = append(out, fromKgo(r.Record))
		}
	}
	return out, nil
}

func fromKgo(r *kgo.Record) sent {
	s := sent{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	for _, h := range r.Headers {
		s.Headers = append(s.Headers, header{Key: h.Key, Value: h.Value})
	}
	return s
}

func toKgoHeaders(hs []header) []kgo.RecordHeader {
	var out []kgo.RecordHeader
	for _, h := range hs {
		out = append(out, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return out
}

// dbName is a fresh database for one test.
func dbName(t *testing.T, f *testenv.Cluster, what string) string {
	t.Helper()
	return f.NewDatabase(t, "e2e_"+strings.ReplaceAll(what, "-", "_"))
}

// requireInitProducerID fails the test unless frontdoor's ApiVersions lists InitProducerId,
// which idempotent producers need: the stacks of this suite never run frontdoor with
// -disable-idempotence, so a missing InitProducerId is a regression, not a reason to skip.
func requireInitProducerID(t *testing.T, kafka string) {
	t.Helper()
	cl := newKgo(t, kafka)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == kmsg.InitProducerID.Int16() {
			return
		}
	}
	t.Fatalf("frontdoor at %s does not list InitProducerId in ApiVersions: idempotent producers cannot work", kafka)
}
