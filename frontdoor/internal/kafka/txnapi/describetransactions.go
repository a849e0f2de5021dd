package txnapi

import (
	"context"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// DescribeTransactions v0: the state of transactional ids this frontdoor
// coordinates (kafka-transactions describe). An unknown id is
// TRANSACTIONAL_ID_NOT_FOUND, one coordinated elsewhere NOT_COORDINATOR.
const (
	DescribeTransactionsKey int16 = 65
	DescribeTransactionsMin       = 0
	DescribeTransactionsMax       = 0
)

func (h *txnHandlers) describeTransactions(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	refused := make([]*kerr.Error, len(r.TransactionalIDs))
	for i, id := range r.TransactionalIDs {
		refused[i] = kafka.AuthorizeTransactionalID(ctx, s, acl.Describe, id)
	}
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		for i, id := range r.TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
			in, found := h.coord.Describe(id)
			switch e := h.Owned(ctx, id); {
			case refused[i] != nil:
				st.ErrorCode = refused[i].Code
			case e != nil:
				st.ErrorCode = e.Code
			case !found:
				st.ErrorCode = kerr.TransactionalIDNotFound.Code
			default:
				st.State = in.State.String()
				st.TimeoutMillis = int32(in.Timeout.Milliseconds())
				st.ProducerID, st.ProducerEpoch = in.ProducerID, in.Epoch
				if !in.Started.IsZero() {
					st.StartTimestamp = in.Started.UnixMilli()
				}
				byTopic := map[string]int{}
				for _, p := range in.Partitions {
					i, ok := byTopic[p.Topic]
					if !ok {
						i = len(st.Topics)
						byTopic[p.Topic] = i
						t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
						t.Topic = p.Topic
						st.Topics = append(st.Topics, t)
					}
					st.Topics[i].Partitions = append(st.Topics[i].Partitions, p.Partition)
				}
			}
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp, nil
	}}, nil
}
