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

// ListOffsets v1-v6: earliest (-2), latest (-1) and by timestamp. v7 adds
// the max-timestamp query (-3), which Fluss cannot answer.
const (
	ListOffsetsKey int16 = 2
	ListOffsetsMin       = 1
	ListOffsetsMax       = 6
)

type listOffsetsHandler struct {
	catalog *backends.Catalog
	fetcher *backends.Fetcher
}

func (h *listOffsetsHandler) api() kafka.API {
	return kafka.API{Key: ListOffsetsKey, MinVersion: ListOffsetsMin, MaxVersion: ListOffsetsMax, Serve: h.serve}
}

func (h *listOffsetsHandler) serve(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	log := s.Log
	names, denied := kafka.AuthorizeTopics(ctx, s, acl.Describe, r.Topics, func(t kmsg.ListOffsetsRequestTopic) string { return t.Topic })
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := context.WithTimeout(ctx, fetchGrace)
		defer cancel()
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		topics, err := h.catalog.Resolve(ctx, names)
		if err != nil {
			log.Warn("list offsets: catalog unavailable", "err", err)
		}
		resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(r.Topics))
		var wg sync.WaitGroup
		for i, rt := range r.Topics {
			ot := &resp.Topics[i]
			*ot = kmsg.NewListOffsetsResponseTopic()
			ot.Topic = rt.Topic
			ot.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(rt.Partitions))
			q := &fetchv1.ListOffsetsRequest{}
			for j, rp := range rt.Partitions {
				op := &ot.Partitions[j]
				*op = kmsg.NewListOffsetsResponseTopicPartition()
				op.Partition, op.Offset, op.Timestamp = rp.Partition, -1, -1
				q.Partitions = append(q.Partitions, &fetchv1.OffsetQuery{Partition: rp.Partition, Timestamp: rp.Timestamp})
			}
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
			if code != 0 {
				for j := range ot.Partitions {
					ot.Partitions[j].ErrorCode = code
				}
				continue
			}
			q.Mapping = t.Mapping
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := h.fetcher.ListOffsets(ctx, q)
				if err != nil {
					log.Warn("list offsets: fetchsvc failed", "topic", rt.Topic, "err", err)
					for j := range ot.Partitions {
						ot.Partitions[j].ErrorCode = kerr.NotLeaderForPartition.Code
					}
					return
				}
				// fetchsvc answers the queries in order.
				for j, a := range got.GetPartitions() {
					if j < len(ot.Partitions) {
						op := &ot.Partitions[j]
						op.ErrorCode, op.Offset, op.Timestamp = int16(a.GetErrorCode()), a.GetOffset(), a.GetTimestamp()
						forgetGoneTable(h.catalog, rt.Topic, t.Mapping, op.Partition, op.ErrorCode)
						if code := kafka.CheckLeaderEpoch(rt.Partitions[j].CurrentLeaderEpoch); code != 0 {
							op.ErrorCode, op.Offset, op.Timestamp = code, -1, -1
						}
						if op.ErrorCode == 0 && op.Offset >= 0 {
							op.LeaderEpoch = kafka.LeaderEpoch // the epoch of the offset's batch (v4+)
						}
					}
				}
			}()
		}
		wg.Wait()
		return resp, nil
	}}, nil
}
