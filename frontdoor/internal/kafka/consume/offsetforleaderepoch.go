package consume

import (
	"context"
	"sync"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// OffsetForLeaderEpoch v2-v4 (KIP-320), the versions a Kafka 4 broker
// serves: a consumer asks where the epoch of its position ended, to learn
// whether the log it read was cut short. Partitions have one epoch
// (leaderEpoch), which ends at the high watermark: the end of what a
// consumer can have read.
const (
	offsetForLeaderEpochKey int16 = 23
	OffsetForLeaderEpochMin       = 2
	OffsetForLeaderEpochMax       = 4
)

type offsetForLeaderEpochHandler struct {
	catalog *backends.Catalog
	fetcher *backends.Fetcher
}

func (h *offsetForLeaderEpochHandler) api() kafka.API {
	return kafka.API{Key: offsetForLeaderEpochKey, MinVersion: OffsetForLeaderEpochMin, MaxVersion: OffsetForLeaderEpochMax, Serve: h.serve}
}

func (h *offsetForLeaderEpochHandler) serve(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	log := s.Log
	names, denied := kafka.AuthorizeTopics(ctx, s, acl.Describe, r.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) string { return t.Topic })
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := context.WithTimeout(ctx, fetchGrace)
		defer cancel()
		resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		topics, err := h.catalog.Resolve(ctx, names)
		if err != nil {
			log.Warn("offset for leader epoch: catalog unavailable", "err", err)
		}
		resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, len(r.Topics))
		var wg sync.WaitGroup
		for i, rt := range r.Topics {
			ot := &resp.Topics[i]
			*ot = kmsg.NewOffsetForLeaderEpochResponseTopic()
			ot.Topic = rt.Topic
			ot.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, len(rt.Partitions))
			t, known := topics[rt.Topic]
			code := int16(0)
			switch {
			case denied[rt.Topic]:
				code = kerr.TopicAuthorizationFailed.Code
			case !known:
				code = kerr.NotLeaderForPartition.Code
			case t.Mapping == nil:
				code = orCode(t.ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}
			// The partitions whose epoch ends at the high watermark; the
			// others are answered here.
			q := &fetchv1.ListOffsetsRequest{Mapping: t.Mapping}
			var ask []int
			for j, rp := range rt.Partitions {
				op := &ot.Partitions[j]
				*op = kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				op.Partition = rp.Partition
				switch {
				case code != 0:
					op.ErrorCode = code
				case kafka.CheckLeaderEpoch(rp.CurrentLeaderEpoch) != 0:
					op.ErrorCode = kafka.CheckLeaderEpoch(rp.CurrentLeaderEpoch)
				case rp.LeaderEpoch != kafka.LeaderEpoch:
					// An epoch this partition never had: undefined, as a
					// broker answers an epoch beyond its latest.
				default:
					ask = append(ask, j)
					q.Partitions = append(q.Partitions, &fetchv1.OffsetQuery{Partition: rp.Partition, Timestamp: -1})
				}
			}
			if len(ask) == 0 {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := h.fetcher.ListOffsets(ctx, q)
				if err != nil {
					log.Warn("offset for leader epoch: fetchsvc failed", "topic", rt.Topic, "err", err)
				}
				// fetchsvc answers the queries in order.
				for n, j := range ask {
					op := &ot.Partitions[j]
					if err != nil || n >= len(got.GetPartitions()) {
						op.ErrorCode = kerr.NotLeaderForPartition.Code
						continue
					}
					a := got.GetPartitions()[n]
					if op.ErrorCode = int16(a.GetErrorCode()); op.ErrorCode == 0 {
						op.LeaderEpoch, op.EndOffset = kafka.LeaderEpoch, a.GetOffset()
					}
				}
			}()
		}
		wg.Wait()
		return resp, nil
	}}, nil
}
