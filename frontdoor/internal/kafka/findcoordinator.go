package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator v0-v6 (Kafka 4's range) answers that no coordinator is
// available, which is true: Ferry has no consumer groups and no
// transactions. It is served because librdkafka enables lz4 only when the
// broker lists FindCoordinator (its KLZ4 feature, rdkafka_feature.c);
// without it librdkafka producers silently send lz4 batches uncompressed.
const (
	findCoordinatorKey int16 = 10
	findCoordinatorMin       = 0
	findCoordinatorMax       = 6
)

const noCoordinatorMsg = "ferry has no group or transaction coordinator: it accepts produce only"

func findCoordinatorAPI() API {
	return API{
		Key:        findCoordinatorKey,
		MinVersion: findCoordinatorMin,
		MaxVersion: findCoordinatorMax,
		Serve: func(_ context.Context, s *Session, req Request) (Reply, error) {
			r := req.Body.(*kmsg.FindCoordinatorRequest)
			resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
			msg := noCoordinatorMsg
			code := kerr.CoordinatorNotAvailable.Code
			if r.Version < 4 {
				resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Port = code, &msg, -1, -1
			}
			for _, key := range r.CoordinatorKeys {
				c := kmsg.NewFindCoordinatorResponseCoordinator()
				c.Key, c.NodeID, c.Port, c.ErrorCode, c.ErrorMessage = key, -1, -1, code, &msg
				resp.Coordinators = append(resp.Coordinators, c)
			}
			s.Log.Debug("FindCoordinator answered COORDINATOR_NOT_AVAILABLE", "type", r.CoordinatorType)
			return ready(resp), nil
		},
	}
}
