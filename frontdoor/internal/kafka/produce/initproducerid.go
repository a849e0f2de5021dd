package produce

import (
	"context"
	"errors"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId v0-v5 (Kafka 4's range; v2+ flexible) gives idempotent
// producers their producer id: a fresh Fluss writer id allocated through
// appendsvc, with epoch 0. Transactional ids are refused: Ferry has no
// transaction coordinator.
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
}

func (h *initProducerIDHandler) api() kafka.API {
	return kafka.API{Key: InitProducerIDKey, MinVersion: InitProducerIDMin, MaxVersion: InitProducerIDMax, Serve: h.serve}
}

func (h *initProducerIDHandler) serve(_ context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		// The response has no message field; the log line says why.
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		s.Log.Info("InitProducerId with a transactional id refused: ferry does not support transactions",
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
