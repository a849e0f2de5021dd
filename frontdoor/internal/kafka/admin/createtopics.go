package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// CreateTopics v2-v7 (Kafka 4's range): every topic refused with
// POLICY_VIOLATION, validate_only included (refusal.go).
const (
	CreateTopicsKey int16 = 19
	CreateTopicsMin       = 2
	CreateTopicsMax       = 7
)

func createTopicsAPI() kafka.API {
	return kafka.API{Key: CreateTopicsKey, MinVersion: CreateTopicsMin, MaxVersion: CreateTopicsMax, Serve: serveCreateTopics}
}

func serveCreateTopics(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	may := s.MayDo(acl.Describe)
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.ErrorCode = refuseTopic(ctx, s, may, "CreateTopics", t.Topic)
		rt.ErrorMessage = msgIf(rt.ErrorCode, ddlRefusal("create topics"))
		resp.Topics = append(resp.Topics, rt)
	}
	return kafka.Ready(resp), nil
}
