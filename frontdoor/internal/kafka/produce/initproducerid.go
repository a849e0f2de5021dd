package produce

import (
	"context"
	"errors"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId v0-v5 (Kafka 4's range; v2+ flexible) gives idempotent
// producers their producer id: a fresh Fluss writer id allocated through
// appendsvc, with epoch 0. A transactional id goes to the transaction
// coordinator (package txn), which bumps the id's epoch to fence the previous
// producer; without one (no fetchsvc) it is refused.
const (
	InitProducerIDKey int16 = 22
	InitProducerIDMin       = 0
	InitProducerIDMax       = 5
)

// initProducerIDTimeout bounds one allocation (a round trip to appendsvc
// and from there to Fluss's coordinator).
const initProducerIDTimeout = 30 * time.Second

type initProducerIDHandler struct {
	states *idempotence.States
	// txns, when transactions are served, is their coordinator and owned
	// tells whether this frontdoor coordinates a transactional id.
	txns  *txn.Coordinator
	owned func(ctx context.Context, id string) *kerr.Error
}

func (h *initProducerIDHandler) api() kafka.API {
	return kafka.API{Key: InitProducerIDKey, MinVersion: InitProducerIDMin, MaxVersion: InitProducerIDMax, Serve: h.serve}
}

func (h *initProducerIDHandler) serve(_ context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil && h.txns != nil {
		return h.initTransactional(s, r, resp), nil
	}
	if r.TransactionalID != nil {
		// The response has no message field; the log line says why.
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		s.Log.Info("InitProducerId with a transactional id refused: transactions need consumer groups (frontdoor -fetch-addr)",
			"transactional_id", *r.TransactionalID)
		return kafka.Ready(resp), nil
	}
	log := s.Log
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := context.WithTimeout(ctx, initProducerIDTimeout)
		defer cancel()
		// A request naming its current id and epoch (v3+, after
		// UNKNOWN_PRODUCER_ID or a fatal sequence error) also gets a new
		// producer: a fresh writer is what the old epoch's state cannot
		// get in the way of, and every client accepts a new id here.
		id, err := h.states.NewProducer(ctx)
		if err != nil {
			switch {
			case errors.Is(err, backends.ErrWriterIDsUnsupported):
				resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			case ctx.Err() != nil:
				resp.ErrorCode = kerr.RequestTimedOut.Code
			default:
				// Retriable for every client: they ask again.
				resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			}
			log.Warn("InitProducerId: allocating a Fluss writer id failed", "err", err,
				"answer", kerr.ErrorForCode(resp.ErrorCode).Error())
			return resp, nil
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		log.Debug("InitProducerId: producer id allocated", "producer_id", id,
			"previous_producer_id", r.ProducerID, "previous_epoch", r.ProducerEpoch)
		return resp, nil
	}}, nil
}

// initTransactional gives a transactional producer its id and epoch.
func (h *initProducerIDHandler) initTransactional(s *kafka.Session, r *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) kafka.Reply {
	id := *r.TransactionalID
	if id == "" {
		// As Kafka's coordinator answers an empty transactional id.
		resp.ErrorCode = kerr.InvalidRequest.Code
		s.Log.Info("InitProducerId with an empty transactional id refused")
		return kafka.Ready(resp)
	}
	if e := kafka.AuthorizeTransactionalID(context.Background(), s, acl.Write, id); e != nil {
		resp.ErrorCode = e.Code
		return kafka.Ready(resp)
	}
	expectID, expectEpoch := int64(-1), int16(-1)
	if r.Version >= 3 {
		expectID, expectEpoch = r.ProducerID, r.ProducerEpoch
	}
	log := s.Log
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := context.WithTimeout(ctx, initProducerIDTimeout)
		defer cancel()
		e := h.owned(ctx, id)
		if e == nil {
			timeout := time.Duration(r.TransactionTimeoutMillis) * time.Millisecond
			resp.ProducerID, resp.ProducerEpoch, e = h.txns.InitProducer(ctx, id, timeout, expectID, expectEpoch)
		}
		if e != nil {
			resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = -1, -1, e.Code
			log.Info("InitProducerId with a transactional id refused", "transactional_id", id, "error", e.Error())
		}
		return resp, nil
	}}
}
