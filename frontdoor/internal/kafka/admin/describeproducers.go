package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
)

// DescribeProducers v0 (kafka-transactions describe-producers): the
// idempotent producers this frontdoor holds state for on each partition.
// No partition log holds an open transaction (transactional batches are
// written when they commit, docs/transactions.md), so coordinator epoch
// and transaction start offset are always -1.
const (
	DescribeProducersKey int16 = 61
	DescribeProducersMin       = 0
	DescribeProducersMax       = 0
)

type describeProducersHandler struct {
	catalog *backends.Catalog
	// states is nil when frontdoor runs with idempotence off: no producer
	// has state then.
	states *idempotence.States
}

func (h *describeProducersHandler) api() kafka.API {
	return kafka.API{Key: DescribeProducersKey, MinVersion: DescribeProducersMin, MaxVersion: DescribeProducersMax, Serve: h.serve}
}

func (h *describeProducersHandler) serve(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.DescribeProducersRequest)
	// Kafka asks for READ on the topic.
	mayRead := s.MayDo(acl.Read)
	var names []string
	refused := map[string]bool{}
	for _, t := range r.Topics {
		if !mayRead(t.Topic) {
			refused[t.Topic] = true
			s.Refused(ctx, acl.Read, t.Topic)
		} else {
			names = append(names, t.Topic)
		}
	}
	log := s.Log
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
		found, err := h.catalog.Resolve(ctx, names)
		if err != nil {
			log.Warn("describe producers: catalog unavailable", "err", err)
		}
		for _, t := range r.Topics {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			m := found[t.Topic].Mapping
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition = p
				switch {
				case refused[t.Topic]:
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case err != nil:
					rp.ErrorCode = kerr.LeaderNotAvailable.Code
				case m == nil || p < 0 || p >= m.GetPartitionCount():
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case h.states != nil:
					for _, pr := range h.states.Producers(t.Topic, p) {
						ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
						ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pr.ID, int32(pr.Epoch), pr.LastSequence
						ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pr.LastUsed.UnixMilli(), -1, -1
						rp.ActiveProducers = append(rp.ActiveProducers, ap)
					}
				}
				if rp.ErrorCode != 0 {
					// A broker sends the error's standard text.
					rp.ErrorMessage = kmsg.StringPtr(kerr.ErrorForCode(rp.ErrorCode).(*kerr.Error).Description)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}}, nil
}
