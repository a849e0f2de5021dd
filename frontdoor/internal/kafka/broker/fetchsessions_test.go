package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"

	"github.com/ferrygw/ferry/frontdoor/internal/fetchsession"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// fakeLog is a fetchsvc whose partitions hold records "topic-p-i", one
// per batch; Read waits up to max_wait_ms (at most 50 ms) when nothing is
// there, as fetchsvc waits for min_bytes.
type fakeLog struct {
	fetchv1.UnimplementedFetchServiceServer
	mu    sync.Mutex
	parts map[string][]string // "topic/partition" -> values
	reads []*fetchv1.ReadRequest
}

func (f *fakeLog) add(topic string, p int32, values ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := fmt.Sprintf("%s/%d", topic, p)
	f.parts[k] = append(f.parts[k], values...)
}

func (f *fakeLog) Read(ctx context.Context, r *fetchv1.ReadRequest) (*fetchv1.ReadResponse, error) {
	f.mu.Lock()
	f.reads = append(f.reads, r)
	f.mu.Unlock()
	answer := func() (*fetchv1.ReadResponse, int) {
		f.mu.Lock()
		defer f.mu.Unlock()
		resp, n := &fetchv1.ReadResponse{}, 0
		for _, t := range r.Topics {
			tr := &fetchv1.TopicRecords{Topic: t.Mapping.GetTopic()}
			for _, p := range t.Partitions {
				log := f.parts[fmt.Sprintf("%s/%d", tr.Topic, p.Partition)]
				pr := &fetchv1.PartitionRecords{Partition: p.Partition, HighWatermark: int64(len(log)), LogStartOffset: 0}
				for o := p.FetchOffset; o >= 0 && o < int64(len(log)); o++ {
					pr.Records = appendTestBatch(pr.Records, o, log[o])
					n++
				}
				tr.Partitions = append(tr.Partitions, pr)
			}
			resp.Topics = append(resp.Topics, tr)
		}
		return resp, n
	}
	deadline := time.Now().Add(min(time.Duration(r.MaxWaitMs)*time.Millisecond, 50*time.Millisecond))
	for {
		resp, n := answer()
		if n > 0 || time.Now().After(deadline) {
			return resp, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fakeLog) ListOffsets(_ context.Context, r *fetchv1.ListOffsetsRequest) (*fetchv1.ListOffsetsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &fetchv1.ListOffsetsResponse{}
	for _, q := range r.Partitions {
		a := &fetchv1.OffsetAnswer{Partition: q.Partition, Timestamp: -1}
		if q.Timestamp == -1 {
			a.Offset = int64(len(f.parts[fmt.Sprintf("%s/%d", r.Mapping.GetTopic(), q.Partition)]))
		}
		resp.Partitions = append(resp.Partitions, a)
	}
	return resp, nil
}

// appendTestBatch appends an uncompressed record batch of one record.
func appendTestBatch(dst []byte, offset int64, value string) []byte {
	rec := kmsg.Record{Value: []byte(value)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // less the 1-byte length 0
	body := rec.AppendTo(nil)
	b := kmsg.RecordBatch{FirstOffset: offset, Magic: 2, LastOffsetDelta: 0, FirstTimestamp: 1, MaxTimestamp: 1,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: body}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return append(dst, raw...)
}

// TestFetchSessionsWithKgo: franz-go, which uses fetch sessions, consumes
// four partitions through incremental fetches: after the first full fetch
// its requests name only partitions whose position moved, the answers carry
// only partitions with news, and every record arrives once.
func TestFetchSessionsWithKgo(t *testing.T) {
	fl := &fakeLog{parts: map[string][]string{}}
	m := newMeters(t)
	h := newHarness(t, harnessOpts{fetcher: fl, mp: m.mp})
	var want []string
	for p := range int32(4) {
		for i := range 3 {
			v := fmt.Sprintf("orders-%d-%d", p, i)
			fl.add("orders", p, v)
			want = append(want, v)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addr), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]int{}
	poll := func(n int) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for len(got) < n {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("poll: %v (got %d of %d)", err, len(got), n)
			}
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++ })
		}
	}
	poll(12)
	// New records in one partition only, after the consumer caught up.
	time.Sleep(300 * time.Millisecond)
	fl.add("orders", 2, "orders-2-3")
	want = append(want, "orders-2-3")
	poll(13)
	for _, v := range want {
		if got[v] != 1 {
			t.Errorf("%s consumed %d times", v, got[v])
		}
	}
	kind := func(k fetchsession.Kind) int64 {
		v, _ := m.value("ferry.frontdoor.fetch.requests", attribute.String("session", k.String()))
		return v
	}
	if full, inc := kind(fetchsession.Full), kind(fetchsession.Incremental); full != 1 || inc < 2 ||
		kind(fetchsession.Refused) != 0 || kind(fetchsession.Sessionless) != 0 {
		t.Fatalf("fetches: full %d, incremental %d, refused %d, sessionless %d", full, inc, kind(fetchsession.Refused), kind(fetchsession.Sessionless))
	}
	m.want(1, "ferry.frontdoor.fetch.sessions")
	m.want(4, "ferry.frontdoor.fetch.session.partitions")
	// fetchsvc still reads every partition of the session each time.
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if len(fl.reads) < 3 {
		t.Fatalf("%d reads", len(fl.reads))
	}
}

// TestFetchSessionWire: a session's answers as the protocol defines them,
// request by request.
func TestFetchSessionWire(t *testing.T) {
	fl := &fakeLog{parts: map[string][]string{}}
	h := newHarness(t, harnessOpts{fetcher: fl})
	fl.add("orders", 0, "a", "b")
	fl.add("orders", 1, "c")
	conn := dialRaw(t, h.addr)
	fetch := func(id, epoch int32, parts map[int32]int64) *kmsg.FetchResponse {
		t.Helper()
		r := kmsg.NewPtrFetchRequest()
		r.Version, r.SessionID, r.SessionEpoch, r.MaxWaitMillis, r.MaxBytes = 12, id, epoch, 10, 1<<20
		if len(parts) > 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "orders"
			for p := range int32(2) {
				if off, ok := parts[p]; ok {
					rp := kmsg.NewFetchRequestTopicPartition()
					rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
					rt.Partitions = append(rt.Partitions, rp)
				}
			}
			r.Topics = append(r.Topics, rt)
		}
		return conn.roundTrip(r).(*kmsg.FetchResponse)
	}
	first := fetch(0, 0, map[int32]int64{0: 0, 1: 1})
	if first.SessionID == 0 || len(first.Topics) != 1 || len(first.Topics[0].Partitions) != 2 {
		t.Fatalf("full fetch: session %d, %+v", first.SessionID, first.Topics)
	}
	id := first.SessionID
	// Partition 0 moved to 2 (its end), partition 1 (at its end) not named:
	// the fetch reads both, and the answer has neither (no records, nothing
	// changed).
	inc := fetch(id, 1, map[int32]int64{0: 2})
	if inc.ErrorCode != 0 || inc.SessionID != id || len(inc.Topics) != 0 {
		t.Fatalf("incremental: error %d session %d topics %+v", inc.ErrorCode, inc.SessionID, inc.Topics)
	}
	last := fl.reads[len(fl.reads)-1]
	if n := len(last.Topics[0].Partitions); n != 2 || last.Topics[0].Partitions[0].FetchOffset != 2 || last.Topics[0].Partitions[1].FetchOffset != 1 {
		t.Fatalf("read %+v", last.Topics[0].Partitions)
	}
	// A new record in partition 1: the answer has partition 1 only.
	fl.add("orders", 1, "d")
	inc = fetch(id, 2, nil)
	if inc.SessionID != id || len(inc.Topics) != 1 || len(inc.Topics[0].Partitions) != 1 ||
		inc.Topics[0].Partitions[0].Partition != 1 || inc.Topics[0].Partitions[0].HighWatermark != 2 {
		t.Fatalf("incremental with news: %+v", inc.Topics)
	}
	for _, tc := range []struct {
		id, epoch int32
		code      int16
	}{{id, 2, kerr.InvalidFetchSessionEpoch.Code}, {id + 1, 1, kerr.FetchSessionIDNotFound.Code}} {
		bad := fetch(tc.id, tc.epoch, nil)
		if bad.ErrorCode != tc.code || bad.SessionID != 0 || len(bad.Topics) != 0 {
			t.Fatalf("session %d epoch %d: error %d session %d", tc.id, tc.epoch, bad.ErrorCode, bad.SessionID)
		}
	}
	// Epoch -1 closes it.
	if closed := fetch(id, -1, map[int32]int64{0: 2}); closed.SessionID != 0 || closed.ErrorCode != 0 {
		t.Fatalf("close: %+v", closed)
	}
	if bad := fetch(id, 3, nil); bad.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("after close: error %d", bad.ErrorCode)
	}
}

// TestFetchZstdNeedsV10: a zstd topic is refused to Fetch versions before
// 10 with UNSUPPORTED_COMPRESSION_TYPE, as a broker does.
func TestFetchZstdNeedsV10(t *testing.T) {
	fl := &fakeLog{parts: map[string][]string{}}
	h := newHarness(t, harnessOpts{fetcher: fl})
	h.cat.SetFetchCompression("orders", catalogv1.FetchCompression_FETCH_COMPRESSION_ZSTD)
	fl.add("orders", 0, "a")
	conn := dialRaw(t, h.addr)
	for _, v := range []int16{9, 10} {
		r := kmsg.NewPtrFetchRequest()
		r.Version, r.MaxBytes = v, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := conn.roundTrip(r).(*kmsg.FetchResponse)
		code := resp.Topics[0].Partitions[0].ErrorCode
		if want := map[int16]int16{9: kerr.UnsupportedCompressionType.Code, 10: 0}[v]; code != want {
			t.Errorf("v%d: error %d, want %d", v, code, want)
		}
	}
}
