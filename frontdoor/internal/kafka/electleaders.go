package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ElectLeaders v0-v2: refused with POLICY_VIOLATION per partition (and at
// the top for "every partition", v1+): Fluss elects bucket leaders, and a
// partition's leader in Metadata is a frontdoor, which needs no election.
const (
	electLeadersKey int16 = 43
	electLeadersMin       = 0
	electLeadersMax       = 2
)

// leadershipRefusal is the message of refused leader and replica moves.
const leadershipRefusal = "Ferry does not move leaders or replicas: Fluss places and elects bucket replicas itself (see docs/limits.md)"

func electLeadersAPI() API {
	return API{Key: electLeadersKey, MinVersion: electLeadersMin, MaxVersion: electLeadersMax, Serve: serveElectLeaders}
}

func serveElectLeaders(_ context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.ElectLeadersRequest)
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	s.Log.Info("refused a leader election; Fluss elects bucket leaders", "topics", len(r.Topics))
	if r.Topics == nil {
		resp.ErrorCode = kerr.PolicyViolation.Code
		return ready(resp), nil
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
	return ready(resp), nil
}
