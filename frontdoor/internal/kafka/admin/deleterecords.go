package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// DeleteRecords v0-v2: refused with POLICY_VIOLATION per partition, the
// code a broker gives for a compacted topic; the response has no message,
// so the reason is in the log. Fluss drops data by its table TTL.
const (
	DeleteRecordsKey int16 = 21
	DeleteRecordsMin       = 0
	DeleteRecordsMax       = 2
)

func deleteRecordsAPI() kafka.API {
	return kafka.API{Key: DeleteRecordsKey, MinVersion: DeleteRecordsMin, MaxVersion: DeleteRecordsMax, Serve: serveDeleteRecords}
}

func serveDeleteRecords(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	may := s.MayDo(acl.Describe)
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		code := refuseTopic(ctx, s, may, "DeleteRecords", t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark, rp.ErrorCode = p.Partition, -1, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kafka.Ready(resp), nil
}
