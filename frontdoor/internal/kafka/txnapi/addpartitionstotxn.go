package txnapi

import (
	"context"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
)

// AddPartitionsToTxn v0-v5. v0-v3 is the client form (one transaction);
// v4+ is the brokers' batched form (several transactions, each possibly
// verify_only), which needs CLUSTER_ACTION on a broker: with an ACL file,
// which has no such rule, it is CLUSTER_AUTHORIZATION_FAILED. Topics need
// WRITE; as on a broker, when any partition of a transaction is refused
// (not authorized, unknown) the others are OPERATION_NOT_ATTEMPTED.
const (
	AddPartitionsToTxnKey int16 = 24
	AddPartitionsToTxnMin       = 0
	AddPartitionsToTxnMax       = 5
)

// txnAdd is one transaction's part of an AddPartitionsToTxn.
type txnAdd struct {
	id         string
	pid        int64
	epoch      int16
	verifyOnly bool
	topics     []string
	parts      [][]int32
	idRefused  *kerr.Error
	denied     map[string]bool
}

func (h *txnHandlers) addPartitionsToTxn(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var adds []*txnAdd
	if r.Version < 4 {
		a := &txnAdd{id: r.TransactionalID, pid: r.ProducerID, epoch: r.ProducerEpoch}
		for _, t := range r.Topics {
			a.topics, a.parts = append(a.topics, t.Topic), append(a.parts, t.Partitions)
		}
		adds = append(adds, a)
	} else {
		if s.Authz != nil {
			s.Log.Warn("not authorized", "principal", acl.Principal(s.User), "operation", "CLUSTER_ACTION", "api", "AddPartitionsToTxn v4+")
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return kafka.Ready(resp), nil
		}
		for _, tr := range r.Transactions {
			a := &txnAdd{id: tr.TransactionalID, pid: tr.ProducerID, epoch: tr.ProducerEpoch, verifyOnly: tr.VerifyOnly}
			for _, t := range tr.Topics {
				a.topics, a.parts = append(a.topics, t.Topic), append(a.parts, t.Partitions)
			}
			adds = append(adds, a)
		}
	}
	for _, a := range adds {
		a.idRefused = kafka.AuthorizeTransactionalID(ctx, s, acl.Write, a.id)
		_, a.denied = kafka.AuthorizeTopics(ctx, s, acl.Write, a.topics, func(t string) string { return t })
	}
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		for _, a := range adds {
			codes := h.addOne(ctx, a)
			if e := firstCode(codes); e != 0 {
				s.Log.Info("AddPartitionsToTxn refused", "transactional_id", a.id, "producer_id", a.pid, "epoch", a.epoch,
					"verify_only", a.verifyOnly, "error", kerr.ErrorForCode(e).Error())
			}
			if r.Version < 4 {
				for i, t := range a.topics {
					rt := kmsg.NewAddPartitionsToTxnResponseTopic()
					rt.Topic = t
					for j, p := range a.parts[i] {
						rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
						rp.Partition, rp.ErrorCode = p, codes[i][j]
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
				continue
			}
			rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rtx.TransactionalID = a.id
			for i, t := range a.topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rt.Topic = t
				for j, p := range a.parts[i] {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition, rp.ErrorCode = p, codes[i][j]
					rt.Partitions = append(rt.Partitions, rp)
				}
				rtx.Topics = append(rtx.Topics, rt)
			}
			resp.Transactions = append(resp.Transactions, rtx)
		}
		return resp, nil
	}}, nil
}

// addOne adds (or verifies) one transaction's partitions and returns the
// error code of each, by topic then partition.
func (h *txnHandlers) addOne(ctx context.Context, a *txnAdd) [][]int16 {
	codes := make([][]int16, len(a.topics))
	for i := range a.topics {
		codes[i] = make([]int16, len(a.parts[i]))
	}
	setAll := func(code int16) [][]int16 {
		for i := range codes {
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
		return codes
	}
	if a.idRefused != nil {
		return setAll(a.idRefused.Code)
	}
	if e := h.Owned(ctx, a.id); e != nil {
		return setAll(e.Code)
	}
	var names []string
	for _, t := range a.topics {
		if !a.denied[t] {
			names = append(names, t)
		}
	}
	topics, err := h.catalog.Resolve(ctx, names)
	if err != nil {
		return setAll(kerr.CoordinatorNotAvailable.Code)
	}
	refused := false
	for i, t := range a.topics {
		m := topics[t].Mapping
		ok := !a.denied[t] && m != nil && m.GetFlussPartition() == nil
		for _, p := range a.parts[i] {
			ok = ok && p >= 0 && p < m.GetPartitionCount()
		}
		switch {
		case a.denied[t]:
			refused = true
			for j := range codes[i] {
				codes[i][j] = kerr.TopicAuthorizationFailed.Code
			}
		case !ok:
			refused = true
			for j := range codes[i] {
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			}
		}
	}
	if refused {
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == 0 {
					codes[i][j] = kerr.OperationNotAttempted.Code
				}
			}
		}
		return codes
	}
	var parts []txn.TopicPartition
	for i, t := range a.topics {
		for _, p := range a.parts[i] {
			parts = append(parts, txn.TopicPartition{Topic: t, Partition: p})
		}
	}
	if !a.verifyOnly {
		return setAll(errCode(h.coord.AddPartitions(a.id, a.pid, a.epoch, parts)))
	}
	in, e := h.coord.Verify(a.id, a.pid, a.epoch, parts)
	if e != nil {
		return setAll(e.Code)
	}
	for i, t := range a.topics {
		for j, p := range a.parts[i] {
			if !in[txn.TopicPartition{Topic: t, Partition: p}] {
				codes[i][j] = kerr.InvalidTxnState.Code
			}
		}
	}
	return codes
}

// firstCode is the first non-zero code, 0 if none.
func firstCode(codes [][]int16) int16 {
	for _, cs := range codes {
		for _, c := range cs {
			if c != 0 {
				return c
			}
		}
	}
	return 0
}
