package groupapi

import (
	"context"
	"sort"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
)

// OffsetFetch v1-v9 (Kafka 4's range; v8+ ask for several groups, v9 names
// the consumer protocol member, v10 addresses topics by id). A partition
// without a committed offset gets offset -1.
const (
	OffsetFetchKey int16 = 9
	OffsetFetchMin       = 1
	OffsetFetchMax       = 9
)

// offsetQuery is one group's part of an OffsetFetch: its topics' partitions
// (nil: every partition it committed).
type offsetQuery struct {
	group  string
	topics map[string][]int32
	order  []string
	// member and epoch (v9+) name a consumer protocol member, whose epoch
	// is checked; "" and -1 otherwise.
	member string
	epoch  int32
}

// offsetAnswer is what one group's query got.
type offsetAnswer struct {
	err    int16
	topics []string
	parts  map[string][]kmsg.OffsetFetchResponseTopicPartition
}

func (h *groupHandlers) offsetFetch(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.OffsetFetchRequest)
	var queries []offsetQuery
	add := func(group string, member *string, epoch int32, all bool, topics []string, parts [][]int32) {
		q := offsetQuery{group: group, member: deref(member), epoch: epoch}
		if !all {
			q.topics = map[string][]int32{}
			for i, t := range topics {
				if _, seen := q.topics[t]; !seen {
					q.order = append(q.order, t)
				}
				q.topics[t] = append(q.topics[t], parts[i]...)
			}
		}
		queries = append(queries, q)
	}
	if r.Version < 8 {
		var topics []string
		var parts [][]int32
		for _, t := range r.Topics {
			topics, parts = append(topics, t.Topic), append(parts, t.Partitions)
		}
		add(r.Group, nil, -1, r.Topics == nil, topics, parts)
	}
	for _, g := range r.Groups {
		var topics []string
		var parts [][]int32
		for _, t := range g.Topics {
			topics, parts = append(topics, t.Topic), append(parts, t.Partitions)
		}
		epoch := int32(-1)
		if r.Version >= 9 {
			epoch = g.MemberEpoch
		}
		add(g.Group, g.MemberID, epoch, g.Topics == nil, topics, parts)
	}
	// Permissions are read from the session now; the answers come later.
	mayDescribe := s.MayDo(acl.Describe)
	groupErr := make([]*kerr.Error, len(queries))
	for i, q := range queries {
		groupErr[i] = authorizeGroup(ctx, s, acl.Describe, q.group)
	}
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		answers := make([]offsetAnswer, len(queries))
		for i, q := range queries {
			e := groupErr[i]
			if e == nil {
				e = h.owned(ctx, q.group)
			}
			if e == nil {
				e = h.coord.ValidateOffsetFetch(q.group, q.member, q.epoch)
			}
			if e != nil {
				answers[i] = offsetAnswer{err: e.Code}
				continue
			}
			answers[i] = h.answerOffsets(ctx, q, mayDescribe, r.RequireStable)
		}
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		if r.Version < 2 && answers[0].err != 0 {
			// v0/v1 have no group error: Kafka puts it on every partition
			// asked for, so that the client does not read "no offset".
			q := queries[0]
			for _, t := range q.order {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t
				for _, p := range q.topics[t] {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, answers[0].err
					empty := ""
					rp.Metadata = &empty
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		if r.Version < 8 {
			a := answers[0]
			resp.ErrorCode = a.err
			for _, t := range a.topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic, rt.Partitions = t, a.parts[t]
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		for i, a := range answers {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group, g.ErrorCode = queries[i].group, a.err
			for _, t := range a.topics {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = t
				for _, p := range a.parts[t] {
					gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
					rt.Partitions = append(rt.Partitions, gp)
				}
				g.Topics = append(g.Topics, rt)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}}, nil
}

// answerOffsets reads one group's committed offsets for its query.
// With stable (KIP-447), a partition with offsets in an open transaction
// is UNSTABLE_OFFSET_COMMIT, as Kafka answers.
func (h *groupHandlers) answerOffsets(ctx context.Context, q offsetQuery, mayDescribe func(string) bool, stable bool) offsetAnswer {
	committed, e := h.coord.Committed(ctx, q.group)
	if e != nil {
		return offsetAnswer{err: e.Code}
	}
	a := offsetAnswer{parts: map[string][]kmsg.OffsetFetchResponseTopicPartition{}}
	part := func(t string, p int32) kmsg.OffsetFetchResponseTopicPartition {
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
		empty := ""
		rp.Metadata = &empty
		if !mayDescribe(t) {
			rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
		} else if stable && h.pendingTxnOffset != nil && h.pendingTxnOffset(q.group, t, p) {
			rp.ErrorCode = kerr.UnstableOffsetCommit.Code
		} else if o := committed[groups.TopicPartition{Topic: t, Partition: p}]; o != nil {
			rp.Offset, rp.LeaderEpoch = o.GetOffset(), o.GetLeaderEpoch()
			if o.Metadata != nil {
				rp.Metadata = o.Metadata
			}
		}
		return rp
	}
	if q.topics != nil {
		a.topics = q.order
		for _, t := range q.order {
			for _, p := range q.topics[t] {
				a.parts[t] = append(a.parts[t], part(t, p))
			}
		}
		return a
	}
	// Every partition the group committed, of the topics the principal may
	// see.
	for tp := range committed {
		if !mayDescribe(tp.Topic) {
			continue
		}
		if _, seen := a.parts[tp.Topic]; !seen {
			a.topics = append(a.topics, tp.Topic)
		}
		a.parts[tp.Topic] = append(a.parts[tp.Topic], part(tp.Topic, tp.Partition))
	}
	sort.Strings(a.topics)
	for _, t := range a.topics {
		ps := a.parts[t]
		sort.Slice(ps, func(i, j int) bool { return ps[i].Partition < ps[j].Partition })
	}
	return a
}
