package clients

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The matrix test produces with every client through the real Apache Kafka broker (KRaft) launched
// from Maven jars and reads everything back with franz-go to check what each client got
// acknowledged: partitions, offsets in send order, keys, values, headers, timestamps, the codec the
// batches were stored with, and whether the producer was idempotent.
//
// Env:
//   FERRY_TEST_KAFKA_BOOTSTRAP   use this running broker instead of starting one (SASL cases skipped
//                                unless FERRY_TEST_KAFKA_SASL is also set to its SASL/PLAIN listener,
//                                user ferry / password ferry-secret)
//   FERRY_TEST_REQUIRE_CLIENTS=1 fail instead of skipping when the broker jars or a client are missing
//   FERRY_TEST_CLIENTS=a,b       only these clients

var (
	brokerOnce sync.Once
	broker     *Broker
	brokerErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if broker != nil && broker.Dir != "" && broker.script != "" {
		if err := broker.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		_ = os.RemoveAll(broker.Dir)
	}
	os.Exit(code)
}

func requireClients() bool { return os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") == "1" }

// testBroker returns the shared broker, starting it on first use.
func testBroker(t *testing.T) *Broker {
	t.Helper()
	// These tests check the harness against a real Kafka broker, not Ferry (the e2e suite runs the
	// same runners against Ferry), so that a runner's bug is not mistaken for Ferry's.
	brokerOnce.Do(func() {
		if bs := os.Getenv("FERRY_TEST_KAFKA_BOOTSTRAP"); bs != "" {
			broker = &Broker{Bootstrap: bs, SASL: os.Getenv("FERRY_TEST_KAFKA_SASL"), SASLUser: "ferry", SASLPass: "ferry-secret"}
			return
		}
		dir, err := os.MkdirTemp("", "ferry-kafka-broker-")
		if err != nil {
			brokerErr = err
			return
		}
		broker, brokerErr = StartBroker(context.Background(), dir, true)
		if brokerErr != nil {
			_ = os.RemoveAll(dir)
		}
	})
	if brokerErr != nil {
		if errors.Is(brokerErr, ErrBrokerNotInstalled) && !requireClients() {
			t.Skipf("skipping: %v; set FERRY_TEST_REQUIRE_CLIENTS=1 to make this fatal", brokerErr)
		}
		t.Fatalf("kafka broker: %v", brokerErr)
	}
	return broker
}

func selectedClients(t *testing.T) []Client {
	only := os.Getenv("FERRY_TEST_CLIENTS")
	var out []Client
	for _, c := range All() {
		if only != "" && !strings.Contains(","+only+",", ","+c.Name+",") {
			continue
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		t.Fatalf("FERRY_TEST_CLIENTS=%q selects no client", only)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// testRecords builds n records that differ in every field, so a mix-up shows. Keys alternate
// between a string, the empty string and null; timestamps are set unless the client cannot.
func testRecords(tag string, n int, withTimestamps bool) []Record {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	recs := make([]Record, n)
	for i := range recs {
		r := Record{Value: fmt.Sprintf(`{"case":%q,"i":%d,"text":"héllo \"%d\"","pad":"%s"}`, tag, i, i, strings.Repeat("x", 40+i))}
		switch i % 3 {
		case 0:
			r.Key = ptr(fmt.Sprintf("key-%d", i))
		case 1:
			r.Key = ptr("")
		}
		if i%2 == 0 {
			r.Headers = Headers{{Key: "h1", Value: fmt.Sprint(i)}, {Key: "trace", Value: tag}}
		}
		if withTimestamps {
			r.TimestampMs = ptr(base + int64(i)*1000)
		}
		recs[i] = r
	}
	return recs
}

type matrixCase struct {
	name        string
	acks        string // "" = client default
	compression string // "" = client default
	idempotent  *bool
	partition   *int32
	sasl        bool
	keyField    string
}

func matrix() []matrixCase {
	cs := []matrixCase{{name: "defaults"}}
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		cs = append(cs, matrixCase{name: "acks-all-" + codec, acks: "all", compression: codec, partition: ptr[int32](1)})
	}
	cs = append(cs,
		matrixCase{name: "acks-1", acks: "1", compression: "none"},
		matrixCase{name: "acks-0", acks: "0", compression: "none", partition: ptr[int32](2)},
		matrixCase{name: "idempotent", acks: "all", idempotent: ptr(true), partition: ptr[int32](0)},
		matrixCase{name: "not-idempotent", acks: "all", idempotent: ptr(false)},
		matrixCase{name: "sasl-plain", sasl: true, partition: ptr[int32](0)},
		matrixCase{name: "key-field", keyField: "i"},
	)
	return cs
}

func TestProduceMatrix(t *testing.T) {
	b := testBroker(t)
	ctx := t.Context()
	// Two clients at a time: a JVM or node start-up per case is the bulk of the cost on 2 cores.
	sem := make(chan struct{}, 2)
	for _, c := range selectedClients(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := c.Available(ctx); err != nil {
				if requireClients() {
					t.Fatal(err)
				}
				t.Skipf("skipping: %v; set FERRY_TEST_REQUIRE_CLIENTS=1 to make this fatal", err)
			}
			for _, mc := range matrix() {
				// A case the client or broker cannot do (a documented limit) is no test at all
				// rather than a skip.
				if why := notApplicable(b, c, mc); why != "" {
					t.Logf("%s: %s", mc.name, why)
					continue
				}
				t.Run(mc.name, func(t *testing.T) { runCase(t, b, c, mc) })
			}
		})
	}
}

// notApplicable says why client c cannot run case mc against broker b, or "" when it can.
func notApplicable(b *Broker, c Client, mc matrixCase) string {
	if ok, why := c.Supports(mc.compression); !ok {
		return fmt.Sprintf("%s cannot produce %s: %s", c.Name, mc.compression, why)
	}
	if mc.idempotent != nil && *mc.idempotent && c.NoIdempotence {
		return c.Name + " has no idempotent producer"
	}
	if mc.sasl && b.SASL == "" {
		return "the broker (FERRY_TEST_KAFKA_BOOTSTRAP without FERRY_TEST_KAFKA_SASL) has no SASL listener"
	}
	return ""
}

func runCase(t *testing.T, b *Broker, c Client, mc matrixCase) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	bootstrap := b.Bootstrap
	opts := Options{Acks: mc.acks, Compression: mc.compression, Idempotent: mc.idempotent, Partition: mc.partition,
		KeyField: mc.keyField, Timeout: 60 * time.Second}
	if mc.sasl {
		bootstrap, opts.SASLUser, opts.SASLPassword = b.SASL, b.SASLUser, b.SASLPass
	}
	topic := fmt.Sprintf("clients-%s-%s-%d", c.Name, mc.name, time.Now().UnixNano())
	if err := CreateTopic(ctx, b.Bootstrap, topic, 3); err != nil {
		t.Fatal(err)
	}
	opts.Bootstrap, opts.Topic = bootstrap, topic
	recs := testRecords(c.Name+"/"+mc.name, 5, !c.NoTimestamps)
	res, err := c.Produce(ctx, opts, recs)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, res.Stderr)
	}
	if err := res.Err(); err != nil {
		t.Fatalf("deliveries failed: %v\nstderr: %s", err, tail(res.Stderr, 2000))
	}
	acks := mc.acks
	if acks == "" {
		acks = c.DefaultAcks
	}
	// acks=0 is fire-and-forget: a client that closes its connection right after writing can lose
	// its last request (seen with kcat: the broker drops a request whose connection is gone). So for
	// acks=0 wait a bounded time for everything, then check whatever arrived and say what did not.
	wait := 2 * time.Minute
	if acks == "0" {
		wait = 10 * time.Second
	}
	wctx, wcancel := context.WithTimeout(ctx, wait)
	got, err := ConsumeAll(wctx, b.Bootstrap, topic, len(recs))
	wcancel()
	if acks == "0" && err != nil {
		got, err = ConsumeAll(ctx, b.Bootstrap, topic, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		if acks != "0" || len(got) > len(recs) {
			t.Fatalf("consumed %d records, produced %d", len(got), len(recs))
		}
		t.Logf("acks=0: only %d of %d records reached the broker", len(got), len(recs))
	}
	// Match consumed records to inputs by value (unique per record).
	byValue := map[string]Consumed{}
	for _, g := range got {
		byValue[g.Value] = g
	}
	lastOffset := map[int32]int64{}
	codecs := map[string]bool{}
	pids := map[bool]bool{}
	var reported []string
	for i, r := range recs {
		g, ok := byValue[r.Value]
		if !ok {
			if acks == "0" {
				continue // reported above
			}
			t.Fatalf("record %d not found on the broker", i)
		}
		d := res.Deliveries[i]
		// With acks=0 the broker sends no response, so what a client reports is its own guess
		// (-1, -1001, 0 …; see README): only logged.
		reported = append(reported, fmt.Sprintf("%d@%d", *d.Partition, *d.Offset))
		if acks != "0" && (*d.Partition != g.Partition || *d.Offset != g.Offset) {
			t.Errorf("record %d: client reported %d@%d, broker has it at %d@%d", i, *d.Partition, *d.Offset, g.Partition, g.Offset)
		}
		if mc.partition != nil && g.Partition != *mc.partition {
			t.Errorf("record %d: on partition %d, asked for %d", i, g.Partition, *mc.partition)
		}
		// Send order holds within a connection; with acks=0 a runner that connects per record
		// has nothing that orders its connections' requests.
		ordered := acks != "0" || !c.ConnectionPerRecord
		if last, seen := lastOffset[g.Partition]; ordered && seen && g.Offset <= last {
			t.Errorf("record %d: offset %d on partition %d is not after the previous record's %d (order lost)", i, g.Offset, g.Partition, last)
		}
		lastOffset[g.Partition] = g.Offset
		wantKey := r.Key
		if mc.keyField != "" {
			// testRecords' values carry "i": the record number, a JSON number, so the key is its text.
			wantKey = ptr(fmt.Sprint(i))
		}
		if (wantKey == nil) != (g.Key == nil) || (wantKey != nil && *wantKey != *g.Key) {
			t.Errorf("record %d: key %v, want %v", i, fmtKey(g.Key), fmtKey(wantKey))
		}
		if fmt.Sprint(r.Headers) != fmt.Sprint(g.Headers) && !(len(r.Headers) == 0 && len(g.Headers) == 0) {
			t.Errorf("record %d: headers %v, want %v", i, g.Headers, r.Headers)
		}
		if r.TimestampMs != nil && *r.TimestampMs != g.TimestampMs {
			t.Errorf("record %d: timestamp %d, want %d", i, g.TimestampMs, *r.TimestampMs)
		}
		codecs[g.Compression] = true
		pids[g.ProducerID >= 0] = true
	}
	if len(got) == 0 {
		return // acks=0 and nothing arrived (logged above): nothing stored to check
	}
	if mc.compression != "" && (len(codecs) != 1 || !codecs[mc.compression]) {
		t.Errorf("stored codecs %v, want %s", keys(codecs), mc.compression)
	}
	if mc.idempotent != nil && (len(pids) != 1 || !pids[*mc.idempotent]) {
		t.Errorf("idempotent=%v but stored batches have producer ids set: %v", *mc.idempotent, keys(pids))
	}
	t.Logf("%s %s (acks %s): %v; stored codec %v, idempotent %v, reported %v", c.Name, mc.name, acks, res.Elapsed.Round(time.Millisecond), keys(codecs), keys(pids), reported)
}

func fmtKey(k *string) string {
	if k == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *k)
}

func keys[K comparable](m map[K]bool) []K {
	var out []K
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestTombstones: every runner sends a line whose value is null as a record with a null value (a
// tombstone), not an empty one, keeping the line's own key, also with --key-field; an empty value
// stays empty. Each run produces a keyed record and then a tombstone for the same key; the
// records are read back from the broker (franz-go, which tells a null value from an empty one).
func TestTombstones(t *testing.T) {
	b := testBroker(t)
	for _, c := range selectedClients(t) {
		t.Run(c.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			if err := c.Available(ctx); err != nil {
				if requireClients() {
					t.Fatal(err)
				}
				t.Skipf("skipping: %v; set FERRY_TEST_REQUIRE_CLIENTS=1 to make this fatal", err)
			}
			topic := fmt.Sprintf("tombstones-%s-%d", c.Name, time.Now().UnixNano())
			if err := CreateTopic(ctx, b.Bootstrap, topic, 1); err != nil {
				t.Fatal(err)
			}
			type want struct {
				key   *string
				value *string // nil: a tombstone
			}
			var wants []want
			// acks=all for real offsets from every client (kafka-go defaults to acks=0). A fixed
			// partition makes kcat share one process between records (-Z with tombstones), the
			// harder case for it.
			run := func(keyField string, recs []Record, ws []want) {
				t.Helper()
				res, err := c.Produce(ctx, Options{Bootstrap: b.Bootstrap, Topic: topic, Acks: "all", Partition: ptr[int32](0), KeyField: keyField, Timeout: 60 * time.Second}, recs)
				if err != nil {
					t.Fatalf("%v\nstderr: %s", err, res.Stderr)
				}
				if err := res.Err(); err != nil {
					t.Fatalf("deliveries failed: %v\nstderr: %s", err, tail(res.Stderr, 2000))
				}
				for i, d := range res.Deliveries {
					if *d.Partition != 0 || *d.Offset != int64(len(wants)+i) {
						t.Errorf("key field %q, record %d: reported %d@%d, want 0@%d", keyField, i, *d.Partition, *d.Offset, len(wants)+i)
					}
				}
				wants = append(wants, ws...)
			}
			value := `{"id":1,"v":"x"}`
			recs := []Record{
				{Key: ptr("k1"), Value: value},
				{Key: ptr("k1"), Tombstone: true},
				{Key: ptr("k2"), Value: ""},               // empty, not null
				{Tombstone: true},                         // null key too
				{Key: ptr(""), Value: "after-tombstones"}, // an empty key stays empty
				{Key: ptr("k1"), Tombstone: true, Value: "ignored"},
			}
			ws := []want{
				{ptr("k1"), &value}, {ptr("k1"), nil}, {ptr("k2"), ptr("")}, {nil, nil}, {ptr(""), ptr("after-tombstones")}, {ptr("k1"), nil},
			}
			if c.NoKeylessTombstones {
				t.Logf("%s cannot send a record without key and value: left out", c.Name)
				recs, ws = slices.Delete(recs, 3, 4), slices.Delete(ws, 3, 4)
			}
			run("", recs, ws)
			// --key-field: the key comes from the value, a tombstone's from its own key member.
			value7 := `{"id":7,"v":"y"}`
			run("id", []Record{
				{Key: ptr("ignored"), Value: value7},
				{Key: ptr("7"), Tombstone: true},
			}, []want{{ptr("7"), &value7}, {ptr("7"), nil}})

			got, err := ConsumeAll(ctx, b.Bootstrap, topic, len(wants))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(wants) {
				t.Fatalf("consumed %d records, produced %d", len(got), len(wants))
			}
			slices.SortFunc(got, func(a, b Consumed) int { return int(a.Offset - b.Offset) })
			for i, w := range wants {
				g := got[i]
				if (w.key == nil) != (g.Key == nil) || (w.key != nil && *w.key != *g.Key) {
					t.Errorf("record %d: key %s, want %s", i, fmtKey(g.Key), fmtKey(w.key))
				}
				switch {
				case w.value == nil && (!g.ValueNull || g.Value != ""):
					t.Errorf("record %d: value %q (null %v), want null (a tombstone)", i, g.Value, g.ValueNull)
				case w.value != nil && (g.ValueNull || g.Value != *w.value):
					t.Errorf("record %d: value %q (null %v), want %q", i, g.Value, g.ValueNull, *w.value)
				}
			}
		})
	}
}

// TestUnreachableBroker checks every runner's failure path: nothing listens on the bootstrap
// address, so every record must come back as an error within the run's deadline, with exit code 1
// and reports for all records (the contract), not a hang or a crash.
func TestUnreachableBroker(t *testing.T) {
	ln, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ln[0]) // reserved then released: nothing listens there
	for _, c := range selectedClients(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			if err := c.Available(t.Context()); err != nil {
				if requireClients() {
					t.Fatal(err)
				}
				t.Skipf("skipping: %v; set FERRY_TEST_REQUIRE_CLIENTS=1 to make this fatal", err)
			}
			recs := testRecords("unreachable", 2, false)
			res, err := c.Produce(t.Context(), Options{Bootstrap: addr, Topic: "nowhere", Acks: "all", Timeout: 8 * time.Second}, recs)
			if err != nil {
				t.Fatalf("contract broken: %v\nstderr: %s", err, tail(res.Stderr, 1500))
			}
			if res.ExitCode != 1 {
				t.Fatalf("exit code %d, want 1", res.ExitCode)
			}
			for i, d := range res.Deliveries {
				if d.OK() {
					t.Errorf("record %d reported delivered to a closed port", i)
				}
			}
			t.Logf("%s: %v: %s", c.Name, res.Elapsed.Round(time.Millisecond), res.Deliveries[0].Error)
		})
	}
}
