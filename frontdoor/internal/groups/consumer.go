package groups

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The consumer group protocol (KIP-848, ConsumerGroupHeartbeat): the
// coordinator computes the assignment. Every change of membership,
// subscription or subscribed topics bumps the group epoch and computes a
// new target assignment with the group's server-side assignor; each member
// then moves towards its target one heartbeat at a time: it first gives up
// the partitions it must revoke (keeping its epoch), and only then gets the
// target epoch and the new partitions that no other member still holds.

// Member epochs with a meaning of their own.
const (
	LeaveEpoch       int32 = -1 // the member leaves
	StaticLeaveEpoch int32 = -2 // a static member leaves for a while
)

// Consumer protocol defaults (Kafka's group.consumer.* broker defaults).
const (
	DefaultConsumerHeartbeatInterval = 5 * time.Second
	DefaultConsumerSessionTimeout    = 45 * time.Second
)

// TopicInfo is a topic as the assignors see it.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// TopicSource looks up topics for the consumer protocol.
type TopicSource interface {
	// Topics returns those of names that exist.
	Topics(ctx context.Context, names []string) (map[string]TopicInfo, error)
	// AllTopics lists every topic (for regex subscriptions).
	AllTopics(ctx context.Context) ([]TopicInfo, error)
}

// regexRefresh is how long the topic list behind regex subscriptions is
// reused.
const regexRefresh = 10 * time.Second

// Member reconciliation states, as Kafka names them.
const (
	memberStable               = "stable"
	memberUnrevokedPartitions  = "unrevoked_partitions"
	memberUnreleasedPartitions = "unreleased_partitions"
)

type consumerMember struct {
	id, instanceID, rackID, clientID, clientHost string
	epoch, prevEpoch                             int32
	state                                        string
	rebalanceTimeout                             time.Duration
	names                                        []string
	regex                                        string
	assignor                                     string
	assigned, revoking                           partSet
	expiry, revokeTimer                          *time.Timer
}

// consumerGroup is a group's consumer protocol state; a group has one while
// it is a consumer protocol group.
type consumerGroup struct {
	epoch, assignmentEpoch int32
	assignor               string
	members                map[string]*consumerMember
	static                 map[string]string // instance id -> member id
	target                 map[string]partSet
	topics                 map[string]TopicInfo // subscribed topics at the last assignment
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: map[string]*consumerMember{}, static: map[string]string{}, target: map[string]partSet{}, topics: map[string]TopicInfo{}}
}

// state is the group's state as Kafka names it.
func (cg *consumerGroup) state() State {
	switch {
	case len(cg.members) == 0:
		return Empty
	case cg.epoch != cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return Stable
}

// ConsumerHeartbeatRequest is a ConsumerGroupHeartbeat. Pointer and slice
// fields are nil when the member did not send them (unchanged).
type ConsumerHeartbeatRequest struct {
	Version              int16
	Group, MemberID      string
	MemberEpoch          int32
	InstanceID, RackID   *string
	RebalanceTimeoutMs   int32
	SubscribedTopics     []string
	SubscribedRegex      *string
	ServerAssignor       *string
	Owned                []OwnedTopic
	ClientID, ClientHost string
}

// OwnedTopic is a topic's partitions a member reports it owns.
type OwnedTopic struct {
	ID         [16]byte
	Partitions []int32
}

// AssignedTopic is a topic's partitions in an assignment.
type AssignedTopic struct {
	Name       string
	ID         [16]byte
	Partitions []int32
}

// ConsumerHeartbeatResult answers a ConsumerGroupHeartbeat.
type ConsumerHeartbeatResult struct {
	Err               *kerr.Error
	ErrMessage        string
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// Assignment is set (possibly empty) when it is sent.
	Assignment []AssignedTopic
	Sent       bool
}

func refuse(e *kerr.Error, format string, args ...any) ConsumerHeartbeatResult {
	return ConsumerHeartbeatResult{Err: e, ErrMessage: fmt.Sprintf(format, args...)}
}

// newConsumerMemberID makes a member id as Kafka's Uuid prints one (for
// ConsumerGroupHeartbeat v0, where the coordinator picks it).
func newConsumerMemberID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// validateHeartbeat checks a request as Kafka does before it looks at the
// group.
func validateHeartbeat(r ConsumerHeartbeatRequest) (ConsumerHeartbeatResult, bool) {
	switch {
	case (r.Version >= 1 || r.MemberEpoch > 0 || r.MemberEpoch == LeaveEpoch) && r.MemberID == "":
		return refuse(kerr.InvalidRequest, "MemberId can't be empty."), false
	case r.Group == "":
		return refuse(kerr.InvalidRequest, "GroupId can't be empty."), false
	case r.InstanceID != nil && *r.InstanceID == "":
		return refuse(kerr.InvalidRequest, "InstanceId can't be empty."), false
	case r.RackID != nil && *r.RackID == "":
		return refuse(kerr.InvalidRequest, "RackId can't be empty."), false
	}
	switch {
	case r.MemberEpoch == 0 && r.RebalanceTimeoutMs == -1:
		return refuse(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."), false
	case r.MemberEpoch == 0 && (r.Owned == nil || len(r.Owned) > 0):
		return refuse(kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."), false
	case r.MemberEpoch == 0 && r.SubscribedTopics == nil && r.SubscribedRegex == nil:
		return refuse(kerr.InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."), false
	case r.MemberEpoch == StaticLeaveEpoch && r.InstanceID == nil:
		return refuse(kerr.InvalidRequest, "InstanceId can't be null."), false
	case r.MemberEpoch < StaticLeaveEpoch:
		return refuse(kerr.InvalidRequest, "MemberEpoch is invalid."), false
	case r.ServerAssignor != nil && !slices.Contains(Assignors, *r.ServerAssignor):
		return refuse(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s, %s.", *r.ServerAssignor, Assignors[0], Assignors[1]), false
	}
	if r.SubscribedRegex != nil && *r.SubscribedRegex != "" {
		if _, err := regexp.Compile(*r.SubscribedRegex); err != nil {
			return refuse(kerr.InvalidRegularExpression, "SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *r.SubscribedRegex, err), false
		}
	}
	return ConsumerHeartbeatResult{}, true
}

// ConsumerHeartbeat serves a ConsumerGroupHeartbeat: join (epoch 0),
// heartbeat, or leave (epoch -1, or -2 for a static member).
func (c *Coordinator) ConsumerHeartbeat(ctx context.Context, r ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	if res, ok := validateHeartbeat(r); !ok {
		return res
	}
	if r.MemberEpoch == LeaveEpoch || r.MemberEpoch == StaticLeaveEpoch {
		return c.consumerLeave(r)
	}
	if r.MemberID == "" {
		r.MemberID = newConsumerMemberID()
	}
	// The subscribed topics are looked up without the lock; membership
	// may change meanwhile, so look again for names that came up since.
	var topics map[string]TopicInfo
	for range 3 {
		c.mu.Lock()
		names, regexes := c.subscriptionsLocked(r)
		c.mu.Unlock()
		got, err := c.resolveSubscribed(ctx, names, regexes)
		if err != nil {
			c.log.Warn("consumer group heartbeat: topics unavailable", "group", r.Group, "error", err)
			return refuse(kerr.CoordinatorNotAvailable, "The topics of the group cannot be looked up.")
		}
		topics = got
		c.mu.Lock()
		again, againRe := c.subscriptionsLocked(r)
		c.mu.Unlock()
		if slices.Equal(again, names) && slices.Equal(againRe, regexes) {
			break
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.consumerHeartbeatLocked(r, topics)
}

// subscriptionsLocked lists the topic names and regexes the group's members
// subscribe to, with the request's own subscription in place of its
// member's.
func (c *Coordinator) subscriptionsLocked(r ConsumerHeartbeatRequest) (names, regexes []string) {
	seen := map[string]bool{}
	seenRe := map[string]bool{}
	add := func(ns []string, re string) {
		for _, n := range ns {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
		if re != "" && !seenRe[re] {
			seenRe[re] = true
			regexes = append(regexes, re)
		}
	}
	if g := c.groups[r.Group]; g != nil && g.cg != nil {
		for id, m := range g.cg.members {
			if id != r.MemberID {
				add(m.names, m.regex)
			}
		}
	}
	ns, re := r.SubscribedTopics, deref(r.SubscribedRegex)
	if g := c.groups[r.Group]; g != nil && g.cg != nil && g.cg.members[r.MemberID] != nil {
		m := g.cg.members[r.MemberID]
		if ns == nil {
			ns = m.names
		}
		if r.SubscribedRegex == nil {
			re = m.regex
		}
	}
	add(ns, re)
	sort.Strings(names)
	sort.Strings(regexes)
	return names, regexes
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// resolveSubscribed looks up the named topics and those regexes match.
func (c *Coordinator) resolveSubscribed(ctx context.Context, names, regexes []string) (map[string]TopicInfo, error) {
	out := map[string]TopicInfo{}
	if c.cfg.Topics == nil {
		return out, nil
	}
	if len(names) > 0 {
		got, err := c.cfg.Topics.Topics(ctx, names)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, got)
	}
	if len(regexes) > 0 {
		all, err := c.allTopics(ctx)
		if err != nil {
			return nil, err
		}
		for _, re := range regexes {
			rx, err := regexp.Compile("^(?:" + re + ")$")
			if err != nil {
				continue
			}
			for _, t := range all {
				if rx.MatchString(t.Name) {
					out[t.Name] = t
				}
			}
		}
	}
	return out, nil
}

// allTopics returns the topic list, refreshed every regexRefresh.
func (c *Coordinator) allTopics(ctx context.Context) ([]TopicInfo, error) {
	c.mu.Lock()
	list, at := c.topicList, c.topicListAt
	c.mu.Unlock()
	if list != nil && time.Since(at) < regexRefresh {
		return list, nil
	}
	list, err := c.cfg.Topics.AllTopics(ctx)
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []TopicInfo{}
	}
	c.mu.Lock()
	c.topicList, c.topicListAt = list, time.Now()
	c.mu.Unlock()
	return list, nil
}

// consumerGroupLocked returns the group as a consumer protocol group,
// turning an empty classic group into one; a classic group with members
// is not a consumer group (Kafka without online migration).
func (c *Coordinator) consumerGroupLocked(id string, create bool) (*group, *kerr.Error, string) {
	g := c.groups[id]
	switch {
	case g == nil && !create:
		return nil, kerr.GroupIDNotFound, fmt.Sprintf("Consumer group %s not found.", id)
	case g != nil && len(g.members) > 0:
		return nil, kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", id)
	case g != nil && g.cg == nil && !create:
		return nil, kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", id)
	}
	g = c.groupLocked(id)
	if g.cg == nil {
		g.cg = newConsumerGroup()
		g.protocolType = "consumer"
	}
	return g, nil, ""
}

func (c *Coordinator) consumerHeartbeatLocked(r ConsumerHeartbeatRequest, topics map[string]TopicInfo) ConsumerHeartbeatResult {
	g, e, msg := c.consumerGroupLocked(r.Group, r.MemberEpoch == 0)
	if e != nil {
		return refuse(e, "%s", msg)
	}
	cg := g.cg
	var m *consumerMember
	bump := false
	instance := deref(r.InstanceID)
	switch {
	case r.MemberEpoch == 0 && instance != "":
		// A static member joins, or comes back and takes its old
		// member's place, epoch and partitions.
		if oldID := cg.static[instance]; oldID != "" && oldID != r.MemberID {
			old := cg.members[oldID]
			if old.epoch != StaticLeaveEpoch {
				c.log.Info("static member cannot join: its instance id is in use", "group", g.id, "member", r.MemberID, "instance_id", instance, "holder", oldID)
				return refuse(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", r.MemberID, instance, oldID)
			}
			m = &consumerMember{id: r.MemberID, instanceID: instance, epoch: old.prevEpoch, prevEpoch: old.prevEpoch, state: old.state,
				rackID: old.rackID, rebalanceTimeout: old.rebalanceTimeout, names: old.names, regex: old.regex, assignor: old.assignor,
				assigned: old.assigned, revoking: old.revoking}
			c.dropConsumerMember(g, oldID)
			cg.members[m.id] = m
			cg.static[instance] = m.id
			cg.target[m.id] = cg.target[oldID]
			delete(cg.target, oldID)
			c.log.Info("static member replaced", "group", g.id, "instance_id", instance, "old_member", oldID, "member", m.id, "epoch", m.epoch)
		} else if m = cg.members[r.MemberID]; m == nil {
			bump = true
		}
	case r.MemberEpoch == 0:
		if m = cg.members[r.MemberID]; m == nil {
			bump = true
		}
	case instance != "":
		switch id := cg.static[instance]; {
		case id == "":
			return refuse(kerr.UnknownMemberID, "Instance id %s is unknown.", instance)
		case id != r.MemberID:
			c.log.Info("static member fenced by another member", "group", g.id, "member", r.MemberID, "instance_id", instance, "holder", id)
			return refuse(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", r.MemberID, instance, id)
		}
		m = cg.members[r.MemberID]
	default:
		if m = cg.members[r.MemberID]; m == nil {
			return refuse(kerr.UnknownMemberID, "Member %s is not a member of group %s.", r.MemberID, g.id)
		}
	}
	if m != nil && r.MemberEpoch != 0 {
		if e := m.checkEpoch(r.MemberEpoch, r.Owned, cg.topics); e != nil {
			c.log.Info("consumer group member fenced", "group", g.id, "member", m.id, "epoch", r.MemberEpoch, "member_epoch", m.epoch)
			return *e
		}
	}
	if m == nil {
		m = &consumerMember{id: r.MemberID, instanceID: instance, state: memberStable, assigned: partSet{}, revoking: partSet{}}
		cg.members[m.id] = m
		if instance != "" {
			cg.static[instance] = m.id
		}
		c.log.Info("consumer group member joined", "group", g.id, "member", m.id, "instance_id", instance)
	}
	before := maps.Clone(m.assigned)
	m.clientID, m.clientHost = r.ClientID, r.ClientHost
	if r.RackID != nil {
		m.rackID = *r.RackID
	}
	if r.RebalanceTimeoutMs >= 0 {
		m.rebalanceTimeout = time.Duration(r.RebalanceTimeoutMs) * time.Millisecond
	}
	if r.SubscribedTopics != nil {
		names := slices.Clone(r.SubscribedTopics)
		sort.Strings(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.names) {
			m.names, bump = names, true
		}
	}
	if r.SubscribedRegex != nil && *r.SubscribedRegex != m.regex {
		m.regex, bump = *r.SubscribedRegex, true
	}
	if bump {
		c.log.Debug("consumer group member subscription", "group", g.id, "member", m.id, "topics", m.names, "regex", m.regex)
	}
	if r.ServerAssignor != nil && *r.ServerAssignor != m.assignor {
		m.assignor = *r.ServerAssignor
	}
	if assignor := cg.preferredAssignor(); assignor != cg.assignor {
		cg.assignor, bump = assignor, true
	}
	if !maps.Equal(topics, cg.topics) {
		bump = true
	}
	if bump {
		cg.topics = topics
		c.bumpConsumerGroup(g)
	}
	c.reconcile(g, m, r.Owned)
	c.touchConsumer(g, m)
	res := ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: c.cfg.ConsumerHeartbeatInterval}
	full := r.MemberEpoch == 0 || r.RebalanceTimeoutMs != -1 && r.SubscribedTopics != nil && r.Owned != nil
	if full || !maps.Equal(before, m.assigned) {
		res.Assignment, res.Sent = cg.assignedTopics(m.assigned), true
	}
	return res
}

// checkEpoch validates a member's epoch: a lower one is taken only if it
// is the previous epoch and the member owns no more than it is assigned
// (the answer that bumped it was lost).
func (m *consumerMember) checkEpoch(epoch int32, owned []OwnedTopic, topics map[string]TopicInfo) *ConsumerHeartbeatResult {
	switch {
	case epoch > m.epoch:
		r := refuse(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
		return &r
	case epoch < m.epoch && (epoch != m.prevEpoch || !ownsSubset(owned, m.assigned, topics)):
		r := refuse(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
		return &r
	}
	return nil
}

// ownsSubset tells whether owned lies within assigned (false when owned
// was not sent).
func ownsSubset(owned []OwnedTopic, assigned partSet, topics map[string]TopicInfo) bool {
	if owned == nil {
		return false
	}
	byID := map[[16]byte]string{}
	for _, t := range topics {
		byID[t.ID] = t.Name
	}
	for _, o := range owned {
		name, ok := byID[o.ID]
		for _, p := range o.Partitions {
			if !ok || !assigned[TopicPartition{name, p}] {
				return false
			}
		}
	}
	return true
}

// ownsAnyOf tells whether a member still reports owning one of revoking
// (true when it did not say).
func ownsAnyOf(owned []OwnedTopic, revoking partSet, topics map[string]TopicInfo) bool {
	if owned == nil {
		return true
	}
	byID := map[[16]byte]string{}
	for _, t := range topics {
		byID[t.ID] = t.Name
	}
	for _, o := range owned {
		for _, p := range o.Partitions {
			if name, ok := byID[o.ID]; ok && revoking[TopicPartition{name, p}] {
				return true
			}
		}
	}
	return false
}

// preferredAssignor is the assignor most members ask for (ties to the
// name), the default when none does.
func (cg *consumerGroup) preferredAssignor() string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best := ""
	for _, a := range Assignors {
		if votes[a] > votes[best] {
			best = a
		}
	}
	if best == "" {
		return AssignorUniform
	}
	return best
}

// bumpConsumerGroup starts a new group epoch and computes its target
// assignment.
func (c *Coordinator) bumpConsumerGroup(g *group) {
	cg := g.cg
	cg.epoch++
	spec := assignSpec{subscribed: map[string][]string{}, partitions: map[string]int32{}, previous: cg.target}
	for id, m := range cg.members {
		spec.members = append(spec.members, id)
		var rx *regexp.Regexp
		if m.regex != "" {
			rx, _ = regexp.Compile("^(?:" + m.regex + ")$")
		}
		for name, t := range cg.topics {
			if slices.Contains(m.names, name) || rx != nil && rx.MatchString(name) {
				spec.subscribed[id] = append(spec.subscribed[id], name)
				spec.partitions[name] = t.Partitions
			}
		}
		sort.Strings(spec.subscribed[id])
	}
	sort.Strings(spec.members)
	cg.target = assign(cg.assignor, spec)
	cg.assignmentEpoch = cg.epoch
	if c.cfg.OnRebalance != nil {
		c.cfg.OnRebalance(g.id)
	}
	c.log.Info("consumer group assignment computed", "group", g.id, "epoch", cg.epoch, "assignor", cg.assignor, "members", len(cg.members), "topics", len(cg.topics))
}

// heldByOthers tells whether a member other than m holds tp, assigned or
// not yet revoked.
func (cg *consumerGroup) heldByOthers(m *consumerMember, tp TopicPartition) bool {
	for _, o := range cg.members {
		if o != m && (o.assigned[tp] || o.revoking[tp]) {
			return true
		}
	}
	return false
}

// reconcile moves a member towards its target assignment: partitions to
// revoke are taken away first, the epoch staying until the member's
// heartbeat no longer owns them; then the member gets the target epoch
// and the new partitions no other member still holds (the others come on
// a later heartbeat, once released).
func (c *Coordinator) reconcile(g *group, m *consumerMember, owned []OwnedTopic) {
	cg := g.cg
	switch {
	case m.state == memberStable && m.epoch == cg.assignmentEpoch:
		return
	case m.state == memberUnrevokedPartitions && ownsAnyOf(owned, m.revoking, cg.topics):
		return // still waiting for the member to revoke
	}
	target := cg.target[m.id]
	keep, revoke, fresh := partSet{}, partSet{}, partSet{}
	unreleased := false
	for tp := range m.assigned {
		if target[tp] {
			keep[tp] = true
		} else {
			revoke[tp] = true
		}
	}
	for tp := range target {
		if keep[tp] {
			continue
		}
		if cg.heldByOthers(m, tp) {
			unreleased = true
		} else {
			fresh[tp] = true
		}
	}
	m.revoking = partSet{}
	if m.revokeTimer != nil {
		m.revokeTimer.Stop()
		m.revokeTimer = nil
	}
	switch {
	case len(revoke) > 0:
		m.assigned, m.revoking, m.state = keep, revoke, memberUnrevokedPartitions
		c.startRevokeTimer(g, m)
	case unreleased:
		maps.Copy(keep, fresh)
		m.assigned, m.state = keep, memberUnreleasedPartitions
		m.setEpoch(cg.assignmentEpoch)
	default:
		maps.Copy(keep, fresh)
		m.assigned, m.state = keep, memberStable
		m.setEpoch(cg.assignmentEpoch)
	}
}

func (m *consumerMember) setEpoch(e int32) {
	if m.epoch != e {
		m.prevEpoch, m.epoch = m.epoch, e
	}
}

// startRevokeTimer fences a member that does not revoke its partitions
// within its rebalance timeout.
func (c *Coordinator) startRevokeTimer(g *group, m *consumerMember) {
	var t *time.Timer
	t = time.AfterFunc(m.rebalanceTimeout, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if g.cg == nil || g.cg.members[m.id] != m || m.revokeTimer != t {
			return
		}
		c.log.Info("consumer group member did not revoke its partitions in time; fenced", "group", g.id, "member", m.id,
			"rebalance_timeout", m.rebalanceTimeout)
		c.removeConsumerMember(g, m.id)
	})
	m.revokeTimer = t
}

// touchConsumer restarts a member's session timer.
func (c *Coordinator) touchConsumer(g *group, m *consumerMember) {
	if m.expiry != nil {
		m.expiry.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(c.cfg.ConsumerSessionTimeout, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if g.cg == nil || g.cg.members[m.id] != m || m.expiry != t {
			return
		}
		c.log.Info("consumer group member session expired", "group", g.id, "member", m.id, "session_timeout", c.cfg.ConsumerSessionTimeout)
		c.removeConsumerMember(g, m.id)
	})
	m.expiry = t
}

// dropConsumerMember forgets a member, stopping its timers.
func (c *Coordinator) dropConsumerMember(g *group, id string) {
	cg := g.cg
	m := cg.members[id]
	if m == nil {
		return
	}
	if m.expiry != nil {
		m.expiry.Stop()
	}
	if m.revokeTimer != nil {
		m.revokeTimer.Stop()
	}
	delete(cg.members, id)
	delete(cg.target, id)
	if m.instanceID != "" && cg.static[m.instanceID] == id {
		delete(cg.static, m.instanceID)
	}
}

// removeConsumerMember takes a member out of the group and computes the
// assignment of those left.
func (c *Coordinator) removeConsumerMember(g *group, id string) {
	c.dropConsumerMember(g, id)
	g.cg.assignor = g.cg.preferredAssignor()
	c.bumpConsumerGroup(g)
}

// consumerLeave serves a heartbeat with epoch -1 (leave) or -2 (a static
// member leaves for a while: it keeps its partitions until its session
// times out, for the instance that comes back).
func (c *Coordinator) consumerLeave(r ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[r.Group] == nil {
		// Kafka words this one apart from a heartbeat's.
		return refuse(kerr.GroupIDNotFound, "Group %s not found.", r.Group)
	}
	g, e, msg := c.consumerGroupLocked(r.Group, false)
	if e != nil {
		return refuse(e, "%s", msg)
	}
	cg := g.cg
	id := r.MemberID
	if r.InstanceID != nil {
		switch held := cg.static[*r.InstanceID]; {
		case held == "":
			return refuse(kerr.UnknownMemberID, "Instance id %s is unknown.", *r.InstanceID)
		case held != r.MemberID:
			return refuse(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", r.MemberID, *r.InstanceID, held)
		}
	}
	m := cg.members[id]
	if m == nil {
		return refuse(kerr.UnknownMemberID, "Member %s is not a member of group %s.", id, g.id)
	}
	if r.MemberEpoch == StaticLeaveEpoch {
		c.log.Info("static consumer group member left for a while", "group", g.id, "member", id, "instance_id", m.instanceID)
		if m.epoch != StaticLeaveEpoch {
			m.prevEpoch, m.epoch = m.epoch, StaticLeaveEpoch
		}
		c.touchConsumer(g, m)
		return ConsumerHeartbeatResult{MemberID: id, MemberEpoch: StaticLeaveEpoch}
	}
	c.log.Info("consumer group member left", "group", g.id, "member", id)
	c.removeConsumerMember(g, id)
	return ConsumerHeartbeatResult{MemberID: id, MemberEpoch: LeaveEpoch}
}

// assignedTopics lists a partition set by topic, with the topics' ids.
func (cg *consumerGroup) assignedTopics(s partSet) []AssignedTopic {
	out := []AssignedTopic{}
	for _, tp := range sortedParts(s) {
		if n := len(out); n > 0 && out[n-1].Name == tp.Topic {
			out[n-1].Partitions = append(out[n-1].Partitions, tp.Partition)
			continue
		}
		out = append(out, AssignedTopic{Name: tp.Topic, ID: cg.topics[tp.Topic].ID, Partitions: []int32{tp.Partition}})
	}
	return out
}

// ConsumerGroupDescription is a consumer protocol group as
// ConsumerGroupDescribe shows it.
type ConsumerGroupDescription struct {
	State                  State
	Epoch, AssignmentEpoch int32
	Assignor               string
	Members                []ConsumerMemberDescription
}

// ConsumerMemberDescription is one member of a ConsumerGroupDescription.
type ConsumerMemberDescription struct {
	ID, InstanceID, RackID, ClientID, ClientHost string
	Epoch                                        int32
	SubscribedTopics                             []string
	SubscribedRegex                              string
	Assignment, Target                           []AssignedTopic
}

// DescribeConsumerGroup describes a consumer protocol group:
// GROUP_ID_NOT_FOUND for an unknown group or a classic one.
func (c *Coordinator) DescribeConsumerGroup(groupID string) (ConsumerGroupDescription, *kerr.Error, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	switch {
	case g == nil || !g.exists():
		return ConsumerGroupDescription{}, kerr.GroupIDNotFound, fmt.Sprintf("Group %s not found.", groupID)
	case g.cg == nil:
		return ConsumerGroupDescription{}, kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", groupID)
	}
	cg := g.cg
	d := ConsumerGroupDescription{State: cg.state(), Epoch: cg.epoch, AssignmentEpoch: cg.assignmentEpoch, Assignor: cg.preferredAssignor()}
	ids := slices.Sorted(maps.Keys(cg.members))
	for _, id := range ids {
		m := cg.members[id]
		d.Members = append(d.Members, ConsumerMemberDescription{ID: id, InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID,
			ClientHost: m.clientHost, Epoch: m.epoch, SubscribedTopics: m.names, SubscribedRegex: m.regex,
			Assignment: cg.assignedTopics(m.assigned), Target: cg.assignedTopics(cg.target[id])})
	}
	return d, nil, ""
}

// validateMember checks an offset commit or fetch of a member
// of a consumer protocol group (Kafka's rules): an unknown member is
// UNKNOWN_MEMBER_ID, another epoch STALE_MEMBER_EPOCH. Called locked.
func (cg *consumerGroup) validateMember(memberID string, epoch int32) *kerr.Error {
	m := cg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch
	}
	return nil
}

// ValidateOffsetFetch checks an OffsetFetch (v9+) that names a member: a
// member id or epoch of a consumer protocol group must be the member's
// current one. A fetch without member (epoch -1, no id) is always taken.
func (c *Coordinator) ValidateOffsetFetch(groupID, memberID string, epoch int32) *kerr.Error {
	if memberID == "" && epoch < 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	if g == nil || g.cg == nil {
		return nil // classic and unknown groups: not checked
	}
	return g.cg.validateMember(memberID, epoch)
}

// validateCommit applies Kafka's OffsetCommit rules to a consumer protocol
// group: a commit without member epoch (-1) is taken while the group is
// empty; any other must come from a current member at its current epoch,
// with OffsetCommit v9 or above. Called locked.
func (cg *consumerGroup) validateCommit(r CommitRequest) *kerr.Error {
	switch {
	case r.Generation < 0 && len(cg.members) == 0:
		return nil
	case cg.members[r.MemberID] == nil:
		return kerr.UnknownMemberID
	case r.Version < 9:
		return kerr.UnsupportedVersion
	}
	return cg.validateMember(r.MemberID, r.Generation)
}
