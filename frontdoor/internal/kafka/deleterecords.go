package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// DeleteRecords v0-v2: refused with POLICY_VIOLATION per partition, the
// code a broker gives for a compacted topic; the response has no message,
// so the reason is in the log. Fluss drops data by its table TTL.
const (
	deleteRecordsKey int16 = 21
	deleteRecordsMin       = 0
	deleteRecordsMax       = 2
)

func deleteRecordsAPI() API {
	return API{Key: deleteRecordsKey, MinVersion: deleteRecordsMin, MaxVersion: deleteRecordsMax, Serve: serveDeleteRecords}
}

func serveDeleteRecords(ctx context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	may := s.mayDo(acl.Describe)
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
	return ready(resp), nil
}
