package fetchsession

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchReq is a v12 Fetch of topic's partitions at offset 10*p.
func fetchReq(id, epoch int32, topic string, parts ...int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.SessionID, r.SessionEpoch = 12, id, epoch
	if len(parts) > 0 {
		t := kmsg.NewFetchRequestTopic()
		t.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, int64(p)*10, 1000
			t.Partitions = append(t.Partitions, rp)
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

// answer is the response a full fetch of r would get: every partition
// with high watermark hw, records for those in withRecords.
func answer(r *kmsg.FetchRequest, hw int64, withRecords ...string) *kmsg.FetchResponse {
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	for _, t := range r.Topics {
		ot := kmsg.NewFetchResponseTopic()
		ot.Topic = t.Topic
		for _, p := range t.Partitions {
			op := kmsg.NewFetchResponseTopicPartition()
			op.Partition, op.HighWatermark, op.LastStableOffset, op.LogStartOffset = p.Partition, hw, hw, 0
			for _, w := range withRecords {
				if w == fmt.Sprintf("%s-%d", t.Topic, p.Partition) {
					op.RecordBatches = []byte{1}
				}
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

// names lists a response's or request's partitions as topic-partition.
func names(resp *kmsg.FetchResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s-%d", t.Topic, p.Partition))
		}
	}
	return out
}

func reqNames(r *kmsg.FetchRequest) []string {
	var out []string
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s-%d@%d", t.Topic, p.Partition, p.FetchOffset))
		}
	}
	return out
}

func same(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// open runs a full fetch that opens a session and returns its id.
func open(t *testing.T, c *Cache, topic string, parts ...int32) int32 {
	t.Helper()
	r := fetchReq(0, 0, topic, parts...)
	f := c.Begin(r)
	if f.Kind != Full {
		t.Fatalf("kind %v", f.Kind)
	}
	resp := answer(r, 100)
	f.Finish(r, resp)
	if resp.SessionID == 0 || len(names(resp)) != len(parts) {
		t.Fatalf("session %d, answer %v", resp.SessionID, names(resp))
	}
	return resp.SessionID
}

func TestIncrementalFetch(t *testing.T) {
	c := New(DefaultConfig())
	id := open(t, c, "a", 0, 1, 2)

	// Nothing named: all three are read at their session offsets; none
	// changed, so the answer is empty.
	r := fetchReq(id, 1, "a")
	f := c.Begin(r)
	if f.Kind != Incremental || !same(reqNames(r), []string{"a-0@0", "a-1@10", "a-2@20"}) {
		t.Fatalf("kind %v, request %v", f.Kind, reqNames(r))
	}
	resp := answer(r, 100)
	f.Finish(r, resp)
	if resp.SessionID != id || len(resp.Topics) != 0 {
		t.Fatalf("session %d, answer %v", resp.SessionID, names(resp))
	}

	// a-1 moved to 15 and has records; a-2 has a new high watermark on the
	// next answer; a new topic b joins.
	r = fetchReq(id, 2, "a")
	r.Topics = append(fetchReq(0, 0, "a", 1).Topics, fetchReq(0, 0, "b", 0).Topics...)
	r.Topics[0].Partitions[0].FetchOffset = 15
	f = c.Begin(r)
	if !same(reqNames(r), []string{"a-0@0", "a-1@15", "a-2@20", "b-0@0"}) {
		t.Fatalf("request %v", reqNames(r))
	}
	resp = answer(r, 100, "a-1")
	resp.Topics[0].Partitions[2].HighWatermark, resp.Topics[0].Partitions[2].LastStableOffset = 101, 101
	f.Finish(r, resp)
	if !same(names(resp), []string{"a-1", "a-2", "b-0"}) {
		t.Fatalf("answer %v", names(resp))
	}

	// a-1 had records, so it is read last; forgetting a-0 drops it; an
	// error is always reported, and again once it is gone.
	r = fetchReq(id, 3, "a")
	fg := kmsg.NewFetchRequestForgottenTopic()
	fg.Topic, fg.Partitions = "a", []int32{0}
	r.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{fg}
	f = c.Begin(r)
	if !same(reqNames(r), []string{"a-2@20", "a-1@15", "b-0@0"}) {
		t.Fatalf("request %v", reqNames(r))
	}
	resp = answer(r, 101)
	resp.Topics[1].Partitions[0].ErrorCode = kerr.NotLeaderForPartition.Code // b-0
	f.Finish(r, resp)
	if !same(names(resp), []string{"a-1", "b-0"}) { // a-1: its high watermark moved to 101
		t.Fatalf("answer %v", names(resp))
	}
	r = fetchReq(id, 4, "a")
	f = c.Begin(r)
	resp = answer(r, 101)
	f.Finish(r, resp)
	if !same(names(resp), []string{"b-0"}) {
		t.Fatalf("answer after the error %v", names(resp))
	}
	if st := c.Stats(); st.Sessions != 1 || st.Partitions != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSessionErrors(t *testing.T) {
	c := New(DefaultConfig())
	id := open(t, c, "a", 0)
	for _, tc := range []struct {
		name      string
		id, epoch int32
		code      int16
	}{
		{"unknown id", id + 1, 1, kerr.FetchSessionIDNotFound.Code},
		{"epoch ahead", id, 2, kerr.InvalidFetchSessionEpoch.Code},
		{"epoch far ahead", id, 5, kerr.InvalidFetchSessionEpoch.Code},
	} {
		r := fetchReq(tc.id, tc.epoch, "a", 0)
		f := c.Begin(r)
		resp := answer(r, 1)
		f.Finish(r, resp)
		if f.Kind != Refused || resp.ErrorCode != tc.code || resp.SessionID != 0 || len(resp.Topics) != 0 {
			t.Errorf("%s: kind %v, error %d, session %d, %d topics", tc.name, f.Kind, resp.ErrorCode, resp.SessionID, len(resp.Topics))
		}
	}
	// The refusals did not move the epoch: 1 is still the next.
	r := fetchReq(id, 1, "a")
	if f := c.Begin(r); f.Kind != Incremental {
		t.Fatalf("kind %v", f.Kind)
	} else {
		f.Finish(r, answer(r, 1))
	}
	// Epoch -1 closes the session and keeps none.
	r = fetchReq(id, -1, "a", 0)
	f := c.Begin(r)
	resp := answer(r, 1)
	f.Finish(r, resp)
	if f.Kind != Sessionless || resp.SessionID != 0 || c.Stats().Sessions != 0 {
		t.Fatalf("kind %v, session %d, stats %+v", f.Kind, resp.SessionID, c.Stats())
	}
	// Before v7 there are no sessions.
	r = fetchReq(0, 0, "a", 0)
	r.Version = 6
	if f := c.Begin(r); f.Kind != Sessionless {
		t.Fatalf("v6 kind %v", f.Kind)
	}
}

func TestEviction(t *testing.T) {
	now := time.Unix(1000, 0)
	c := New(Config{Slots: 1, EvictAfter: time.Minute})
	c.now = func() time.Time { return now }
	first := open(t, c, "a", 0, 1)

	// Not larger, not idle long enough: no session.
	r := fetchReq(0, 0, "b", 0, 1)
	f := c.Begin(r)
	resp := answer(r, 1)
	f.Finish(r, resp)
	if resp.SessionID != 0 || c.Stats().Sessions != 1 {
		t.Fatalf("session %d, stats %+v", resp.SessionID, c.Stats())
	}
	// Larger: takes the slot.
	second := open(t, c, "b", 0, 1, 2)
	if st := c.Stats(); st.Evictions != 1 || st.Partitions != 3 {
		t.Fatalf("stats %+v", st)
	}
	r = fetchReq(first, 1, "a")
	if f := c.Begin(r); f.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("evicted session: kind %v", f.Kind)
	}
	// Smaller but the holder idle past EvictAfter: takes the slot.
	now = now.Add(time.Minute)
	third := open(t, c, "c", 0)
	if third == second || c.Stats().Evictions != 2 {
		t.Fatalf("stats %+v", c.Stats())
	}
}

func TestNextEpochWraps(t *testing.T) {
	if nextEpoch(1<<31-1) != 1 || nextEpoch(5) != 6 {
		t.Fatal("epoch")
	}
}
