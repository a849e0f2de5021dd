package broker

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// goneFetch answers every partition of every Read and ListOffsets with
// code.
type goneFetch struct {
	fetchv1.UnimplementedFetchServiceServer
	code int16
}

func (f *goneFetch) Read(_ context.Context, r *fetchv1.ReadRequest) (*fetchv1.ReadResponse, error) {
	resp := &fetchv1.ReadResponse{}
	for _, t := range r.GetTopics() {
		tr := &fetchv1.TopicRecords{Topic: t.GetMapping().GetTopic()}
		for _, p := range t.GetPartitions() {
			tr.Partitions = append(tr.Partitions, &fetchv1.PartitionRecords{Partition: p.GetPartition(), ErrorCode: int32(f.code), HighWatermark: -1, LogStartOffset: -1})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

func (f *goneFetch) ListOffsets(_ context.Context, r *fetchv1.ListOffsetsRequest) (*fetchv1.ListOffsetsResponse, error) {
	resp := &fetchv1.ListOffsetsResponse{}
	for _, q := range r.GetPartitions() {
		resp.Partitions = append(resp.Partitions, &fetchv1.OffsetAnswer{Partition: q.GetPartition(), ErrorCode: int32(f.code), Offset: -1, Timestamp: -1})
	}
	return resp, nil
}

// TestReadOfGoneTableAsksCatalogAgain: when fetchsvc answers a partition of
// a known topic UNKNOWN_TOPIC_OR_PARTITION (its table was dropped, perhaps
// created again), the next Fetch or ListOffsets of the topic asks catalogsvc
// again naming the table id as stale, instead of reading the old table
// until the cached mapping expires. A partition the topic does not have, or
// another error, keeps the mapping.
func TestReadOfGoneTableAsksCatalogAgain(t *testing.T) {
	fetch := func(partition int32) kmsg.Request {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.ReplicaID, req.SessionEpoch = -1, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = partition, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	listOffsets := func(partition int32) kmsg.Request {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(6)
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = partition, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	for _, tc := range []struct {
		name      string
		req       func(int32) kmsg.Request
		code      int16
		partition int32
		stale     bool
	}{
		{"fetch, table gone", fetch, kerr.UnknownTopicOrPartition.Code, 1, true},
		{"list offsets, table gone", listOffsets, kerr.UnknownTopicOrPartition.Code, 1, true},
		{"fetch, no such partition", fetch, kerr.UnknownTopicOrPartition.Code, 9, false},
		{"list offsets, no such partition", listOffsets, kerr.UnknownTopicOrPartition.Code, 9, false},
		{"fetch, leader lost", fetch, kerr.NotLeaderForPartition.Code, 1, false},
		{"list offsets, leader lost", listOffsets, kerr.NotLeaderForPartition.Code, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{fetcher: &goneFetch{code: tc.code}})
			c := dialRaw(t, h.addr)
			c.roundTrip(tc.req(tc.partition)) // resolves orders (table 100) and reads it
			h.cat.Mu.Lock()
			h.cat.LastStale = nil
			h.cat.Mu.Unlock()
			before := h.cat.Resolves.Load()
			c.roundTrip(tc.req(tc.partition))
			h.cat.Mu.Lock()
			stale := slices.Clone(h.cat.LastStale)
			h.cat.Mu.Unlock()
			asked := h.cat.Resolves.Load() > before
			if tc.stale && (!asked || !slices.Equal(stale, []int64{100})) {
				t.Errorf("second request: catalogsvc asked %v, stale tables %v; want asked naming [100]", asked, stale)
			}
			if !tc.stale && asked {
				t.Errorf("second request asked catalogsvc again (stale tables %v); want the cached mapping", stale)
			}
		})
	}
}
