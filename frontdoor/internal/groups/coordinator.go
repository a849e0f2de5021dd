// Package groups is frontdoor's consumer group coordinator for Kafka's
// classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), the
// consumer group protocol of KIP-848 (ConsumerGroupHeartbeat, consumer.go)
// and committed offsets, which both protocols share. Membership lives in memory, as in a Kafka coordinator
// (members rejoin after a coordinator moves); committed offsets are kept
// durably through an OffsetStore (fetchsvc's offsets table in Fluss) and
// cached here once a group's offsets were read.
package groups

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// OffsetStore keeps committed offsets durably.
type OffsetStore interface {
	CommitOffsets(ctx context.Context, group string, offsets []*fetchv1.CommittedOffset) error
	ListCommittedOffsets(ctx context.Context, group string) ([]*fetchv1.CommittedOffset, error)
	DeleteCommittedOffsets(ctx context.Context, group string, parts []*fetchv1.OffsetPartition) error
	// ListOffsetGroups names every group with a committed offset.
	ListOffsetGroups(ctx context.Context) ([]string, error)
}

// Config tunes the coordinator; zero fields take the defaults (Kafka's
// broker defaults, but a shorter initial delay).
type Config struct {
	// InitialRebalanceDelay is how long the first rebalance of an empty
	// group waits for more members (group.initial.rebalance.delay.ms).
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound what members may ask
	// for (group.min/max.session.timeout.ms).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// OnRebalance, when set, is called (under the coordinator's lock, so
	// it must not block) each time a group starts a new generation (or,
	// for the consumer protocol, a new group epoch).
	OnRebalance func(group string)
	// ConsumerHeartbeatInterval and ConsumerSessionTimeout are the consumer
	// protocol's group.consumer.heartbeat.interval.ms and
	// group.consumer.session.timeout.ms.
	ConsumerHeartbeatInterval, ConsumerSessionTimeout time.Duration
	// Topics looks up the topics consumer protocol members subscribe to.
	Topics TopicSource
}

// Defaults.
const (
	DefaultInitialRebalanceDelay = time.Second
	DefaultMinSessionTimeout     = 6 * time.Second
	DefaultMaxSessionTimeout     = 30 * time.Minute
)

func (c Config) withDefaults() Config {
	if c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = DefaultInitialRebalanceDelay
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if c.ConsumerHeartbeatInterval == 0 {
		c.ConsumerHeartbeatInterval = DefaultConsumerHeartbeatInterval
	}
	if c.ConsumerSessionTimeout == 0 {
		c.ConsumerSessionTimeout = DefaultConsumerSessionTimeout
	}
	return c
}

// State is a group's state, named as Kafka names it.
type State string

const (
	Empty               State = "Empty"
	PreparingRebalance  State = "PreparingRebalance"
	CompletingRebalance State = "CompletingRebalance"
	Stable              State = "Stable"
)

// Protocol is one assignment protocol a member supports.
type Protocol struct {
	Name     string
	Metadata []byte
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

type member struct {
	id, instanceID, clientID, clientHost string
	session, rebalance                   time.Duration
	protocols                            []Protocol
	assignment                           []byte
	// join is set while the member waits in JoinGroup for the rebalance.
	join chan JoinResult
	// sync is set while the member waits in SyncGroup for the leader.
	sync   chan SyncResult
	expiry *time.Timer
}

type group struct {
	id           string
	state        State
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	order        []string          // member ids in join order
	pendingIDs   map[string]bool   // ids handed out with MEMBER_ID_REQUIRED
	static       map[string]string // group.instance.id -> member id (KIP-345)
	timer        *time.Timer       // ends the join phase
	// initialDelay: the join phase of an empty group, which lasts the
	// initial delay whoever joined.
	initialDelay bool
	// offsets is nil until read from the store; loading is closed when a
	// read in progress ends.
	offsets map[TopicPartition]*fetchv1.CommittedOffset
	loading chan struct{}
	// cg is set while the group is a consumer protocol group (KIP-848).
	cg *consumerGroup
}

// Coordinator serves the groups this frontdoor coordinates.
type Coordinator struct {
	cfg   Config
	store OffsetStore
	log   *slog.Logger

	mu     sync.Mutex
	groups map[string]*group
	// topicList caches every topic for regex subscriptions.
	topicList   []TopicInfo
	topicListAt time.Time
}

// maxPendingIDs bounds the member ids a group hands out before they are
// used to join.
const maxPendingIDs = 1000

// New returns a coordinator keeping offsets in store.
func New(cfg Config, store OffsetStore, log *slog.Logger) *Coordinator {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Coordinator{cfg: cfg.withDefaults(), store: store, log: log, groups: map[string]*group{}}
}

func (c *Coordinator) groupLocked(id string) *group {
	g := c.groups[id]
	if g == nil {
		g = &group{id: id, state: Empty, members: map[string]*member{}, pendingIDs: map[string]bool{}, static: map[string]string{}}
		c.groups[id] = g
	}
	return g
}

// JoinRequest is a JoinGroup.
type JoinRequest struct {
	Group, MemberID, InstanceID, ClientID, ClientHost, ProtocolType string
	Session, Rebalance                                              time.Duration
	Protocols                                                       []Protocol
	// RequireKnownMemberID: a member without id gets one with
	// MEMBER_ID_REQUIRED and joins again with it (JoinGroup v4+, KIP-394).
	RequireKnownMemberID bool
}

// JoinResult answers a JoinGroup.
type JoinResult struct {
	Err                    *kerr.Error
	Generation             int32
	ProtocolType, Protocol string
	Leader, MemberID       string
	// Members is set for the leader only: every member's metadata for
	// Protocol.
	Members []JoinedMember
}

// JoinedMember is one member as the leader sees it.
type JoinedMember struct {
	ID, InstanceID string
	Metadata       []byte
}

func newMemberID(clientID string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return clientID + "-" + hex.EncodeToString(b)
}

// Join adds or updates a member and waits for the rebalance it starts to
// finish (or ctx to end).
func (c *Coordinator) Join(ctx context.Context, r JoinRequest) JoinResult {
	switch {
	case r.Group == "":
		return JoinResult{Err: kerr.InvalidGroupID}
	case r.Session < c.cfg.MinSessionTimeout || r.Session > c.cfg.MaxSessionTimeout:
		return JoinResult{Err: kerr.InvalidSessionTimeout}
	case r.ProtocolType == "" || len(r.Protocols) == 0:
		return JoinResult{Err: kerr.InconsistentGroupProtocol}
	}
	c.mu.Lock()
	g := c.groupLocked(r.Group)
	if g.cg != nil && len(g.cg.members) > 0 {
		// A consumer protocol group with members takes no classic members
		// (Kafka's migration of a group between protocols is not served).
		c.mu.Unlock()
		c.log.Info("join group refused: the group uses the consumer protocol", "group", r.Group)
		return JoinResult{Err: kerr.InconsistentGroupProtocol}
	}
	if g.cg != nil {
		// An empty consumer protocol group becomes a classic one.
		g.cg, g.protocolType = nil, ""
	}
	if len(g.members) > 0 && (g.protocolType != r.ProtocolType || !g.supportsAny(r.Protocols)) {
		c.mu.Unlock()
		return JoinResult{Err: kerr.InconsistentGroupProtocol}
	}
	id := r.MemberID
	switch {
	case id == "" && r.InstanceID != "":
		// A static member (KIP-345) gets its id at once; one that comes
		// back while its instance id is still a member takes its place.
		id = newMemberID(r.InstanceID)
		if old := g.static[r.InstanceID]; old != "" {
			if res, done := c.replaceStatic(g, old, id, r); done {
				c.mu.Unlock()
				return res
			}
		}
	case id == "" && r.RequireKnownMemberID:
		id = newMemberID(r.ClientID)
		if len(g.pendingIDs) >= maxPendingIDs {
			// Ids handed out but never used: clients that went away.
			clear(g.pendingIDs)
		}
		g.pendingIDs[id] = true
		c.mu.Unlock()
		return JoinResult{Err: kerr.MemberIDRequired, MemberID: id}
	case id == "":
		id = newMemberID(r.ClientID)
	case r.InstanceID != "":
		if e := g.validateMember(id, r.InstanceID); e != nil {
			c.mu.Unlock()
			return JoinResult{Err: e}
		}
	case g.members[id] == nil && !g.pendingIDs[id]:
		c.mu.Unlock()
		return JoinResult{Err: kerr.UnknownMemberID}
	}
	delete(g.pendingIDs, id)
	m := g.members[id]
	if m == nil {
		m = &member{id: id}
		g.members[id] = m
		g.order = append(g.order, id)
		if r.InstanceID != "" {
			g.static[r.InstanceID] = id
		}
	}
	m.instanceID, m.clientID, m.clientHost = r.InstanceID, r.ClientID, r.ClientHost
	m.session, m.rebalance, m.protocols = r.Session, r.Rebalance, r.Protocols
	if m.expiry != nil {
		m.expiry.Stop() // a member waiting to join does not expire
	}
	if m.join != nil {
		// A second JoinGroup of the same member replaces the first.
		m.join <- JoinResult{Err: kerr.RebalanceInProgress}
	}
	wait := make(chan JoinResult, 1)
	m.join = wait
	g.protocolType = r.ProtocolType
	if g.state != PreparingRebalance {
		c.prepareRebalance(g)
	}
	c.tryCompleteJoin(g)
	c.mu.Unlock()
	return await(c, ctx, wait, func() {
		if m.join == wait {
			m.join = nil
		}
	}, JoinResult{Err: kerr.RebalanceInProgress})
}

// replaceStatic gives the member of a static member's instance id a new
// id, keeping its assignment, and fences the old id (its waiting JoinGroup
// or SyncGroup gets FENCED_INSTANCE_ID, as will its later requests). In a
// Stable group whose protocol stays the same, the member is answered at
// once (done) with the current generation and the previous leader id, so
// that it asks nobody for a new assignment and gets its old one from
// SyncGroup: no rebalance. Otherwise the caller goes on with the join.
func (c *Coordinator) replaceStatic(g *group, oldID, newID string, r JoinRequest) (JoinResult, bool) {
	old := g.members[oldID]
	if old.expiry != nil {
		old.expiry.Stop()
	}
	if old.join != nil {
		old.join <- JoinResult{Err: kerr.FencedInstanceID}
	}
	if old.sync != nil {
		old.sync <- SyncResult{Err: kerr.FencedInstanceID}
	}
	m := &member{id: newID, instanceID: r.InstanceID, clientID: r.ClientID, clientHost: r.ClientHost,
		session: r.Session, rebalance: r.Rebalance, protocols: r.Protocols, assignment: old.assignment}
	delete(g.members, oldID)
	g.members[newID] = m
	g.order[slices.Index(g.order, oldID)] = newID
	g.static[r.InstanceID] = newID
	prevLeader := g.leader
	if g.leader == oldID {
		g.leader = newID
	}
	c.log.Info("static member rejoined with a new member id", "group", g.id, "instance_id", r.InstanceID,
		"old_member", oldID, "member", newID, "state", string(g.state))
	if g.state != Stable || g.chooseProtocol() != g.protocol {
		return JoinResult{}, false
	}
	c.touch(g, m)
	return JoinResult{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol, Leader: prevLeader, MemberID: newID}, true
}

// validateMember checks that id is a member, and with an instance id that
// it is the instance's current member: FENCED_INSTANCE_ID when another id
// took the instance's place.
func (g *group) validateMember(id, instanceID string) *kerr.Error {
	if g == nil {
		return kerr.UnknownMemberID
	}
	if instanceID != "" {
		switch cur := g.static[instanceID]; {
		case cur == "":
			return kerr.UnknownMemberID
		case cur != id:
			return kerr.FencedInstanceID
		}
		return nil
	}
	if g.members[id] == nil {
		return kerr.UnknownMemberID
	}
	return nil
}

// await waits for the result sent on wait. When ctx ends first, detach
// (called under the lock) stops the coordinator from sending, unless a
// result was sent meanwhile, which is returned; else gone is.
func await[T any](c *Coordinator, ctx context.Context, wait chan T, detach func(), gone T) T {
	select {
	case res := <-wait:
		return res
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case res := <-wait:
		return res
	default:
	}
	detach()
	return gone
}

// supportsAny tells whether every member supports one of protocols.
func (g *group) supportsAny(protocols []Protocol) bool {
	for _, p := range protocols {
		if g.allSupport(p.Name) {
			return true
		}
	}
	return false
}

func (g *group) allSupport(name string) bool {
	for _, m := range g.members {
		found := false
		for _, p := range m.protocols {
			found = found || p.Name == name
		}
		if !found {
			return false
		}
	}
	return true
}

// prepareRebalance starts a join phase: members must (re)join within the
// longest rebalance timeout; an empty group waits the initial delay for
// more members.
func (c *Coordinator) prepareRebalance(g *group) {
	for _, m := range g.members {
		if m.sync != nil {
			m.sync <- SyncResult{Err: kerr.RebalanceInProgress}
			m.sync = nil
		}
	}
	g.initialDelay = g.state == Empty
	g.state = PreparingRebalance
	wait := c.cfg.InitialRebalanceDelay
	if !g.initialDelay {
		wait = 0
		for _, m := range g.members {
			wait = max(wait, m.rebalance)
		}
	}
	if g.timer != nil {
		g.timer.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(wait, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if g.timer == t && g.state == PreparingRebalance {
			c.completeJoin(g)
		}
	})
	g.timer = t
}

// tryCompleteJoin ends the join phase once every member has rejoined,
// unless an empty group's initial delay is running (more members may come).
func (c *Coordinator) tryCompleteJoin(g *group) {
	if g.state == PreparingRebalance && !g.initialDelay && g.allJoined() {
		c.completeJoin(g)
	}
}

func (g *group) allJoined() bool {
	for _, m := range g.members {
		if m.join == nil {
			return false
		}
	}
	return true
}

// completeJoin starts a new generation with the members that rejoined and
// answers their JoinGroups.
func (c *Coordinator) completeJoin(g *group) {
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
	joined := 0
	for _, m := range g.members {
		if m.join != nil {
			joined++
		}
	}
	// Static members that did not rejoin stay, as in Kafka: their session
	// timeout removes them, and until then their partitions are kept for
	// them (unless nobody rejoined at all).
	for _, id := range append([]string(nil), g.order...) {
		if m := g.members[id]; m.join == nil && (m.instanceID == "" || joined == 0) {
			c.log.Info("group member did not rejoin in time; removed", "group", g.id, "member", id)
			c.removeLocked(g, id)
		}
	}
	g.generation++
	if c.cfg.OnRebalance != nil {
		c.cfg.OnRebalance(g.id)
	}
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = Empty, "", ""
		return
	}
	g.protocol = g.chooseProtocol()
	if l := g.members[g.leader]; l == nil || l.join == nil {
		for _, id := range g.order {
			if g.members[id].join != nil {
				g.leader = id
				break
			}
		}
	}
	g.state = CompletingRebalance
	var all []JoinedMember
	for _, id := range g.order {
		m := g.members[id]
		all = append(all, JoinedMember{ID: id, InstanceID: m.instanceID, Metadata: m.metadata(g.protocol)})
	}
	for _, id := range g.order {
		m := g.members[id]
		m.assignment = nil
		if m.join == nil {
			continue // a static member away
		}
		res := JoinResult{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol, Leader: g.leader, MemberID: id}
		if id == g.leader {
			res.Members = all
		}
		m.join <- res
		m.join = nil
		c.touch(g, m)
	}
	c.log.Info("group rebalanced", "group", g.id, "generation", g.generation, "members", len(g.members), "protocol", g.protocol)
}

// chooseProtocol picks the protocol most members list first among those
// every member supports (Kafka's vote), ties to the leader's order.
func (g *group) chooseProtocol() string {
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.allSupport(p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	first := g.members[g.order[0]]
	best := ""
	for _, p := range first.protocols {
		if votes[p.Name] > votes[best] {
			best = p.Name
		}
	}
	return best
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// touch restarts a member's session timer.
func (c *Coordinator) touch(g *group, m *member) {
	if m.expiry != nil {
		m.expiry.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(m.session, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if g.members[m.id] != m || m.expiry != t || m.join != nil {
			return
		}
		c.log.Info("group member session expired", "group", g.id, "member", m.id, "session_timeout", m.session)
		c.removeLocked(g, m.id)
		c.membersChanged(g)
	})
	m.expiry = t
}

// removeLocked drops a member, answering what it waits for.
func (c *Coordinator) removeLocked(g *group, id string) {
	m := g.members[id]
	if m == nil {
		return
	}
	if m.expiry != nil {
		m.expiry.Stop()
	}
	if m.join != nil {
		m.join <- JoinResult{Err: kerr.UnknownMemberID}
	}
	if m.sync != nil {
		m.sync <- SyncResult{Err: kerr.UnknownMemberID}
	}
	delete(g.members, id)
	if m.instanceID != "" && g.static[m.instanceID] == id {
		delete(g.static, m.instanceID)
	}
	for i, o := range g.order {
		if o == id {
			g.order = append(g.order[:i], g.order[i+1:]...)
			break
		}
	}
}

// membersChanged starts a rebalance after members left, or empties the
// group.
func (c *Coordinator) membersChanged(g *group) {
	switch {
	case len(g.members) == 0 && g.state != PreparingRebalance:
		g.generation++
		g.state, g.protocol, g.leader = Empty, "", ""
	case g.state == PreparingRebalance:
		c.tryCompleteJoin(g)
	default:
		c.prepareRebalance(g)
		c.tryCompleteJoin(g)
	}
}

// SyncRequest is a SyncGroup; Assignments are set by the leader.
type SyncRequest struct {
	Group, MemberID        string
	InstanceID             string
	Generation             int32
	ProtocolType, Protocol string // v5+; empty: not checked
	Assignments            map[string][]byte
}

// SyncResult answers a SyncGroup.
type SyncResult struct {
	Err                    *kerr.Error
	ProtocolType, Protocol string
	Assignment             []byte
}

// Sync hands out the leader's assignment, waiting for it when needed.
func (c *Coordinator) Sync(ctx context.Context, r SyncRequest) SyncResult {
	c.mu.Lock()
	g := c.groups[r.Group]
	if e := g.validateMember(r.MemberID, r.InstanceID); e != nil {
		c.mu.Unlock()
		return SyncResult{Err: e}
	}
	m := g.members[r.MemberID]
	switch {
	case r.Generation != g.generation:
		c.mu.Unlock()
		return SyncResult{Err: kerr.IllegalGeneration}
	case r.ProtocolType != "" && r.ProtocolType != g.protocolType, r.Protocol != "" && r.Protocol != g.protocol:
		c.mu.Unlock()
		return SyncResult{Err: kerr.InconsistentGroupProtocol}
	case g.state == PreparingRebalance:
		c.mu.Unlock()
		return SyncResult{Err: kerr.RebalanceInProgress}
	case g.state == Stable:
		res := SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}
		c.touch(g, m)
		c.mu.Unlock()
		return res
	}
	// CompletingRebalance.
	c.touch(g, m)
	if r.MemberID == g.leader {
		for id, mm := range g.members {
			mm.assignment = r.Assignments[id]
		}
		g.state = Stable
		for _, mm := range g.members {
			if mm.sync != nil {
				mm.sync <- SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: mm.assignment}
				mm.sync = nil
			}
		}
		res := SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}
		c.mu.Unlock()
		return res
	}
	if m.sync != nil {
		m.sync <- SyncResult{Err: kerr.RebalanceInProgress}
	}
	wait := make(chan SyncResult, 1)
	m.sync = wait
	c.mu.Unlock()
	return await(c, ctx, wait, func() {
		if m.sync == wait {
			m.sync = nil
		}
	}, SyncResult{Err: kerr.RebalanceInProgress})
}

// Heartbeat keeps a member alive and tells it whether to rejoin.
func (c *Coordinator) Heartbeat(groupID, memberID, instanceID string, generation int32) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	if e := g.validateMember(memberID, instanceID); e != nil {
		return e
	}
	m := g.members[memberID]
	if generation != g.generation {
		return kerr.IllegalGeneration
	}
	c.touch(g, m)
	if g.state == PreparingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// Leaver names a member leaving: by member id, or (an administrator's
// LeaveGroup v3+) by instance id alone.
type Leaver struct {
	MemberID, InstanceID string
}

// Leave removes members; the result lines up with leavers.
func (c *Coordinator) Leave(groupID string, leavers []Leaver) []*kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*kerr.Error, len(leavers))
	g := c.groups[groupID]
	left := 0
	for i, l := range leavers {
		id := l.MemberID
		switch {
		case g == nil:
			out[i] = kerr.UnknownMemberID
			continue
		case id == "" && l.InstanceID != "" && g.static[l.InstanceID] != "":
			id = g.static[l.InstanceID]
		case id == "":
			out[i] = kerr.UnknownMemberID
			continue
		case g.pendingIDs[id]:
			delete(g.pendingIDs, id)
			continue
		default:
			if out[i] = g.validateMember(id, l.InstanceID); out[i] != nil {
				continue
			}
		}
		c.removeLocked(g, id)
		left++
	}
	if left > 0 {
		c.log.Info("group members left", "group", groupID, "left", left, "remaining", len(g.members))
		c.membersChanged(g)
	}
	return out
}

// errStoreUnavailable wraps a failed read of a group's offsets.
var errStoreUnavailable = errors.New("groups: offset store unavailable")

// offsetsOf returns the group's committed offsets, reading them from the
// store the first time. Called without the lock.
func (c *Coordinator) offsetsOf(ctx context.Context, groupID string) (*group, error) {
	for {
		c.mu.Lock()
		g := c.groupLocked(groupID)
		if g.offsets != nil {
			c.mu.Unlock()
			return g, nil
		}
		if g.loading != nil {
			ch := g.loading
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		g.loading = ch
		c.mu.Unlock()
		list, err := c.store.ListCommittedOffsets(ctx, groupID)
		c.mu.Lock()
		g.loading = nil
		close(ch)
		if err != nil {
			c.mu.Unlock()
			return nil, errors.Join(errStoreUnavailable, err)
		}
		g.offsets = make(map[TopicPartition]*fetchv1.CommittedOffset, len(list))
		for _, o := range list {
			g.offsets[TopicPartition{o.GetTopic(), o.GetPartition()}] = o
		}
		if !g.exists() && len(g.pendingIDs) == 0 && c.groups[groupID] == g {
			// Not kept: anybody may ask about any group name, and an
			// empty group holds nothing worth the memory.
			delete(c.groups, groupID)
		}
		c.mu.Unlock()
		return g, nil
	}
}

// CommitRequest is an OffsetCommit's group part.
type CommitRequest struct {
	Group, MemberID, InstanceID string
	// Generation is -1 for a consumer outside group management (or an
	// administrator).
	Generation int32
	// GroupIDNotFound: a member commit (generation 0 or above) to a group
	// that does not exist gets GROUP_ID_NOT_FOUND (OffsetCommit v9+), else
	// ILLEGAL_GENERATION.
	GroupIDNotFound bool
	// Version is the OffsetCommit version: members of a consumer protocol
	// group must commit with v9 or above.
	Version int16
	Offsets []*fetchv1.CommittedOffset
}

// exists tells whether Kafka would know the group: it has members, offsets
// or had a generation since this coordinator started.
func (g *group) exists() bool {
	return g != nil && (len(g.members) > 0 || len(g.offsets) > 0 || g.generation > 0 || g.cg != nil)
}

// stateName is the group's state, of whichever protocol it uses.
func (g *group) stateName() State {
	if g.cg != nil {
		return g.cg.state()
	}
	return g.state
}

// Commit checks that the committer may commit for the group and stores
// its offsets. Kafka's rules: a commit without generation (-1) is taken
// while the group is Empty; one with a generation, member id or instance
// id must come from a current member of the current generation; a commit
// without any of them into a group with members is UNKNOWN_MEMBER_ID. A
// member's commit is taken while the group prepares a rebalance (members
// commit before they rejoin) and refused with REBALANCE_IN_PROGRESS while
// it waits for the leader's assignment.
func (c *Coordinator) Commit(ctx context.Context, r CommitRequest) *kerr.Error {
	if r.Group == "" {
		return kerr.InvalidGroupID
	}
	if _, err := c.offsetsOf(ctx, r.Group); err != nil {
		c.log.Warn("offset commit: offsets unavailable", "group", r.Group, "error", err)
		return kerr.CoordinatorLoadInProgress
	}
	c.mu.Lock()
	g := c.groupLocked(r.Group)
	var refuse *kerr.Error
	switch {
	case g.cg != nil:
		refuse = g.cg.validateCommit(r)
	case r.Generation < 0 && g.state == Empty:
	case r.Generation >= 0 && !g.exists():
		refuse = kerr.IllegalGeneration
		if r.GroupIDNotFound {
			refuse = kerr.GroupIDNotFound
		}
	case r.Generation >= 0 || r.MemberID != "" || r.InstanceID != "":
		if refuse = g.validateMember(r.MemberID, r.InstanceID); refuse == nil && r.Generation != g.generation {
			refuse = kerr.IllegalGeneration
		}
	default:
		refuse = kerr.UnknownMemberID
	}
	if refuse == nil && g.cg == nil && g.state == CompletingRebalance {
		refuse = kerr.RebalanceInProgress
	}
	if m := g.members[r.MemberID]; refuse == nil && m != nil {
		c.touch(g, m)
	}
	c.mu.Unlock()
	if refuse != nil {
		return refuse
	}
	if err := c.store.CommitOffsets(ctx, r.Group, r.Offsets); err != nil {
		c.log.Warn("offset commit failed", "group", r.Group, "error", err)
		return kerr.CoordinatorNotAvailable
	}
	c.mu.Lock()
	if g.offsets == nil {
		// The group's offsets were not read yet (it was created again
		// after an empty read): they will be, with this commit.
		c.mu.Unlock()
		return nil
	}
	for _, o := range r.Offsets {
		g.offsets[TopicPartition{o.GetTopic(), o.GetPartition()}] = o
	}
	c.mu.Unlock()
	return nil
}

// Committed returns the group's committed offsets, by partition.
func (c *Coordinator) Committed(ctx context.Context, groupID string) (map[TopicPartition]*fetchv1.CommittedOffset, *kerr.Error) {
	g, err := c.offsetsOf(ctx, groupID)
	if err != nil {
		c.log.Warn("offset fetch: offsets unavailable", "group", groupID, "error", err)
		return nil, kerr.CoordinatorLoadInProgress
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[TopicPartition]*fetchv1.CommittedOffset, len(g.offsets))
	for k, v := range g.offsets {
		out[k] = v
	}
	return out, nil
}

// Listing is one group as ListGroups shows it.
type Listing struct {
	Group, ProtocolType string
	State               State
	// Type is "classic" or "consumer" (the KIP-848 protocol).
	Type string
}

// groupType names the group's protocol as ListGroups v5 does.
func (g *group) groupType() string {
	if g.cg != nil {
		return "consumer"
	}
	return "classic"
}

// List returns the groups with members here or committed offsets in the
// store (those without members are Empty, as in Kafka after a restart).
// The caller keeps those this coordinator owns.
func (c *Coordinator) List(ctx context.Context) ([]Listing, error) {
	stored, err := c.store.ListOffsetGroups(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	var out []Listing
	for id, g := range c.groups {
		if len(g.members) == 0 && len(g.offsets) == 0 && g.cg == nil {
			continue
		}
		seen[id] = true
		out = append(out, Listing{Group: id, ProtocolType: g.protocolType, State: g.stateName(), Type: g.groupType()})
	}
	for _, id := range stored {
		if seen[id] {
			continue
		}
		if g := c.groups[id]; g != nil && g.offsets != nil && len(g.offsets) == 0 {
			continue // its offsets were deleted since the store was read
		}
		l := Listing{Group: id, State: Empty, Type: "classic"}
		if g := c.groups[id]; g != nil {
			l.ProtocolType, l.Type = g.protocolType, g.groupType()
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	State                  State
	ProtocolType, Protocol string
	Members                []MemberDescription
	// ConsumerProtocol marks a Dead description that stands for a group of
	// the consumer protocol (DescribeGroups v6 names it, older versions
	// cannot tell it from an unknown group).
	ConsumerProtocol bool
}

// MemberDescription is one member of a Description.
type MemberDescription struct {
	ID, InstanceID, ClientID, ClientHost string
	Metadata, Assignment                 []byte
}

// Describe returns the group's state and members; an unknown group is
// described as Dead with no members, as Kafka does, and one that only has
// committed offsets (after a restart) as Empty. As in Kafka, only a
// Stable group shows its protocol and its members' metadata and
// assignments; in other states they are empty.
func (c *Coordinator) Describe(ctx context.Context, groupID string) (Description, *kerr.Error) {
	if _, err := c.offsetsOf(ctx, groupID); err != nil {
		c.log.Warn("describe group: offsets unavailable", "group", groupID, "error", err)
		return Description{}, kerr.CoordinatorLoadInProgress
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	if !g.exists() || g.cg != nil {
		// A consumer protocol group is no classic group: Kafka describes
		// it as Dead, as if unknown.
		return Description{State: "Dead", ConsumerProtocol: g.exists()}, nil
	}
	d := Description{State: g.state, ProtocolType: g.protocolType}
	stable := g.state == Stable
	if stable {
		d.Protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		md := MemberDescription{ID: id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata, md.Assignment = m.metadata(g.protocol), m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d, nil
}

// DeleteGroup deletes an Empty group and its committed offsets (Kafka's
// DeleteGroups): GROUP_ID_NOT_FOUND when it does not exist,
// NON_EMPTY_GROUP while it has members.
func (c *Coordinator) DeleteGroup(ctx context.Context, groupID string) *kerr.Error {
	if _, err := c.offsetsOf(ctx, groupID); err != nil {
		c.log.Warn("delete group: offsets unavailable", "group", groupID, "error", err)
		return kerr.CoordinatorLoadInProgress
	}
	c.mu.Lock()
	g := c.groups[groupID]
	switch {
	case !g.exists():
		c.mu.Unlock()
		return kerr.GroupIDNotFound
	case g.stateName() != Empty:
		c.mu.Unlock()
		return kerr.NonEmptyGroup
	}
	parts := make([]*fetchv1.OffsetPartition, 0, len(g.offsets))
	for tp := range g.offsets {
		parts = append(parts, &fetchv1.OffsetPartition{Topic: tp.Topic, Partition: tp.Partition})
	}
	c.mu.Unlock()
	if len(parts) > 0 {
		if err := c.store.DeleteCommittedOffsets(ctx, groupID, parts); err != nil {
			c.log.Warn("delete group: deleting offsets failed", "group", groupID, "error", err)
			return kerr.CoordinatorNotAvailable
		}
	}
	c.mu.Lock()
	if c.groups[groupID] == g && g.stateName() == Empty && len(g.members) == 0 {
		delete(c.groups, groupID)
	}
	c.mu.Unlock()
	c.log.Info("group deleted", "group", groupID, "offsets", len(parts))
	return nil
}

// DeleteOffsets deletes committed offsets of a group (Kafka's
// OffsetDelete). An Empty group loses the offsets asked for; a consumer
// group with members only those of topics none of its members subscribes
// to (the others get GROUP_SUBSCRIBED_TO_TOPIC); any other group with
// members refuses with NON_EMPTY_GROUP. The map holds the partitions
// refused.
func (c *Coordinator) DeleteOffsets(ctx context.Context, groupID string, parts []TopicPartition) (map[TopicPartition]*kerr.Error, *kerr.Error) {
	if _, err := c.offsetsOf(ctx, groupID); err != nil {
		c.log.Warn("offset delete: offsets unavailable", "group", groupID, "error", err)
		return nil, kerr.CoordinatorLoadInProgress
	}
	c.mu.Lock()
	g := c.groups[groupID]
	refused := map[TopicPartition]*kerr.Error{}
	switch {
	case !g.exists():
		c.mu.Unlock()
		return nil, kerr.GroupIDNotFound
	case g.stateName() == Empty:
	case g.protocolType == "consumer":
		subscribed := g.subscribedTopics()
		for _, tp := range parts {
			if subscribed == nil || subscribed[tp.Topic] {
				refused[tp] = kerr.GroupSubscribedToTopic
			}
		}
	default:
		c.mu.Unlock()
		return nil, kerr.NonEmptyGroup
	}
	var del []*fetchv1.OffsetPartition
	for _, tp := range parts {
		if refused[tp] == nil && g.offsets[tp] != nil {
			del = append(del, &fetchv1.OffsetPartition{Topic: tp.Topic, Partition: tp.Partition})
		}
	}
	c.mu.Unlock()
	if len(del) == 0 {
		return refused, nil
	}
	if err := c.store.DeleteCommittedOffsets(ctx, groupID, del); err != nil {
		c.log.Warn("offset delete failed", "group", groupID, "error", err)
		return nil, kerr.CoordinatorNotAvailable
	}
	c.mu.Lock()
	for _, p := range del {
		delete(g.offsets, TopicPartition{p.Topic, p.Partition})
	}
	c.mu.Unlock()
	c.log.Info("group offsets deleted", "group", groupID, "partitions", len(del))
	return refused, nil
}

// subscribedTopics is the union of the members' subscriptions, read from
// their consumer protocol metadata; nil when one cannot be read.
func (g *group) subscribedTopics() map[string]bool {
	out := map[string]bool{}
	if g.cg != nil {
		for _, t := range g.cg.topics {
			out[t.Name] = true
		}
		for _, m := range g.cg.members {
			for _, n := range m.names {
				out[n] = true
			}
		}
		return out
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadata(g.protocol)); err != nil {
			return nil
		}
		for _, t := range meta.Topics {
			out[t] = true
		}
	}
	return out
}

// AllCommitted returns the committed offsets of every group whose offsets
// this coordinator holds, by group.
func (c *Coordinator) AllCommitted() map[string]map[TopicPartition]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]map[TopicPartition]int64{}
	for id, g := range c.groups {
		if len(g.offsets) == 0 {
			continue
		}
		m := make(map[TopicPartition]int64, len(g.offsets))
		for tp, o := range g.offsets {
			m[tp] = o.GetOffset()
		}
		out[id] = m
	}
	return out
}

// CommitTransactional stores offsets a transaction committed
// (TxnOffsetCommit, applied at EndTxn): the member checks were made when
// the offsets were sent, so none are made now.
func (c *Coordinator) CommitTransactional(ctx context.Context, groupID string, offsets []*fetchv1.CommittedOffset) error {
	if err := c.store.CommitOffsets(ctx, groupID, offsets); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A group whose offsets are not held is read from the store, with
	// these, when next asked about.
	if g := c.groups[groupID]; g != nil && g.offsets != nil {
		for _, o := range offsets {
			g.offsets[TopicPartition{o.GetTopic(), o.GetPartition()}] = o
		}
	}
	return nil
}
