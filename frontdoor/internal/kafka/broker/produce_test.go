package broker

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka/produce"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"
)

func TestProducePartitionErrors(t *testing.T) {
	h := newHarness(t, harnessOpts{produce: func(c *produce.ProduceConfig) { c.MaxMessageBytes = 4096 }})
	good := batchOf(t, "ok")
	txnID := "txn-1"
	h.cat.AddPartitionTopic("daily.20261204", "daily", "20261204", 2, 300, 7)
	for _, tc := range []struct {
		name    string
		req     func() *kmsg.ProduceRequest
		code    int16
		msgPart string
	}{
		{"acks 2", func() *kmsg.ProduceRequest { return produceReq(9, 2, "orders", 0, good) }, kerr.InvalidRequiredAcks.Code, "acks"},
		{"transactional id", func() *kmsg.ProduceRequest {
			r := produceReq(9, -1, "orders", 0, good)
			r.TransactionID = &txnID
			return r
		}, kerr.TransactionalIDAuthorizationFailed.Code, "transactions"},
		{"unknown topic", func() *kmsg.ProduceRequest { return produceReq(9, -1, "missing", 0, good) }, kerr.UnknownTopicOrPartition.Code, ""},
		{"partition out of range", func() *kmsg.ProduceRequest { return produceReq(9, -1, "orders", 4, good) }, kerr.UnknownTopicOrPartition.Code, "out of range"},
		{"topic of a Fluss partition", func() *kmsg.ProduceRequest { return produceReq(9, -1, "daily.20261204", 0, good) },
			kerr.InvalidTopicException.Code, "produce to topic daily"},
		{"negative partition", func() *kmsg.ProduceRequest { return produceReq(9, -1, "orders", -1, good) }, kerr.UnknownTopicOrPartition.Code, "out of range"},
		{"no records", func() *kmsg.ProduceRequest { return produceReq(9, -1, "orders", 0, nil) }, kerr.InvalidRecord.Code, "exactly one"},
		{"two batches", func() *kmsg.ProduceRequest {
			return produceReq(9, -1, "orders", 0, append(batchOf(t, "a"), batchOf(t, "b")...))
		}, kerr.InvalidRecord.Code, "exactly one"},
		{"batch truncated", func() *kmsg.ProduceRequest { return produceReq(9, -1, "orders", 0, good[:len(good)-3]) }, kerr.CorruptMessage.Code, "truncated"},
		{"shorter than header", func() *kmsg.ProduceRequest { return produceReq(9, -1, "orders", 0, good[:40]) }, kerr.CorruptMessage.Code, "shorter"},
		{"magic 1", func() *kmsg.ProduceRequest {
			b := append([]byte(nil), good...)
			b[16] = 1
			return produceReq(9, -1, "orders", 0, b)
		}, kerr.InvalidRecord.Code, "magic"},
		{"bad crc", func() *kmsg.ProduceRequest {
			b := append([]byte(nil), good...)
			b[len(b)-1] ^= 0xff
			return produceReq(9, -1, "orders", 0, b)
		}, kerr.CorruptMessage.Code, "CRC mismatch"},
		{"too large", func() *kmsg.ProduceRequest {
			return produceReq(9, -1, "orders", 0, batchOf(t, strings.Repeat("x", 5000)))
		}, kerr.MessageTooLarge.Code, "exceeds"},
		{"idempotent batch continuing unknown producer state", func() *kmsg.ProduceRequest {
			return produceReq(9, -1, "orders", 0, idemBatch(42, 0, 7, "x"))
		}, kerr.UnknownProducerID.Code, "no state for producer 42"},
		{"idempotent batch with negative sequence", func() *kmsg.ProduceRequest {
			return produceReq(9, -1, "orders", 0, idemBatch(42, 0, -1, "x"))
		}, kerr.InvalidRecord.Code, "sequence"},
		{"transactional batch", func() *kmsg.ProduceRequest {
			return produceReq(9, -1, "orders", 0, batchWith([]string{"x"}, -1, recordbatch.AttrTransactional))
		}, kerr.TransactionalIDAuthorizationFailed.Code, "transactional"},
		{"control batch", func() *kmsg.ProduceRequest {
			return produceReq(9, -1, "orders", 0, batchWith([]string{"x"}, -1, recordbatch.AttrControl))
		}, kerr.InvalidRecord.Code, "control"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, h.addr)
			resp := c.roundTrip(tc.req()).(*kmsg.ProduceResponse)
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != tc.code {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(tc.code))
			}
			if p.BaseOffset != -1 {
				t.Errorf("base offset %d on error, want -1", p.BaseOffset)
			}
			if tc.msgPart != "" && (p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, tc.msgPart)) {
				t.Errorf("error message %v does not mention %q", p.ErrorMessage, tc.msgPart)
			}
		})
	}
	if n := len(h.ap.Log(100, 0)); n != 0 {
		t.Fatalf("%d records appended from refused batches", n)
	}
}

func TestProduceRecordErrorsByVersion(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, v := range []int16{produce.ProduceMin, 7, 8, 9, produce.ProduceMax} {
		c := dialRaw(t, h.addr)
		resp := c.roundTrip(produceReq(v, 1, "orders", 2, batchOf(t, "fine", "bad", "fine"))).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("v%d: error %d, want INVALID_RECORD", v, p.ErrorCode)
		}
		if v >= 8 {
			if len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 1 {
				t.Fatalf("v%d: record errors %+v, want batch index 1", v, p.ErrorRecords)
			}
			if p.ErrorMessage == nil {
				t.Fatalf("v%d: no error message", v)
			}
		} else if len(p.ErrorRecords) != 0 {
			t.Fatalf("v%d: record errors decoded before v8", v)
		}
	}
	if n := len(h.ap.Log(100, 2)); n != 0 {
		t.Fatalf("%d records of a refused batch appended", n)
	}
}

// TestProduceAnswersAppendsvcKafkaCode: frontdoor answers the Kafka code
// appendsvc chose, and asks catalogsvc again for a table appendsvc found
// gone. An appendsvc that sends only a Fluss code gets a code no client
// mistakes for success.
func TestProduceAnswersAppendsvcKafkaCode(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, tc := range []struct {
		name   string
		answer *appendv1.AppendResponse
		want   *kerr.Error
		stale  bool
	}{
		{"not leader", &appendv1.AppendResponse{KafkaErrorCode: int32(kerr.NotLeaderForPartition.Code), Retriable: true, PossiblyStored: true},
			kerr.NotLeaderForPartition, false},
		{"too large", &appendv1.AppendResponse{KafkaErrorCode: int32(kerr.MessageTooLarge.Code)}, kerr.MessageTooLarge, false},
		{"table gone", &appendv1.AppendResponse{KafkaErrorCode: int32(kerr.UnknownTopicOrPartition.Code), TableNotExist: true},
			kerr.UnknownTopicOrPartition, true},
		{"older appendsvc", &appendv1.AppendResponse{ErrorCode: 12, Retriable: true}, kerr.UnknownServerError, false},
	} {
		h.ap.Mu.Lock()
		h.ap.Fail = func(*appendv1.AppendRequest) *appendv1.AppendResponse {
			a := proto.Clone(tc.answer).(*appendv1.AppendResponse)
			a.ErrorMessage = "scripted " + tc.name
			return a
		}
		h.ap.Mu.Unlock()
		c := dialRaw(t, h.addr)
		p := c.roundTrip(produceReq(12, -1, "events", 0, batchOf(t, "x"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != tc.want.Code || p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "scripted "+tc.name) || p.BaseOffset != -1 {
			t.Errorf("%s: kafka %v at %d (message %v), want %v naming the append error", tc.name, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, p.ErrorMessage, tc.want)
		}
		if tc.stale {
			// The next batch for the topic resolves it again, naming the stale id.
			h.ap.Mu.Lock()
			h.ap.Fail = nil
			h.ap.Mu.Unlock()
			c.roundTrip(produceReq(12, -1, "events", 0, batchOf(t, "y")))
			h.cat.Mu.Lock()
			stale := slices.Clone(h.cat.LastStale)
			h.cat.Mu.Unlock()
			if len(stale) != 1 || stale[0] != 200 {
				t.Errorf("%s: next resolve names stale tables %v, want [200]", tc.name, stale)
			}
		}
	}
}

// TestIdempotentProduceRefusedNotStored: when appendsvc says a refused
// idempotent batch was certainly not stored, its sequence is free again,
// so the producer's next batch with that sequence is appended with the
// same Fluss sequence (the fake appender checks the Fluss sequences).
func TestIdempotentProduceRefusedNotStored(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version = 4
	pid := c.roundTrip(ip).(*kmsg.InitProducerIDResponse).ProducerID
	h.ap.Mu.Lock()
	h.ap.Fail = func(*appendv1.AppendRequest) *appendv1.AppendResponse {
		return &appendv1.AppendResponse{KafkaErrorCode: int32(kerr.CorruptMessage.Code), ErrorMessage: "scripted refusal"}
	}
	h.ap.Mu.Unlock()
	p := c.roundTrip(produceReq(9, -1, "orders", 0, idemBatch(pid, 0, 0, "refused"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("refused batch: %v, want CORRUPT_MESSAGE", kerr.ErrorForCode(p.ErrorCode))
	}
	h.ap.Mu.Lock()
	h.ap.Fail = nil
	h.ap.Mu.Unlock()
	// The sequence went back to 0: frontdoor itself refuses 1 as a gap.
	calls := h.ap.Calls.Load()
	p = c.roundTrip(produceReq(9, -1, "orders", 0, idemBatch(pid, 0, 1, "gap"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code || h.ap.Calls.Load() != calls {
		t.Fatalf("sequence 1 after the refusal: %v with %d appends, want OUT_OF_ORDER_SEQUENCE_NUMBER without any", kerr.ErrorForCode(p.ErrorCode), h.ap.Calls.Load()-calls)
	}
	for seq, v := range []string{"a", "b"} {
		p = c.roundTrip(produceReq(9, -1, "orders", 0, idemBatch(pid, 0, int32(seq), v))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(seq) {
			t.Fatalf("sequence %d after the refusal: %v at %d", seq, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
		}
	}
	if log := h.ap.Log(100, 0); strings.Join(log, "") != "ab" {
		t.Fatalf("log %q, want ab", log)
	}
}

// TestProduceSendsTablePath checks that every append names the table by
// id and by path as the catalog mapped the topic: appendsvc looks tables up
// by path and refuses requests without one.
func TestProduceSendsTablePath(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	var mu sync.Mutex
	var got []*appendv1.AppendRequest
	h.ap.Mu.Lock()
	h.ap.Fail = func(r *appendv1.AppendRequest) *appendv1.AppendResponse {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		return nil // store it as usual
	}
	h.ap.Mu.Unlock()
	c := dialRaw(t, h.addr)
	for _, tc := range []struct {
		topic     string
		partition int32
		tableID   int64
	}{{"orders", 3, 100}, {"events", 1, 200}} {
		p := c.roundTrip(produceReq(12, -1, tc.topic, tc.partition, batchOf(t, "x"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("%s: %v", tc.topic, kerr.ErrorForCode(p.ErrorCode))
		}
		mu.Lock()
		r := got[len(got)-1]
		mu.Unlock()
		if r.GetTableId() != tc.tableID || r.GetDatabase() != "db" || r.GetTable() != tc.topic || r.GetBucketId() != tc.partition {
			t.Errorf("%s: append to table %d %s.%s bucket %d, want %d db.%s bucket %d", tc.topic,
				r.GetTableId(), r.GetDatabase(), r.GetTable(), r.GetBucketId(), tc.tableID, tc.topic, tc.partition)
		}
	}
}

func TestProduceCatalogDown(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.cat.Down.Store(true)
	c := dialRaw(t, h.addr)
	p := c.roundTrip(produceReq(12, -1, "orders", 0, batchOf(t, "x"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("error %v, want LEADER_NOT_AVAILABLE", kerr.ErrorForCode(p.ErrorCode))
	}
	h.cat.Down.Store(false)
	p = c.roundTrip(produceReq(12, -1, "orders", 0, batchOf(t, "x"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("after recovery: error %v", kerr.ErrorForCode(p.ErrorCode))
	}
}

// TestProduceAcksZeroErrorClosesConnection: with acks=0 there is no answer
// to carry an error, so (as Kafka does) the connection is closed instead.
func TestProduceAcksZeroErrorClosesConnection(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	c.send(produceReq(12, 0, "missing", 0, batchOf(t, "x")))
	c.expectClosed()

	ok := dialRaw(t, h.addr)
	ok.send(produceReq(12, 0, "orders", 1, batchOf(t, "silent")))
	// No response for acks=0: the next answer is the ApiVersions one.
	ok.roundTrip(kmsg.NewPtrApiVersionsRequest())
	waitFor(t, func() bool { return len(h.ap.Log(100, 1)) == 1 })
}

// TestTranscodeMappingOncePerStream: the mapping travels on the first job
// of a stream only.
func TestTranscodeMappingOncePerStream(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	for i := 0; i < 5; i++ {
		p := c.roundTrip(produceReq(12, 1, "orders", 0, batchOf(t, "x"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("error %d", p.ErrorCode)
		}
	}
	if got := h.tcs[0].Mappings.Load(); got != 1 {
		t.Fatalf("mapping sent %d times on one stream, want 1", got)
	}
	if h.tcs[0].MissingMap.Load() != 0 {
		t.Fatal("a job referenced a mapping the stream had not seen")
	}
}

// TestProduceOrderAcrossConnections pipelines batches for one partition on
// several connections at once while transcoders answer in random order:
// each connection's batches must land in the order it sent them, and
// offsets must match positions in the log.
func TestProduceOrderAcrossConnections(t *testing.T) {
	h := newHarness(t, harnessOpts{transcoders: 3, jitter: 2 * time.Millisecond})
	const conns, perConn = 3, 40
	type sent struct {
		req  *kmsg.ProduceRequest
		corr int32
	}
	var wg sync.WaitGroup
	offsets := make([][]int64, conns)
	for ci := 0; ci < conns; ci++ {
		c := dialRaw(t, h.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var all []sent
			for i := 0; i < perConn; i++ {
				r := produceReq(12, -1, "events", 1, batchOf(t, fmt.Sprintf("c%d-%03d", ci, i)))
				all = append(all, sent{r, c.send(r)})
			}
			for _, s := range all {
				p := c.recv(s.req, s.corr).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
				if p.ErrorCode != 0 {
					t.Errorf("conn %d: error %d", ci, p.ErrorCode)
					return
				}
				offsets[ci] = append(offsets[ci], p.BaseOffset)
			}
		}()
	}
	wg.Wait()
	log := h.ap.Log(200, 1)
	if len(log) != conns*perConn {
		t.Fatalf("%d records, want %d", len(log), conns*perConn)
	}
	next := make([]int, conns)
	for off, v := range log {
		var ci, i int
		if _, err := fmt.Sscanf(v, "c%d-%d", &ci, &i); err != nil {
			t.Fatal(err)
		}
		if i != next[ci] {
			t.Fatalf("offset %d: %s, but connection %d's next batch is %d (order broken)", off, v, ci, next[ci])
		}
		if offsets[ci][i] != int64(off) {
			t.Fatalf("%s answered offset %d, landed at %d", v, offsets[ci][i], off)
		}
		next[ci]++
	}
}

// TestProduceSurvivesClientDisconnect: a producer that sends with acks=0
// and closes at once still gets its batch written, as with Kafka.
func TestProduceSurvivesClientDisconnect(t *testing.T) {
	hold := make(chan struct{})
	h := newHarness(t, harnessOpts{hold: hold})
	c := dialRaw(t, h.addr)
	c.send(produceReq(12, 0, "orders", 2, batchOf(t, "fire-and-forget")))
	waitFor(t, func() bool { return h.tcs[0].Jobs.Load() == 1 })
	_ = c.conn.Close()
	time.Sleep(50 * time.Millisecond) // the server notices the close
	close(hold)
	waitFor(t, func() bool { return len(h.ap.Log(100, 2)) == 1 })
}
