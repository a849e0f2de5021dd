package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// DescribeLogDirs v1-v4: frontdoor keeps no log on disk (the data is in
// Fluss, which does not report bucket sizes to Ferry), so the answer is a
// broker with no log directories. kafka-log-dirs then prints an empty
// logDirs list rather than failing.
const (
	describeLogDirsKey int16 = 35
	describeLogDirsMin       = 1
	describeLogDirsMax       = 4
)

func describeLogDirsAPI() API {
	return API{Key: describeLogDirsKey, MinVersion: describeLogDirsMin, MaxVersion: describeLogDirsMax, Serve: serveDescribeLogDirs}
}

func serveDescribeLogDirs(ctx context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{}
	if principal := acl.Principal(s.User); s.authz != nil && !s.authz.AllowedCluster(principal, acl.Describe) {
		s.Log.Warn("not authorized", "principal", principal, "operation", "DESCRIBE", "resource", "cluster")
		if s.denied != nil {
			s.denied(ctx, acl.Describe)
		}
		// v1-v2 have no error code: an empty answer, as a broker gives.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	}
	return ready(resp), nil
}
