package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// IncrementalAlterConfigs v0-v1 (what kafka-configs --alter sends):
// refused like AlterConfigs.
const (
	IncrementalAlterConfigsKey int16 = 44
	IncrementalAlterConfigsMin       = 0
	IncrementalAlterConfigsMax       = 1
)

func incrementalAlterConfigsAPI() kafka.API {
	return kafka.API{Key: IncrementalAlterConfigsKey, MinVersion: IncrementalAlterConfigsMin, MaxVersion: IncrementalAlterConfigsMax, Serve: serveIncrementalAlterConfigs}
}

func serveIncrementalAlterConfigs(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	may := s.MayDo(acl.Describe)
	for _, res := range r.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode, rr.ErrorMessage = refuseConfigChange(ctx, s, may, "IncrementalAlterConfigs", res.ResourceType, res.ResourceName)
		resp.Resources = append(resp.Resources, rr)
	}
	return kafka.Ready(resp), nil
}
