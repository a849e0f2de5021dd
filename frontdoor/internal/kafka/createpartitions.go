package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// CreatePartitions v0-v3: refused with POLICY_VIOLATION (refusal.go); a
// topic's partitions are its Fluss table's buckets, fixed at creation.
const (
	createPartitionsKey int16 = 37
	createPartitionsMin       = 0
	createPartitionsMax       = 3
)

func createPartitionsAPI() API {
	return API{Key: createPartitionsKey, MinVersion: createPartitionsMin, MaxVersion: createPartitionsMax, Serve: serveCreatePartitions}
}

func serveCreatePartitions(ctx context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	may := s.mayDo(acl.Describe)
	for _, t := range r.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		rt.ErrorCode = refuseTopic(ctx, s, may, "CreatePartitions", t.Topic)
		rt.ErrorMessage = msgIf(rt.ErrorCode, ddlRefusal("add partitions (they are the Fluss table's buckets)"))
		resp.Topics = append(resp.Topics, rt)
	}
	return ready(resp), nil
}
