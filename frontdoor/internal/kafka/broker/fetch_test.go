package broker

import (
	"context"
	"testing"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka/consume"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// fakeFetch answers every Read with the partitions of answer, by topic.
type fakeFetch struct {
	fetchv1.UnimplementedFetchServiceServer
	answer map[string][]*fetchv1.PartitionRecords
}

func (f *fakeFetch) Read(_ context.Context, r *fetchv1.ReadRequest) (*fetchv1.ReadResponse, error) {
	resp := &fetchv1.ReadResponse{}
	for _, t := range r.GetTopics() {
		resp.Topics = append(resp.Topics, &fetchv1.TopicRecords{Topic: t.GetMapping().GetTopic(), Partitions: f.answer[t.GetMapping().GetTopic()]})
	}
	return resp, nil
}

// A partition without records is answered with an empty record set
// (length 0), as a Kafka broker answers it, in every Fetch version served
// and whether or not the partition has an error: librdkafka (kcat -e)
// takes a null one (length -1) for a parse failure, kafka-python for a
// TypeError.
func TestFetchEmptyPartitionHasEmptyRecords(t *testing.T) {
	f := &fakeFetch{answer: map[string][]*fetchv1.PartitionRecords{"orders": {
		{Partition: 0, HighWatermark: 5, LogStartOffset: 0},
		{Partition: 1, ErrorCode: int32(kerr.OffsetOutOfRange.Code), HighWatermark: 3, LogStartOffset: 0},
	}}}
	h := newHarness(t, harnessOpts{fetcher: f})
	c := dialRaw(t, h.addr)
	for v := int16(consume.FetchMin); v <= consume.FetchMax; v++ {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		req.ReplicaID, req.SessionEpoch = -1, -1
		for _, name := range []string{"orders", "nosuch"} {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = name
			for p := range int32(2) {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, 5, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp := c.roundTrip(req).(*kmsg.FetchResponse)
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d: %d topics, want 2", v, len(resp.Topics))
		}
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				if p.RecordBatches == nil || len(p.RecordBatches) != 0 {
					t.Errorf("v%d %s/%d (error %d): record set %v (nil: %v), want empty, not null",
						v, rt.Topic, p.Partition, p.ErrorCode, p.RecordBatches, p.RecordBatches == nil)
				}
			}
		}
		if got := resp.Topics[1].Partitions[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d: unknown topic's error %d, want UNKNOWN_TOPIC_OR_PARTITION", v, got)
		}
	}
}
