package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListPartitionReassignments v0: always none. Buckets move between Fluss
// tablet servers under Fluss's control, never through Kafka.
const (
	ListPartitionReassignmentsKey int16 = 46
	ListPartitionReassignmentsMin       = 0
	ListPartitionReassignmentsMax       = 0
)

func listPartitionReassignmentsAPI() kafka.API {
	return kafka.API{Key: ListPartitionReassignmentsKey, MinVersion: ListPartitionReassignmentsMin, MaxVersion: ListPartitionReassignmentsMax,
		Serve: func(_ context.Context, _ *kafka.Session, req kafka.Request) (kafka.Reply, error) {
			resp := req.Body.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
			resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{}
			return kafka.Ready(resp), nil
		}}
}
