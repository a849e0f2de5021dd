package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ElectLeaders v0-v2: refused with POLICY_VIOLATION per partition (and at
// the top for "every partition", v1+): Fluss elects bucket leaders, and a
// partition's leader in Metadata is a frontdoor, which needs no election.
const (
	ElectLeadersKey int16 = 43
	ElectLeadersMin       = 0
	ElectLeadersMax       = 2
)

// leadershipRefusal is the message of refused leader and replica moves.
const leadershipRefusal = "Ferry does not move leaders or replicas: Fluss places and elects bucket replicas itself (see docs/limits.md)"

func electLeadersAPI() kafka.API {
	return kafka.API{Key: ElectLeadersKey, MinVersion: ElectLeadersMin, MaxVersion: ElectLeadersMax, Serve: serveElectLeaders}
}

func serveElectLeaders(_ context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.ElectLeadersRequest)
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	s.Log.Info("refused a leader election; Fluss elects bucket leaders", "topics", len(r.Topics))
	if r.Topics == nil {
		resp.ErrorCode = kerr.PolicyViolation.Code
		return kafka.Ready(resp), nil
	}
	for _, t := range r.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, kerr.PolicyViolation.Code, kmsg.StringPtr(leadershipRefusal)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kafka.Ready(resp), nil
}
