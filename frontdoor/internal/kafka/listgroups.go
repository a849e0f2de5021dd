package kafka

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// ListGroups v0-v5: the groups this frontdoor coordinates and knows (with
// members, or whose offsets it read since it started), those the principal
// may describe.
const (
	listGroupsKey int16 = 16
	listGroupsMin       = 0
	listGroupsMax       = 5
)

func (h *groupHandlers) listGroups(_ context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.ListGroupsRequest)
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	mayDescribe := s.mayDoGroup(acl.Describe)
	for _, g := range h.coord.List() {
		// Filters match case-insensitively, as on a broker: Kafka 4's admin
		// client asks for types "Classic" and "Consumer".
		if !mayDescribe(g.Group) ||
			len(r.StatesFilter) > 0 && !slices.ContainsFunc(r.StatesFilter, func(st string) bool { return strings.EqualFold(st, string(g.State)) }) ||
			len(r.TypesFilter) > 0 && !slices.ContainsFunc(r.TypesFilter, func(t string) bool { return strings.EqualFold(t, "classic") }) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.Group, g.ProtocolType, string(g.State), "classic"
		resp.Groups = append(resp.Groups, rg)
	}
	return ready(resp), nil
}
