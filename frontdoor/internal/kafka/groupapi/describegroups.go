package groupapi

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// DescribeGroups v0-v5: state, protocol and members (with their metadata
// and assignment), what kafka-consumer-groups --describe shows.
const (
	DescribeGroupsKey int16 = 15
	DescribeGroupsMin       = 0
	DescribeGroupsMax       = 5
)

func (h *groupHandlers) describeGroups(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	errs := make([]*kerr.Error, len(r.Groups))
	for i, g := range r.Groups {
		errs[i] = authorizeGroup(ctx, s, acl.Describe, g)
	}
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for i, id := range r.Groups {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group = id
			e := errs[i]
			if e == nil {
				e = h.owned(ctx, id)
			}
			if e != nil {
				g.ErrorCode = e.Code
				resp.Groups = append(resp.Groups, g)
				continue
			}
			d, e := h.coord.Describe(ctx, id)
			if e != nil {
				g.ErrorCode = e.Code
				resp.Groups = append(resp.Groups, g)
				continue
			}
			g.State, g.ProtocolType, g.Protocol = string(d.State), d.ProtocolType, d.Protocol
			for _, m := range d.Members {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.ClientID, rm.ClientHost = m.ID, m.ClientID, m.ClientHost
				rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
				if m.InstanceID != "" {
					rm.InstanceID = &m.InstanceID
				}
				g.Members = append(g.Members, rm)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}}, nil
}
