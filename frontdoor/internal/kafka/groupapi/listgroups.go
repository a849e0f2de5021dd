package groupapi

import (
	"context"
	"slices"
	"strings"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// ListGroups v0-v5: the groups this frontdoor coordinates, with members or
// with committed offsets in fetchsvc's offsets table (Empty), those the
// principal may describe; v5 tells classic from consumer protocol groups.
const (
	ListGroupsKey int16 = 16
	ListGroupsMin       = 0
	ListGroupsMax       = 5
)

func (h *groupHandlers) listGroups(_ context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.ListGroupsRequest)
	mayDescribe := s.MayDoGroup(acl.Describe)
	log := s.Log
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
		list, err := h.coord.List(ctx)
		if err != nil {
			log.Warn("list groups: offsets table unavailable", "error", err)
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			return resp, nil
		}
		for _, g := range list {
			// Kafka matches both filters ignoring case (the admin client
			// sends types as "Classic", "Consumer").
			if !mayDescribe(g.Group) ||
				len(r.StatesFilter) > 0 && !slices.ContainsFunc(r.StatesFilter, func(st string) bool { return strings.EqualFold(st, string(g.State)) }) ||
				len(r.TypesFilter) > 0 && !slices.ContainsFunc(r.TypesFilter, func(t string) bool { return strings.EqualFold(t, g.Type) }) {
				continue
			}
			if h.owned(ctx, g.Group) != nil {
				continue // another frontdoor lists it
			}
			rg := kmsg.NewListGroupsResponseGroup()
			rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.Group, g.ProtocolType, string(g.State), g.Type
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}}, nil
}
