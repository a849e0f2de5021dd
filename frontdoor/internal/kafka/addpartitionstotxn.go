package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
)

// AddPartitionsToTxn v0-v3, the client form (v4+ is the brokers' batched
// verification form, which clients do not send). Topics need WRITE; as on
// a broker, when any partition is refused (not authorized, unknown) the
// others are OPERATION_NOT_ATTEMPTED.
const (
	addPartitionsToTxnKey int16 = 24
	addPartitionsToTxnMin       = 0
	addPartitionsToTxnMax       = 3
)

func (h *txnHandlers) addPartitionsToTxn(ctx context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	id, pid, epoch := r.TransactionalID, r.ProducerID, r.ProducerEpoch
	idRefused := authorizeTxnID(ctx, s, acl.Write, id)
	_, denied := authorizeTopics(ctx, s, acl.Write, r.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) string { return t.Topic })
	return Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		codes := map[string]int16{}
		var names []string
		for _, t := range r.Topics {
			if denied[t.Topic] {
				codes[t.Topic] = kerr.TopicAuthorizationFailed.Code
			} else {
				names = append(names, t.Topic)
			}
		}
		var all int16
		if idRefused != nil {
			all = idRefused.Code
		} else if e := h.owned(ctx, id); e != nil {
			all = e.Code
		} else if topics, err := h.groups.catalog.Resolve(ctx, names); err != nil {
			all = kerr.CoordinatorNotAvailable.Code
		} else {
			refused := len(codes) > 0
			for _, t := range r.Topics {
				m := topics[t.Topic].Mapping
				if denied[t.Topic] {
					continue
				}
				ok := m != nil && m.GetFlussPartition() == nil
				for _, p := range t.Partitions {
					ok = ok && p >= 0 && p < m.GetPartitionCount()
				}
				if !ok {
					codes[t.Topic], refused = kerr.UnknownTopicOrPartition.Code, true
				}
			}
			if refused {
				for _, t := range r.Topics {
					if _, bad := codes[t.Topic]; !bad {
						codes[t.Topic] = kerr.OperationNotAttempted.Code
					}
				}
			} else {
				var parts []txn.TopicPartition
				for _, t := range r.Topics {
					for _, p := range t.Partitions {
						parts = append(parts, txn.TopicPartition{Topic: t.Topic, Partition: p})
					}
				}
				all = errCode(h.coord.AddPartitions(id, pid, epoch, parts))
			}
		}
		for _, t := range r.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			code := all
			if all == 0 {
				code = codes[t.Topic]
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if all != 0 {
			s.Log.Info("AddPartitionsToTxn refused", "transactional_id", id, "producer_id", pid, "epoch", epoch,
				"error", kerr.ErrorForCode(all).Error())
		}
		return resp, nil
	}}, nil
}
