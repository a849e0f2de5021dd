package groupapi

import (
	"context"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// Consumer groups (classic and KIP-848 consumer protocols): every group has one coordinator
// among the live frontdoors catalogsvc knows, chosen by rendezvous hashing
// of the group id over their node ids, so that a frontdoor's death moves
// only its own groups. Requests for a group another frontdoor coordinates
// get NOT_COORDINATOR, on which clients ask FindCoordinator again.
type groupHandlers struct {
	coord   *groups.Coordinator
	catalog *backends.Catalog
	// pendingTxnOffset, when transactions are served, tells whether a
	// transaction holds offsets of the group for the partition.
	pendingTxnOffset func(group, topic string, partition int32) bool

	mu      sync.Mutex
	brokers []*catalogv1.Broker
	fetched time.Time
}

// brokerListTTL is how long the live broker list is reused; a frontdoor
// that died is dropped by catalogsvc after its lease anyway.
const brokerListTTL = 3 * time.Second

// coordinatorOf returns the broker that coordinates group, or an error
// when the broker list cannot be had.
func (h *groupHandlers) coordinatorOf(ctx context.Context, group string) (*catalogv1.Broker, error) {
	h.mu.Lock()
	brokers, fresh := h.brokers, time.Since(h.fetched) < brokerListTTL
	h.mu.Unlock()
	if !fresh || len(brokers) == 0 {
		md, err := h.catalog.Metadata(ctx, nil, false)
		if err != nil {
			return nil, err
		}
		brokers = md.GetBrokers()
		h.mu.Lock()
		h.brokers, h.fetched = brokers, time.Now()
		h.mu.Unlock()
	}
	if len(brokers) == 0 {
		return h.catalog.Self(), nil // not registered yet: alone
	}
	var best *catalogv1.Broker
	var bestScore uint64
	for _, b := range brokers {
		f := fnv.New64a()
		f.Write([]byte(group))
		f.Write([]byte{0})
		f.Write(strconv.AppendInt(nil, int64(b.GetNodeId()), 10))
		if s := f.Sum64(); best == nil || s > bestScore {
			best, bestScore = b, s
		}
	}
	return best, nil
}

// owned answers whether this frontdoor coordinates group: nil when it
// does, else the error the request gets.
func (h *groupHandlers) owned(ctx context.Context, group string) *kerr.Error {
	b, err := h.coordinatorOf(ctx, group)
	switch {
	case err != nil:
		return kerr.CoordinatorNotAvailable
	case b.GetNodeId() != h.catalog.Self().GetNodeId():
		return kerr.NotCoordinator
	}
	return nil
}

// authorize checks the principal's permission for group, logging a
// refusal. It reads the session: call it from Serve.
// AuthorizeGroup is authorizeGroup for the transaction APIs that name a
// group (AddOffsetsToTxn, TxnOffsetCommit).
func AuthorizeGroup(ctx context.Context, s *kafka.Session, op acl.Operation, group string) *kerr.Error {
	return authorizeGroup(ctx, s, op, group)
}

func authorizeGroup(ctx context.Context, s *kafka.Session, op acl.Operation, group string) *kerr.Error {
	if !s.MayDoGroup(op)(group) {
		s.RefusedGroup(ctx, op, group)
		return kerr.GroupAuthorizationFailed
	}
	return nil
}

// groupReply answers a request of one group: refused at once when the
// principal may not, else later (the coordinator check may ask catalogsvc)
// by serve, or with the coordinator error.
func (h *groupHandlers) groupReply(ctx context.Context, s *kafka.Session, op acl.Operation, group string,
	setErr func(code int16) kmsg.Response, serve func(ctx context.Context) kmsg.Response) kafka.Reply {
	if e := authorizeGroup(ctx, s, op, group); e != nil {
		return kafka.Ready(setErr(e.Code))
	}
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		if e := h.owned(ctx, group); e != nil {
			return setErr(e.Code), nil
		}
		return serve(ctx), nil
	}}
}

func (h *groupHandlers) apis() []kafka.API {
	return []kafka.API{
		{Key: JoinGroupKey, MinVersion: JoinGroupMin, MaxVersion: JoinGroupMax, Serve: h.joinGroup},
		{Key: SyncGroupKey, MinVersion: SyncGroupMin, MaxVersion: SyncGroupMax, Serve: h.syncGroup},
		{Key: HeartbeatKey, MinVersion: HeartbeatMin, MaxVersion: HeartbeatMax, Serve: h.heartbeat},
		{Key: LeaveGroupKey, MinVersion: LeaveGroupMin, MaxVersion: LeaveGroupMax, Serve: h.leaveGroup},
		{Key: OffsetCommitKey, MinVersion: OffsetCommitMin, MaxVersion: OffsetCommitMax, Serve: h.offsetCommit},
		{Key: OffsetFetchKey, MinVersion: OffsetFetchMin, MaxVersion: OffsetFetchMax, Serve: h.offsetFetch},
		{Key: ListGroupsKey, MinVersion: ListGroupsMin, MaxVersion: ListGroupsMax, Serve: h.listGroups},
		{Key: DescribeGroupsKey, MinVersion: DescribeGroupsMin, MaxVersion: DescribeGroupsMax, Serve: h.describeGroups},
		{Key: DeleteGroupsKey, MinVersion: DeleteGroupsMin, MaxVersion: DeleteGroupsMax, Serve: h.deleteGroups},
		{Key: OffsetDeleteKey, MinVersion: OffsetDeleteMin, MaxVersion: OffsetDeleteMax, Serve: h.offsetDelete},
		{Key: ConsumerGroupHeartbeatKey, MinVersion: ConsumerGroupHeartbeatMin, MaxVersion: ConsumerGroupHeartbeatMax, Serve: h.consumerGroupHeartbeat},
		{Key: ConsumerGroupDescribeKey, MinVersion: ConsumerGroupDescribeMin, MaxVersion: ConsumerGroupDescribeMax, Serve: h.consumerGroupDescribe},
	}
}

// deref is *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// errCode is e's code, 0 for nil.
func errCode(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}
