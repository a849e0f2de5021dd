package clients

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/clients/capture"
)

// The consume tests read records produced by franz-go back with every runner from the real
// broker and compare them byte for byte with what was produced: every record exactly once,
// offsets increasing per partition, keys, values, headers and timestamps, null kept apart from
// empty. Group-less runs go through a capture proxy that checks no group APIs are used.

// groupAPIs are the requests of consumer-group membership and offset storage.
var groupAPIs = map[int16]bool{8: true, 9: true, 11: true, 12: true, 13: true, 14: true, 68: true} // OffsetCommit, OffsetFetch, JoinGroup, Heartbeat, LeaveGroup, SyncGroup, ConsumerGroupHeartbeat

const findCoordinator = 10

// produceFixture produces n records with franz-go, spread over partitions 0..2, that differ in
// everything a consumer must hand back exactly: string, empty, null and non-UTF-8 keys; text
// (with escapes and non-ASCII), empty, null (tombstone) and non-UTF-8 values; repeated, empty,
// null and non-UTF-8 header values; CreateTime timestamps. It returns them as the Messages a
// consumer must print. Timestamps are recent: the broker deletes records more than 7 days old.
func produceFixture(ctx context.Context, bootstrap, topic, tag string, n int) ([]Message, error) {
	// A partition of a just-created topic may still answer NOT_LEADER_FOR_PARTITION; kgo retries
	// after a metadata refresh, which it spaces by MetadataMinAge (5 s by default).
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		r := &kgo.Record{Partition: int32(i % 3), Timestamp: base.Add(time.Duration(i) * time.Second)}
		switch i % 4 {
		case 0:
			r.Key = fmt.Appendf(nil, "key-%d", i)
		case 1:
			r.Key = []byte{}
		case 3:
			r.Key = []byte{0xff, 0x00, 'k', byte(i)}
		}
		switch i % 5 {
		case 0:
			r.Value = fmt.Appendf(nil, `{"case":%q,"i":%d,"text":"héllo ✓"}`, tag, i)
		case 1:
			r.Value = []byte{}
		case 3:
			r.Value = []byte{0xc3, 0x28, byte(i)}
		case 4:
			r.Value = fmt.Appendf(nil, "line\n\"quoted\" \\ \x01\ttab %d", i)
		}
		switch i % 3 {
		case 1:
			r.Headers = []kgo.RecordHeader{{Key: "h1", Value: fmt.Append(nil, i)}, {Key: "dup", Value: []byte("a")},
				{Key: "dup", Value: []byte("b")}, {Key: "null", Value: nil}, {Key: "empty", Value: []byte{}}}
		case 2:
			r.Headers = []kgo.RecordHeader{{Key: "bin", Value: []byte{0xfe, byte(i)}}, {Key: "trace", Value: []byte(tag)}}
		}
		recs[i] = r
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return nil, fmt.Errorf("produce fixture: %w", err)
	}
	want := make([]Message, n)
	for i, r := range recs {
		m := Message{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, TimestampMs: r.Timestamp.UnixMilli()}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, MessageHeader{Key: h.Key, Value: h.Value})
		}
		want[i] = m
	}
	return want, nil
}

// checkConsumed checks that got holds each record of want exactly once, equal to it, with offsets
// increasing per partition in delivery order.
func checkConsumed(t *testing.T, c Client, got, want []Message) {
	t.Helper()
	type at struct {
		p int32
		o int64
	}
	byAt := map[at]Message{}
	for _, w := range want {
		if c.EmptyReadsAsNull {
			w = emptyAsNull(w)
		}
		byAt[at{w.Partition, w.Offset}] = w
	}
	last := map[int32]int64{}
	seen := map[at]bool{}
	for i, g := range got {
		k := at{g.Partition, g.Offset}
		w, ok := byAt[k]
		switch {
		case !ok:
			t.Errorf("record %d: %d@%d was not produced in this run", i, g.Partition, g.Offset)
			continue
		case seen[k]:
			t.Errorf("record %d: %d@%d delivered twice", i, g.Partition, g.Offset)
		}
		seen[k] = true
		if l, ok := last[g.Partition]; ok && g.Offset <= l {
			t.Errorf("record %d: offset %d on partition %d after offset %d", i, g.Offset, g.Partition, l)
		}
		last[g.Partition] = g.Offset
		if diff := messageDiff(g, w); diff != "" {
			t.Errorf("record %d@%d: %s", g.Partition, g.Offset, diff)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("read %d of the %d records produced", len(seen), len(want))
	}
}

// emptyAsNull is m as a consumer that reads empty bytes as null delivers it.
func emptyAsNull(m Message) Message {
	null := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		return b
	}
	m.Key, m.Value = null(m.Key), null(m.Value)
	hs := make([]MessageHeader, len(m.Headers))
	for i, h := range m.Headers {
		hs[i] = MessageHeader{Key: h.Key, Value: null(h.Value)}
	}
	m.Headers = hs
	return m
}

func messageDiff(got, want Message) string {
	var d []string
	if !sameBytes(got.Key, want.Key) {
		d = append(d, fmt.Sprintf("key %s, want %s", fmtBytes(got.Key), fmtBytes(want.Key)))
	}
	if !sameBytes(got.Value, want.Value) {
		d = append(d, fmt.Sprintf("value %s, want %s", fmtBytes(got.Value), fmtBytes(want.Value)))
	}
	if !slices.EqualFunc(got.Headers, want.Headers, func(a, b MessageHeader) bool { return a.Key == b.Key && sameBytes(a.Value, b.Value) }) {
		d = append(d, fmt.Sprintf("headers %s, want %s", fmtHeaders(got.Headers), fmtHeaders(want.Headers)))
	}
	if got.TimestampMs != want.TimestampMs {
		d = append(d, fmt.Sprintf("timestamp %d, want %d", got.TimestampMs, want.TimestampMs))
	}
	return strings.Join(d, "; ")
}

// sameBytes compares bytes keeping null (nil) apart from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func fmtBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%q", b)
}

func fmtHeaders(hs []MessageHeader) string {
	var s []string
	for _, h := range hs {
		s = append(s, h.Key+"="+fmtBytes(h.Value))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// apis lists the proxied requests as "Name vN" in order of first use, and which API keys were sent.
func apis(px *capture.Proxy) (string, map[int16]bool) {
	var names []string
	keys := map[int16]bool{}
	for _, r := range px.Requests() {
		if n := fmt.Sprintf("%s v%d", r.API, r.Version); r.APIKey >= 0 && !slices.Contains(names, n) {
			names = append(names, n)
		}
		keys[r.APIKey] = true
	}
	return strings.Join(names, ", "), keys
}

// startCapture starts a capture proxy in front of upstream, closed with the test.
func startCapture(t *testing.T, upstream string) *capture.Proxy {
	t.Helper()
	px, err := capture.Start("127.0.0.1:0", upstream, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	return px
}

// waitIdle waits until every proxied connection has closed, so the recorded requests are all there.
func waitIdle(t *testing.T, px *capture.Proxy) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := px.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

func consumeOK(t *testing.T, c Client, opts ConsumeOptions) ConsumeResult {
	t.Helper()
	res, err := c.Consume(t.Context(), opts)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, tail(res.Stderr, 2000))
	}
	if err := res.Err(); err != nil {
		t.Fatalf("%v\nstderr: %s", err, tail(res.Stderr, 2000))
	}
	return res
}

func requireAvailable(t *testing.T, c Client) {
	t.Helper()
	if err := c.Available(t.Context()); err != nil {
		if requireClients() {
			t.Fatal(err)
		}
		t.Skipf("skipping: %v; set FERRY_TEST_REQUIRE_CLIENTS=1 to make this fatal", err)
	}
}

// TestConsume reads with every runner, each on topics of its own with 3 partitions.
//   - read/<client>/assign: group-less from earliest, through a capture proxy: no group APIs.
//   - read/<client>/group: as a group member twice — first over SASL/PLAIN with --commit, then
//     without, after more records were produced: the second run must read exactly the new records
//     (the commit took effect) and send no OffsetCommit.
//   - deadline/<client>: asked for one record more than there is, the runner must stop at its
//     --timeout (kcat, which runs with -e: at the end of the partitions) with exit 1, having
//     printed the records that exist. Group-less runners read
//     partition 1 from offset 1 (--partition, --from OFFSET); kafkajs, group-only, reads as a group.
//     A second run at the same time starts from latest and must read nothing.
//
// The deadline runs spend their --timeout waiting, so all of them run in the background while the
// read runs go on (t.Parallel would run only GOMAXPROCS of them at a time).
func TestConsume(t *testing.T) {
	b := testBroker(t)
	cs := selectedClients(t)
	outs := make([]deadlineOutcome, len(cs))
	var deadlines sync.WaitGroup
	for i, c := range cs {
		deadlines.Go(func() { outs[i] = deadlineRuns(t.Context(), b, c) })
	}
	t.Run("read", func(t *testing.T) {
		// Two clients at a time, as in TestProduceMatrix.
		sem := make(chan struct{}, 2)
		for _, c := range cs {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				requireAvailable(t, c)
				t.Run("assign", func(t *testing.T) { consumeAssign(t, b, c) })
				t.Run("group", func(t *testing.T) { consumeGroup(t, b, c) })
			})
		}
	})
	deadlines.Wait()
	t.Run("deadline", func(t *testing.T) {
		for i, c := range cs {
			t.Run(c.Name, func(t *testing.T) { checkDeadline(t, c, outs[i]) })
		}
	})
}

func consumeAssign(t *testing.T, b *Broker, c Client) {
	ctx := t.Context()
	topic := fmt.Sprintf("consume-%s-assign-%d", c.Name, time.Now().UnixNano())
	if ok, why := c.Supports(ConsumeAssign); !ok {
		// The runner must refuse (exit 2), not fall back to a group.
		res, err := c.Consume(ctx, ConsumeOptions{Bootstrap: b.Bootstrap, Topic: topic, Count: 1, Timeout: 30 * time.Second})
		if err == nil || res.ExitCode != 2 {
			t.Fatalf("%s cannot consume without a group (%s), yet the runner did not refuse: exit %d, %v", c.Name, why, res.ExitCode, err)
		}
		t.Logf("refused as documented: %s", strings.TrimSpace(res.Stderr))
		return
	}
	if err := CreateTopic(ctx, b.Bootstrap, topic, 3); err != nil {
		t.Fatal(err)
	}
	want, err := produceFixture(ctx, b.Bootstrap, topic, c.Name+"/assign", 9)
	if err != nil {
		t.Fatal(err)
	}
	px := startCapture(t, b.Bootstrap)
	res := consumeOK(t, c, ConsumeOptions{Bootstrap: px.Addr(), Topic: topic, Count: len(want), Timeout: 60 * time.Second})
	checkConsumed(t, c, res.Messages, want)
	waitIdle(t, px)
	names, keys := apis(px)
	for k := range keys {
		if groupAPIs[k] {
			t.Errorf("group-less run sent group request %d; requests: %s", k, names)
		}
	}
	if keys[findCoordinator] != c.AssignFindsCoordinator {
		t.Errorf("FindCoordinator sent: %v, documented: %v; requests: %s", keys[findCoordinator], c.AssignFindsCoordinator, names)
	}
	t.Logf("%s group-less: %v; requests: %s", c.Name, res.Elapsed.Round(time.Millisecond), names)
}

func consumeGroup(t *testing.T, b *Broker, c Client) {
	ctx := t.Context()
	if ok, why := c.Supports(ConsumeGroup); !ok {
		t.Logf("%s cannot consume in a group: %s", c.Name, why)
		return
	}
	topic := fmt.Sprintf("consume-%s-group-%d", c.Name, time.Now().UnixNano())
	group := "group-" + topic
	if err := CreateTopic(ctx, b.Bootstrap, topic, 3); err != nil {
		t.Fatal(err)
	}
	first, err := produceFixture(ctx, b.Bootstrap, topic, c.Name+"/group-1", 9)
	if err != nil {
		t.Fatal(err)
	}
	opts := ConsumeOptions{Topic: topic, Count: len(first), Group: group, Commit: true, Timeout: 60 * time.Second}
	upstream := b.Bootstrap
	if b.SASL != "" {
		upstream, opts.SASLUser, opts.SASLPassword = b.SASL, b.SASLUser, b.SASLPass
	}
	px := startCapture(t, upstream)
	opts.Bootstrap = px.Addr()
	res := consumeOK(t, c, opts)
	checkConsumed(t, c, res.Messages, first)
	waitIdle(t, px)
	names, keys := apis(px)
	if !keys[8] {
		t.Errorf("--commit sent no OffsetCommit; requests: %s", names)
	}
	t.Logf("%s group --commit (SASL %v): %v; requests: %s", c.Name, b.SASL != "", res.Elapsed.Round(time.Millisecond), names)

	second, err := produceFixture(ctx, b.Bootstrap, topic, c.Name+"/group-2", 6)
	if err != nil {
		t.Fatal(err)
	}
	px = startCapture(t, b.Bootstrap)
	res = consumeOK(t, c, ConsumeOptions{Bootstrap: px.Addr(), Topic: topic, Count: len(second), Group: group, Timeout: 60 * time.Second})
	checkConsumed(t, c, res.Messages, second)
	waitIdle(t, px)
	names, keys = apis(px)
	if keys[8] {
		t.Errorf("a run without --commit sent OffsetCommit; requests: %s", names)
	}
	t.Logf("%s group, committed offsets: %v", c.Name, res.Elapsed.Round(time.Millisecond))
}

// deadlineOutcome is what deadlineRuns saw.
type deadlineOutcome struct {
	unavailable, err, latestErr error
	res, latest                 ConsumeResult
	opts                        ConsumeOptions
	want                        []Message
}

// deadlineRuns creates and fills a topic for c, then runs at once the consume asking for one record
// more than it can read and the one starting from latest.
func deadlineRuns(ctx context.Context, b *Broker, c Client) (o deadlineOutcome) {
	if o.unavailable = c.Available(ctx); o.unavailable != nil {
		return o
	}
	topic := fmt.Sprintf("consume-%s-deadline-%d", c.Name, time.Now().UnixNano())
	if o.err = CreateTopic(ctx, b.Bootstrap, topic, 3); o.err != nil {
		return o
	}
	all, err := produceFixture(ctx, b.Bootstrap, topic, c.Name+"/deadline", 9)
	if o.err = err; err != nil {
		return o
	}
	o.opts = ConsumeOptions{Bootstrap: b.Bootstrap, Topic: topic, Timeout: 12 * time.Second}
	if ok, _ := c.Supports(ConsumeAssign); ok {
		o.opts.Partition, o.opts.From = ptr[int32](1), "1"
		for _, m := range all {
			if m.Partition == 1 && m.Offset >= 1 {
				o.want = append(o.want, m)
			}
		}
	} else {
		o.opts.Group, o.want = "group-"+topic, all
	}
	o.opts.Count = len(o.want) + 1
	latest := o.opts
	latest.From, latest.Count = "latest", 1
	if latest.Group != "" {
		latest.Group += "-latest"
	}
	var both sync.WaitGroup
	both.Go(func() { o.latest, o.latestErr = c.Consume(ctx, latest) })
	o.res, o.err = c.Consume(ctx, o.opts)
	both.Wait()
	return o
}

func checkDeadline(t *testing.T, c Client, o deadlineOutcome) {
	if o.unavailable != nil {
		if requireClients() {
			t.Fatal(o.unavailable)
		}
		t.Skipf("skipping: %v; set FERRY_TEST_REQUIRE_CLIENTS=1 to make this fatal", o.unavailable)
	}
	if o.err != nil {
		t.Fatalf("%v\nstderr: %s", o.err, tail(o.res.Stderr, 2000))
	}
	if o.res.ExitCode != 1 {
		t.Fatalf("exit code %d after %d of %d records, want 1 (the deadline)", o.res.ExitCode, len(o.res.Messages), o.opts.Count)
	}
	checkConsumed(t, c, o.res.Messages, o.want)
	switch {
	case o.latestErr != nil:
		t.Errorf("--from latest: %v\nstderr: %s", o.latestErr, tail(o.latest.Stderr, 2000))
	case o.latest.ExitCode != 1 || len(o.latest.Messages) != 0:
		t.Errorf("--from latest: exit code %d with %d records, want 1 with none", o.latest.ExitCode, len(o.latest.Messages))
	}
	t.Logf("%s: exit 1 after %v with %d records", c.Name, o.res.Elapsed.Round(time.Millisecond), len(o.res.Messages))
}
