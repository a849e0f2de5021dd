package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions v0-v4. v5 (KIP-1242, cluster id checks on reconnect) is left
// out: a client asking with v5 gets UNSUPPORTED_VERSION and retries with v4.
const (
	ApiVersionsMin = 0
	ApiVersionsMax = 4
)

// ApiVersionsAPI answers from the registry it is part of, so the ranges
// advertised are exactly the ranges served.
func ApiVersionsAPI(reg func() *Registry) API {
	return API{
		Key:        ApiVersionsKey,
		MinVersion: ApiVersionsMin,
		MaxVersion: ApiVersionsMax,
		PreAuth:    true,
		Serve: func(_ context.Context, s *Session, req Request) (Reply, error) {
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.ApiKeys = reg().Ranges()
			if req.Body == nil {
				// A version we do not know: answer as v0 (which every
				// client can parse) with UNSUPPORTED_VERSION and our
				// ranges, so the client retries with our max.
				resp.Version = 0
				resp.ErrorCode = kerr.UnsupportedVersion.Code
				s.Log.Debug("ApiVersions version unsupported; answered with v0", "version", req.Header.Version)
				return Ready(resp), nil
			}
			resp.Version = req.Header.Version
			r := req.Body.(*kmsg.ApiVersionsRequest)
			if r.Version >= 3 && (!validSoftwareField(r.ClientSoftwareName) || !validSoftwareField(r.ClientSoftwareVersion)) {
				// As Kafka: v3+ must name the client software (KIP-511).
				resp.ErrorCode = kerr.InvalidRequest.Code
				s.Log.Info("ApiVersions with invalid client software name or version",
					"software_name", r.ClientSoftwareName, "software_version", r.ClientSoftwareVersion)
			}
			return Ready(resp), nil
		},
	}
}

// validSoftwareField matches KIP-511's [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
func validSoftwareField(v string) bool {
	if v == "" {
		return false
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	if !alnum(v[0]) || !alnum(v[len(v)-1]) {
		return false
	}
	for i := 1; i < len(v)-1; i++ {
		if c := v[i]; !alnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}
