package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListPartitionReassignments v0: always none. Buckets move between Fluss
// tablet servers under Fluss's control, never through Kafka.
const (
	listPartitionReassignmentsKey int16 = 46
	listPartitionReassignmentsMin       = 0
	listPartitionReassignmentsMax       = 0
)

func listPartitionReassignmentsAPI() API {
	return API{Key: listPartitionReassignmentsKey, MinVersion: listPartitionReassignmentsMin, MaxVersion: listPartitionReassignmentsMax,
		Serve: func(_ context.Context, _ *Session, req Request) (Reply, error) {
			resp := req.Body.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
			resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{}
			return ready(resp), nil
		}}
}
