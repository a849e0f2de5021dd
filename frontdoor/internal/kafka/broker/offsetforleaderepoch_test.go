package broker

import (
	"testing"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/consume"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetForLeaderEpoch: the one epoch ends at the high watermark; an
// epoch the partition never had is undefined; a client ahead of the
// epoch must refresh (in Fetch and ListOffsets too); unknown topics are
// refused.
func TestOffsetForLeaderEpoch(t *testing.T) {
	fl := &fakeLog{parts: map[string][]string{}}
	h := newHarness(t, harnessOpts{fetcher: fl})
	fl.add("orders", 1, "a", "b", "c")
	c := dialRaw(t, h.addr)
	for v := int16(consume.OffsetForLeaderEpochMin); v <= consume.OffsetForLeaderEpochMax; v++ {
		r := kmsg.NewPtrOffsetForLeaderEpochRequest()
		r.Version, r.ReplicaID = v, -1
		ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
		ot.Topic = "orders"
		for _, p := range []struct{ part, current, epoch int32 }{{1, 0, 0}, {1, -1, 0}, {0, 0, 0}, {1, 0, 3}, {1, 1, 0}} {
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p.part, p.current, p.epoch
			ot.Partitions = append(ot.Partitions, rp)
		}
		missing := kmsg.NewOffsetForLeaderEpochRequestTopic()
		missing.Topic = "missing"
		missing.Partitions = ot.Partitions[:1]
		r.Topics = append(r.Topics, ot, missing)
		resp := c.roundTrip(r).(*kmsg.OffsetForLeaderEpochResponse)
		if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 5 {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
		want := []struct {
			code   int16
			epoch  int32
			offset int64
		}{{0, 0, 3}, {0, 0, 3}, {0, 0, 0}, {0, -1, -1}, {kerr.UnknownLeaderEpoch.Code, -1, -1}}
		for i, w := range want {
			p := resp.Topics[0].Partitions[i]
			if p.ErrorCode != w.code || p.LeaderEpoch != w.epoch || p.EndOffset != w.offset {
				t.Errorf("v%d partition entry %d: error %d epoch %d end %d, want %+v", v, i, p.ErrorCode, p.LeaderEpoch, p.EndOffset, w)
			}
		}
		if p := resp.Topics[1].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code || p.EndOffset != -1 {
			t.Errorf("v%d missing topic: %+v", v, p)
		}
	}

	// Fetch and ListOffsets check the client's epoch the same way.
	f := kmsg.NewPtrFetchRequest()
	f.Version, f.MaxBytes, f.SessionEpoch = 12, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	for _, current := range []int32{1, 0, -1} {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.CurrentLeaderEpoch, fp.PartitionMaxBytes = 1, current, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	f.Topics = append(f.Topics, ft)
	fr := c.roundTrip(f).(*kmsg.FetchResponse)
	// The same partition three times: the later two are duplicates.
	if got := fr.Topics[0].Partitions[0].ErrorCode; got != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("fetch with epoch 1: error %d", got)
	}
	if p := fr.Topics[0].Partitions[1]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Errorf("fetch with epoch 0: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version, lo.ReplicaID = 6, -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "orders"
	for _, current := range []int32{1, 0} {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.CurrentLeaderEpoch, lp.Timestamp = 1, current, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	lr := c.roundTrip(lo).(*kmsg.ListOffsetsResponse)
	if p := lr.Topics[0].Partitions; p[0].ErrorCode != kerr.UnknownLeaderEpoch.Code || p[0].Offset != -1 || p[0].LeaderEpoch != -1 ||
		p[1].ErrorCode != 0 || p[1].Offset != 3 || p[1].LeaderEpoch != kafka.LeaderEpoch {
		t.Errorf("list offsets: %+v", p)
	}

	md := c.roundTrip(mdReq(12, "orders")).(*kmsg.MetadataResponse)
	for _, p := range md.Topics[0].Partitions {
		if p.LeaderEpoch != kafka.LeaderEpoch {
			t.Errorf("metadata partition %d: epoch %d", p.Partition, p.LeaderEpoch)
		}
	}
}
