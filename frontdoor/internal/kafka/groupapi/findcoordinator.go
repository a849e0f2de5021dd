package groupapi

import (
	"context"
	"log/slog"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// FindCoordinator v0-v6 (Kafka 4's range). Groups get their coordinator
// (groups.go) when consumer groups are served; transactional ids (key type
// 1) get theirs, chosen the same way, when transactions are (txn.go). It is served even without groups because librdkafka enables lz4
// only when the broker lists FindCoordinator (its KLZ4 feature,
// rdkafka_feature.c); without it librdkafka producers silently send lz4
// batches uncompressed.
const (
	FindCoordinatorKey int16 = 10
	FindCoordinatorMin       = 0
	FindCoordinatorMax       = 6
)

const (
	noTxnCoordinatorMsg   = "ferry has no transaction coordinator: transactions are not supported"
	noGroupCoordinatorMsg = "ferry serves consumer groups only with fetchsvc (frontdoor -fetch-addr)"
	coordinatorKeyGroup   = 0
	coordinatorKeyTxn     = 1
)

type findCoordinatorHandler struct {
	groups *groupHandlers // nil: no consumer groups
	txns   bool           // transactions are served
}

func (h *findCoordinatorHandler) api() kafka.API {
	return kafka.API{Key: FindCoordinatorKey, MinVersion: FindCoordinatorMin, MaxVersion: FindCoordinatorMax, Serve: h.serve}
}

func (h *findCoordinatorHandler) serve(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	// Refusals are decided now, from the session; coordinators later.
	refused := make([]*kerr.Error, len(keys))
	for i, k := range keys {
		switch {
		case r.CoordinatorType == coordinatorKeyGroup && h.groups != nil:
			refused[i] = authorizeGroup(ctx, s, acl.Describe, k)
		case r.CoordinatorType == coordinatorKeyTxn && h.txns:
			refused[i] = kafka.AuthorizeTransactionalID(ctx, s, acl.Describe, k)
		}
	}
	log := s.Log
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		for i, key := range keys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Port = key, -1, -1
			switch {
			case r.CoordinatorType == coordinatorKeyTxn && h.txns && refused[i] != nil:
				c.ErrorCode = refused[i].Code
			case r.CoordinatorType == coordinatorKeyTxn && h.txns:
				c.ErrorCode, c.NodeID, c.Host, c.Port = h.coordinator(ctx, log, key)
			case r.CoordinatorType != coordinatorKeyGroup:
				msg := noTxnCoordinatorMsg
				c.ErrorCode, c.ErrorMessage = kerr.CoordinatorNotAvailable.Code, &msg
			case h.groups == nil:
				msg := noGroupCoordinatorMsg
				c.ErrorCode, c.ErrorMessage = kerr.CoordinatorNotAvailable.Code, &msg
			case refused[i] != nil:
				c.ErrorCode = refused[i].Code
			default:
				c.ErrorCode, c.NodeID, c.Host, c.Port = h.coordinator(ctx, log, key)
			}
			if c.ErrorCode == 0 {
				// As a Kafka 4 broker answers a coordinator found:
				// "NONE" before v4, "" in v4's coordinator list.
				msg := "NONE"
				if r.Version >= 4 {
					msg = ""
				}
				c.ErrorMessage = &msg
			}
			resp.Coordinators = append(resp.Coordinators, c)
		}
		if r.Version < 4 {
			c := resp.Coordinators[0]
			resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
			resp.Coordinators = nil
		}
		return resp, nil
	}}, nil
}

// coordinator finds the frontdoor coordinating key (a group or a
// transactional id): its error code, node id, host and port.
func (h *findCoordinatorHandler) coordinator(ctx context.Context, log *slog.Logger, key string) (int16, int32, string, int32) {
	b, err := h.groups.coordinatorOf(ctx, key)
	if err != nil {
		log.Warn("find coordinator: catalog unavailable", "err", err)
		return kerr.CoordinatorNotAvailable.Code, -1, "", -1
	}
	return 0, b.GetNodeId(), b.GetHost(), b.GetPort()
}
