package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartitionReassignments v0-v1: refused with POLICY_VIOLATION and a
// message for the whole request and each partition (electleaders.go).
const (
	AlterPartitionReassignmentsKey int16 = 45
	AlterPartitionReassignmentsMin       = 0
	AlterPartitionReassignmentsMax       = 1
)

func alterPartitionReassignmentsAPI() kafka.API {
	return kafka.API{Key: AlterPartitionReassignmentsKey, MinVersion: AlterPartitionReassignmentsMin, MaxVersion: AlterPartitionReassignmentsMax,
		Serve: serveAlterPartitionReassignments}
}

func serveAlterPartitionReassignments(_ context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
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
	return kafka.Ready(resp), nil
}
