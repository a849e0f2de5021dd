package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartitionReassignments v0-v1: refused with POLICY_VIOLATION and a
// message for the whole request and each partition (electleaders.go).
const (
	alterPartitionReassignmentsKey int16 = 45
	alterPartitionReassignmentsMin       = 0
	alterPartitionReassignmentsMax       = 1
)

func alterPartitionReassignmentsAPI() API {
	return API{Key: alterPartitionReassignmentsKey, MinVersion: alterPartitionReassignmentsMin, MaxVersion: alterPartitionReassignmentsMax,
		Serve: serveAlterPartitionReassignments}
}

func serveAlterPartitionReassignments(_ context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	s.Log.Info("refused a partition reassignment; Fluss places bucket replicas", "topics", len(r.Topics))
	resp.AllowReplicationFactorChange = r.AllowReplicationFactorChange
	resp.ErrorCode, resp.ErrorMessage = kerr.PolicyViolation.Code, kmsg.StringPtr(leadershipRefusal)
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, kerr.PolicyViolation.Code, kmsg.StringPtr(leadershipRefusal)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return ready(resp), nil
}
