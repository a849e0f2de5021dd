package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// DescribeLogDirs v1-v5 (v5's is_cordoned is always false): frontdoor keeps
// no log on disk; the data is in Fluss, which does not report bucket sizes
// to Ferry. The answer is one directory, flussLogDir, with unknown volume
// sizes (-1, as Kafka marks them) and no partition sizes. An answer without
// any directory would not do: the Java client reads it as
// CLUSTER_AUTHORIZATION_FAILED.
const (
	describeLogDirsKey int16 = 35
	describeLogDirsMin       = 1
	describeLogDirsMax       = 5
	flussLogDir              = "fluss"
)

func describeLogDirsAPI() API {
	return API{Key: describeLogDirsKey, MinVersion: describeLogDirsMin, MaxVersion: describeLogDirsMax, Serve: serveDescribeLogDirs}
}

func serveDescribeLogDirs(ctx context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if principal := acl.Principal(s.User); s.authz != nil && !s.authz.AllowedCluster(principal, acl.Describe) {
		s.Log.Warn("not authorized", "principal", principal, "operation", "DESCRIBE", "resource", "cluster")
		if s.denied != nil {
			s.denied(ctx, acl.Describe)
		}
		// v1-v2 have no error code: an empty answer, as a broker gives.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return ready(resp), nil
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir, dir.TotalBytes, dir.UsableBytes = flussLogDir, -1, -1
	dir.Topics = []kmsg.DescribeLogDirsResponseDirTopic{}
	resp.Dirs = append(resp.Dirs, dir)
	return ready(resp), nil
}
