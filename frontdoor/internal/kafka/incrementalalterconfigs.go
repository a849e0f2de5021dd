package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// IncrementalAlterConfigs v0-v1 (what kafka-configs --alter sends):
// refused like AlterConfigs.
const (
	incrementalAlterConfigsKey int16 = 44
	incrementalAlterConfigsMin       = 0
	incrementalAlterConfigsMax       = 1
)

func incrementalAlterConfigsAPI() API {
	return API{Key: incrementalAlterConfigsKey, MinVersion: incrementalAlterConfigsMin, MaxVersion: incrementalAlterConfigsMax, Serve: serveIncrementalAlterConfigs}
}

func serveIncrementalAlterConfigs(ctx context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	may := s.mayDo(acl.Describe)
	for _, res := range r.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode, rr.ErrorMessage = refuseConfigChange(ctx, s, may, "IncrementalAlterConfigs", res.ResourceType, res.ResourceName)
		resp.Resources = append(resp.Resources, rr)
	}
	return ready(resp), nil
}
