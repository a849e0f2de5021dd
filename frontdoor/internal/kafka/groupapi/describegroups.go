package groupapi

import (
	"context"
	"fmt"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// DescribeGroups v0-v6: state, protocol and members (with their metadata
// and assignment), what kafka-consumer-groups --describe shows. From v6 a
// group that is unknown or not a classic group is GROUP_ID_NOT_FOUND with
// Kafka's message (KIP-1043); below v6 it is only Dead.
const (
	DescribeGroupsKey int16 = 15
	DescribeGroupsMin       = 0
	DescribeGroupsMax       = 6
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
			if d.State == "Dead" && r.Version >= 6 {
				// Kafka's messages, so that clients show the same reason.
				msg := fmt.Sprintf("Group %s not found.", id)
				if d.ConsumerProtocol {
					msg = fmt.Sprintf("Group %s is not a classic group.", id)
				}
				g.ErrorCode, g.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
			}
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
