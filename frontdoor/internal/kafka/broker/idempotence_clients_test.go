package broker

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka/produce"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKcatIdempotent: librdkafka with enable.idempotence=true, including
// lost acknowledgements it must retry through.
func TestKcatIdempotent(t *testing.T) {
	kcat := kcatPath(t)
	h := newHarness(t, harnessOpts{})
	for _, lose := range []bool{false, true} {
		t.Run(fmt.Sprintf("lost acks %v", lose), func(t *testing.T) {
			part := int32(0)
			if lose {
				part = 1
				var mu sync.Mutex
				seen := map[[2]int64]bool{}
				h.ap.Mu.Lock()
				h.ap.StoreThenFail = func(r *appendv1.AppendRequest) bool {
					mu.Lock()
					defer mu.Unlock()
					k := [2]int64{r.WriterId, int64(r.BatchSequence)}
					first := r.WriterId >= 0 && !seen[k]
					seen[k] = true
					return first
				}
				h.ap.Mu.Unlock()
				defer func() { h.ap.Mu.Lock(); h.ap.StoreThenFail = nil; h.ap.Mu.Unlock() }()
			}
			calls, dups := h.ap.WriterCalls.Load(), h.ap.Duplicates.Load()
			var in strings.Builder
			for i := 0; i < 50; i++ {
				fmt.Fprintf(&in, "kcat-%03d\n", i)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, kcat, "-P", "-b", h.addr, "-t", "orders", "-p", fmt.Sprint(part),
				"-X", "enable.idempotence=true", "-X", "compression.codec=none", "-X", "linger.ms=1",
				"-X", "batch.num.messages=7", "-X", "retry.backoff.ms=10")
			cmd.Stdin = strings.NewReader(in.String())
			out, err := cmd.CombinedOutput()
			if err != nil || strings.Contains(string(out), "failed") {
				t.Fatalf("kcat: %v\n%s", err, out)
			}
			log := h.ap.Log(100, part)
			if len(log) != 50 {
				t.Fatalf("partition holds %d records, want 50 exactly once\n%s", len(log), out)
			}
			for i, v := range log {
				if want := fmt.Sprintf("kcat-%03d", i); v != want {
					t.Fatalf("offset %d holds %q, want %q", i, v, want)
				}
			}
			if h.ap.WriterCalls.Load() == calls {
				t.Fatal("no append carried a writer id")
			}
			if lose && h.ap.Duplicates.Load() == dups {
				t.Fatal("no batch was resent: the fault did not take")
			}
		})
	}
}

// TestInitProducerIDVersions: every served version allocates a producer
// id (a Fluss writer id) with epoch 0; a transactional id is refused
// without consumer groups (no fetchsvc), which transactions need.
func TestInitProducerIDVersions(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	seen := map[int64]bool{}
	for v := int16(produce.InitProducerIDMin); v <= produce.InitProducerIDMax; v++ {
		c := dialRaw(t, h.addr)
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = v
		req.TransactionTimeoutMillis = -1
		resp := c.roundTrip(req).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 || resp.ProducerID < 1000 || resp.ProducerEpoch != 0 || seen[resp.ProducerID] {
			t.Fatalf("v%d: %+v", v, resp)
		}
		seen[resp.ProducerID] = true
		txn := "txn-1"
		req.TransactionalID = &txn
		resp = c.roundTrip(req).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || resp.ProducerID != -1 {
			t.Fatalf("v%d transactional: %v %+v", v, kerr.ErrorForCode(resp.ErrorCode), resp)
		}
	}
}

// TestIdempotentProduceWire drives the sequence rules over the wire: a
// resent batch is answered with its original offset and stored once, a gap
// is OUT_OF_ORDER_SEQUENCE_NUMBER, an unknown producer is
// UNKNOWN_PRODUCER_ID with a log start offset the Java client acts on.
func TestIdempotentProduceWire(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version = 4
	pid := c.roundTrip(ip).(*kmsg.InitProducerIDResponse).ProducerID
	produce := func(seq int32, values ...string) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		resp := c.roundTrip(produceReq(9, -1, "orders", 0, idemBatch(pid, 0, seq, values...))).(*kmsg.ProduceResponse)
		return resp.Topics[0].Partitions[0]
	}
	steps := []struct {
		seq    int32
		values []string
		code   int16
		offset int64
	}{
		{0, []string{"a", "b"}, 0, 0},
		{2, []string{"c"}, 0, 2},
		{0, []string{"a", "b"}, 0, 0}, // retry: original offset
		{2, []string{"c"}, 0, 2},
		{4, []string{"e"}, kerr.OutOfOrderSequenceNumber.Code, -1},
		{3, []string{"d"}, 0, 3},
	}
	for i, s := range steps {
		p := produce(s.seq, s.values...)
		if p.ErrorCode != s.code || p.BaseOffset != s.offset {
			msg := ""
			if p.ErrorMessage != nil {
				msg = *p.ErrorMessage
			}
			t.Fatalf("step %d: %v at %d (%s), want %v at %d", i, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, msg, kerr.ErrorForCode(s.code), s.offset)
		}
	}
	if log := h.ap.Log(100, 0); strings.Join(log, "") != "abcd" {
		t.Fatalf("log %q, want abcd", log)
	}
	// A producer id with no state here, continuing mid-sequence.
	resp := c.roundTrip(produceReq(9, -1, "orders", 1, idemBatch(pid+77, 0, 9, "x"))).(*kmsg.ProduceResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.UnknownProducerID.Code || p.LogStartOffset != 0 {
		t.Fatalf("unknown producer: %v log start %d", kerr.ErrorForCode(p.ErrorCode), p.LogStartOffset)
	}
}
