package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

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
	DescribeLogDirsKey int16 = 35
	DescribeLogDirsMin       = 1
	DescribeLogDirsMax       = 5
	flussLogDir              = "fluss"
)

func describeLogDirsAPI() kafka.API {
	return kafka.API{Key: DescribeLogDirsKey, MinVersion: DescribeLogDirsMin, MaxVersion: DescribeLogDirsMax, Serve: serveDescribeLogDirs}
}

func serveDescribeLogDirs(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if principal := acl.Principal(s.User); s.Authz != nil && !s.Authz.AllowedCluster(principal, acl.Describe) {
		s.Log.Warn("not authorized", "principal", principal, "operation", "DESCRIBE", "resource", "cluster")
		if s.Denied != nil {
			s.Denied(ctx, acl.Describe)
		}
		// v1-v2 have no error code: an empty answer, as a broker gives.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return kafka.Ready(resp), nil
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir, dir.TotalBytes, dir.UsableBytes = flussLogDir, -1, -1
	dir.Topics = []kmsg.DescribeLogDirsResponseDirTopic{}
	resp.Dirs = append(resp.Dirs, dir)
	return kafka.Ready(resp), nil
}
