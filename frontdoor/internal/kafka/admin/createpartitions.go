package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// CreatePartitions v0-v3: refused with POLICY_VIOLATION (refusal.go); a
// topic's partitions are its Fluss table's buckets, fixed at creation.
const (
	CreatePartitionsKey int16 = 37
	CreatePartitionsMin       = 0
	CreatePartitionsMax       = 3
)

func createPartitionsAPI() kafka.API {
	return kafka.API{Key: CreatePartitionsKey, MinVersion: CreatePartitionsMin, MaxVersion: CreatePartitionsMax, Serve: serveCreatePartitions}
}

func serveCreatePartitions(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	may := s.MayDo(acl.Describe)
	for _, t := range r.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		rt.ErrorCode = refuseTopic(ctx, s, may, "CreatePartitions", t.Topic)
		rt.ErrorMessage = msgIf(rt.ErrorCode, ddlRefusal("add partitions (they are the Fluss table's buckets)"))
		resp.Topics = append(resp.Topics, rt)
	}
	return kafka.Ready(resp), nil
}
