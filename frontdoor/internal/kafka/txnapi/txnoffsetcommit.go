package txnapi

import (
	"context"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/groupapi"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// TxnOffsetCommit v0-v5: offsets staged in the transaction, which become
// the group's committed offsets when it commits. Sent to the group's
// coordinator; needs READ on the group and on each topic. v6 (topics by
// id) is not served, as OffsetCommit v10 is not.
const (
	TxnOffsetCommitKey int16 = 28
	TxnOffsetCommitMin       = 0
	TxnOffsetCommitMax       = 5
)

func (h *txnHandlers) txnOffsetCommit(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	codes := map[string]int16{}
	answer := func(all int16) kmsg.Response {
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, all
				if all == 0 {
					rp.ErrorCode = codes[t.Topic]
					if rp.ErrorCode == 0 && p.Metadata != nil && len(*p.Metadata) > groupapi.MaxOffsetMetadata {
						rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	e := kafka.AuthorizeTransactionalID(ctx, s, acl.Write, r.TransactionalID)
	if e == nil {
		e = groupapi.AuthorizeGroup(ctx, s, acl.Read, r.Group)
	}
	if e != nil {
		return kafka.Ready(answer(e.Code)), nil
	}
	_, denied := kafka.AuthorizeTopics(ctx, s, acl.Read, r.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) string { return t.Topic })
	for t := range denied {
		codes[t] = kerr.TopicAuthorizationFailed.Code
	}
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		if e := h.groups.Owned(ctx, r.Group); e != nil {
			return answer(e.Code), nil
		}
		var offsets []*fetchv1.CommittedOffset
		for _, t := range r.Topics {
			if codes[t.Topic] != 0 {
				continue
			}
			for _, p := range t.Partitions {
				if p.Metadata != nil && len(*p.Metadata) > groupapi.MaxOffsetMetadata {
					continue
				}
				offsets = append(offsets, &fetchv1.CommittedOffset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
					LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata})
			}
		}
		if e := h.coord.StageOffsets(r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group, offsets); e != nil {
			s.Log.Info("TxnOffsetCommit refused", "transactional_id", r.TransactionalID, "group", r.Group, "error", e.Error())
			return answer(e.Code), nil
		}
		return answer(0), nil
	}}, nil
}
