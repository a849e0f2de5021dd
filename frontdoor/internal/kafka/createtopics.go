package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// CreateTopics v2-v7 (Kafka 4's range): every topic refused with
// POLICY_VIOLATION, validate_only included (refusal.go).
const (
	createTopicsKey int16 = 19
	createTopicsMin       = 2
	createTopicsMax       = 7
)

func createTopicsAPI() API {
	return API{Key: createTopicsKey, MinVersion: createTopicsMin, MaxVersion: createTopicsMax, Serve: serveCreateTopics}
}

func serveCreateTopics(ctx context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	may := s.mayDo(acl.Describe)
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.ErrorCode = refuseTopic(ctx, s, may, "CreateTopics", t.Topic)
		rt.ErrorMessage = msgIf(rt.ErrorCode, ddlRefusal("create topics"))
		resp.Topics = append(resp.Topics, rt)
	}
	return ready(resp), nil
}
