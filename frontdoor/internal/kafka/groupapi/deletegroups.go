package groupapi

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// DeleteGroups v0-v2: deletes Empty groups and their committed offsets
// (kafka-consumer-groups --delete). Each group needs DELETE.
const (
	DeleteGroupsKey int16 = 42
	DeleteGroupsMin       = 0
	DeleteGroupsMax       = 2
)

func (h *groupHandlers) deleteGroups(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	errs := make([]*kerr.Error, len(r.Groups))
	for i, g := range r.Groups {
		errs[i] = authorizeGroup(ctx, s, acl.Delete, g)
	}
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for i, id := range r.Groups {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group = id
			e := errs[i]
			if e == nil {
				e = h.owned(ctx, id)
			}
			if e == nil {
				e = h.coord.DeleteGroup(ctx, id)
			}
			g.ErrorCode = errCode(e)
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}}, nil
}
