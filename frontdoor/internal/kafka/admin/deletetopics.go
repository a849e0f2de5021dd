package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// DeleteTopics v1-v6 (Kafka 4's range): every topic refused with
// POLICY_VIOLATION (refusal.go). v6 names topics by name or by id; an id is
// refused without a lookup, as UNKNOWN_TOPIC_ID would tell no more.
const (
	DeleteTopicsKey int16 = 20
	DeleteTopicsMin       = 1
	DeleteTopicsMax       = 6
)

func deleteTopicsAPI() kafka.API {
	return kafka.API{Key: DeleteTopicsKey, MinVersion: DeleteTopicsMin, MaxVersion: DeleteTopicsMax, Serve: serveDeleteTopics}
}

func serveDeleteTopics(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	may := s.MayDo(acl.Describe)
	msg := ddlRefusal("delete topics")
	answer := func(name *string, id [16]byte) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = name, id
		if name != nil {
			rt.ErrorCode = refuseTopic(ctx, s, may, "DeleteTopics", *name)
		} else {
			s.Log.Info("refused a topic change; topics are changed with Fluss DDL", "api", "DeleteTopics")
			rt.ErrorCode = kerr.PolicyViolation.Code
		}
		rt.ErrorMessage = msgIf(rt.ErrorCode, msg)
		resp.Topics = append(resp.Topics, rt)
	}
	if r.Version < 6 {
		for _, n := range r.TopicNames {
			answer(&n, [16]byte{})
		}
	} else {
		for _, t := range r.Topics {
			answer(t.Topic, t.TopicID)
		}
	}
	return kafka.Ready(resp), nil
}
