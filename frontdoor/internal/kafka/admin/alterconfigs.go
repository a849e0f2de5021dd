package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// AlterConfigs v0-v2: refused with POLICY_VIOLATION (refusal.go). A
// topic's configs are its Fluss table's properties; frontdoor's own
// settings are its flags and config file (docs/configuration.md).
const (
	AlterConfigsKey int16 = 33
	AlterConfigsMin       = 0
	AlterConfigsMax       = 2
)

func alterConfigsAPI() kafka.API {
	return kafka.API{Key: AlterConfigsKey, MinVersion: AlterConfigsMin, MaxVersion: AlterConfigsMax, Serve: serveAlterConfigs}
}

func serveAlterConfigs(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	may := s.MayDo(acl.Describe)
	for _, res := range r.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode, rr.ErrorMessage = refuseConfigChange(ctx, s, may, "AlterConfigs", res.ResourceType, res.ResourceName)
		resp.Resources = append(resp.Resources, rr)
	}
	return kafka.Ready(resp), nil
}

// refuseConfigChange is the error and message of a refused config change
// to one resource (AlterConfigs and IncrementalAlterConfigs).
func refuseConfigChange(ctx context.Context, s *kafka.Session, may func(string) bool, api string, typ kmsg.ConfigResourceType, name string) (int16, *string) {
	if typ == kmsg.ConfigResourceTypeTopic {
		code := refuseTopic(ctx, s, may, api, name)
		return code, msgIf(code, ddlRefusal("change topic configs (they are Fluss table properties)"))
	}
	s.Log.Info("refused a config change; frontdoor's settings are its configuration", "api", api, "resource_type", typ.String(), "resource", name)
	msg := "Ferry does not change " + typ.String() + " configs at run time: set them in frontdoor's configuration (see docs/configuration.md)"
	return kerr.PolicyViolation.Code, &msg
}
