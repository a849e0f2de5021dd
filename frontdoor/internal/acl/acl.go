// Package acl decides which principal may do what to which topic, from an
// ACL file in the spirit of Kafka's ACLs (KIP-11, kafka-acls):
//
//	# permission  principal     operation  resource
//	allow         User:alice    WRITE      topic:shop.orders
//	allow         User:*        DESCRIBE   topic:*
//	allow         User:etl      WRITE      topic:shop.*
//	deny          User:intern   ALL        topic:shop.payments
//	allow         User:etl      READ       group:etl-*
//	allow         User:etl      WRITE      transactional_id:etl-*
//
// A resource is a topic or a consumer group: a literal name, a prefix (a
// name ending in "*"), or "*" for every topic (group). Consumer groups
// need READ for joining and committing, DESCRIBE for describing, DELETE for
// deleting the group or its offsets. Transactional ids (Kafka's
// TransactionalId resource, transactional_id:...) need WRITE for using them
// in transactions and DESCRIBE for describing them. The resource cluster:kafka-cluster (Kafka's only cluster
// name) takes DESCRIBE, which lets a principal list the ACLs (DescribeAcls). A principal is
// "User:<name>" or "User:*"; a session without SASL is "User:ANONYMOUS". Operations are READ,
// WRITE, DESCRIBE, DELETE and ALL; allowing READ, WRITE or DELETE also allows DESCRIBE, as in
// Kafka. A request is allowed when
// at least one allow rule and no deny rule matches it: deny wins, and
// whatever no rule allows is denied.
package acl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Operation is what a request does to a topic.
type Operation uint8

// The operations Ferry checks.
const (
	Describe Operation = iota + 1 // Metadata
	Write                         // Produce
	Read                          // Fetch (consumers)
	All                           // rules only: every operation
	Delete                        // DeleteGroups, OffsetDelete (groups)
)

var opNames = map[string]Operation{"DESCRIBE": Describe, "WRITE": Write, "READ": Read, "ALL": All, "DELETE": Delete}

func (o Operation) String() string {
	for n, v := range opNames {
		if v == o {
			return n
		}
	}
	return fmt.Sprintf("Operation(%d)", uint8(o))
}

// Anonymous is the principal of a connection that did not authenticate.
const Anonymous = "User:ANONYMOUS"

// Principal is the principal of a SASL user ("" means no authentication).
func Principal(user string) string {
	if user == "" {
		return Anonymous
	}
	return "User:" + user
}

// Resource is what a rule is about.
type Resource uint8

// The resources of rules.
const (
	TopicResource Resource = iota
	GroupResource
	ClusterResource
	TransactionalIDResource
)

// ClusterName is the cluster resource's name, as in Kafka.
const ClusterName = "kafka-cluster"

type rule struct {
	allow     bool
	principal string // "User:x" or "User:*"
	op        Operation
	kind      Resource
	topic     string // literal, prefix (without the "*") or "" with any
	prefix    bool
	any       bool
}

func (r rule) matches(principal string, op Operation, kind Resource, topic string) bool {
	if r.kind != kind || r.principal != "User:*" && r.principal != principal {
		return false
	}
	// ALL covers everything; an allowed READ or WRITE implies DESCRIBE (a
	// denied one does not deny DESCRIBE), as in Kafka.
	implied := r.allow && op == Describe && (r.op == Read || r.op == Write || r.op == Delete)
	if r.op != All && r.op != op && !implied {
		return false
	}
	switch {
	case r.any:
		return true
	case r.prefix:
		return strings.HasPrefix(topic, r.topic)
	default:
		return topic == r.topic
	}
}

// Rules is a parsed ACL file. The zero value denies everything.
type Rules struct {
	rules []rule
}

// Len is the number of rules.
func (r *Rules) Len() int { return len(r.rules) }

// Allowed reports whether principal may do op to topic.
func (r *Rules) Allowed(principal string, op Operation, topic string) bool {
	return r.allowed(principal, op, TopicResource, topic)
}

// AllowedGroup reports whether principal may do op to a consumer group.
func (r *Rules) AllowedGroup(principal string, op Operation, group string) bool {
	return r.allowed(principal, op, GroupResource, group)
}

// AllowedTransactionalID reports whether principal may do op to a
// transactional id.
func (r *Rules) AllowedTransactionalID(principal string, op Operation, id string) bool {
	return r.allowed(principal, op, TransactionalIDResource, id)
}

// AllowedCluster reports whether principal may do op to the cluster.
func (r *Rules) AllowedCluster(principal string, op Operation) bool {
	return r.allowed(principal, op, ClusterResource, ClusterName)
}

func (r *Rules) allowed(principal string, op Operation, kind Resource, name string) bool {
	allowed := false
	for _, ru := range r.rules {
		if !ru.matches(principal, op, kind, name) {
			continue
		}
		if !ru.allow {
			return false
		}
		allowed = true
	}
	return allowed
}

// Parse reads the ACL file format; errors name the line.
func Parse(rd io.Reader) (*Rules, error) {
	out := &Rules{}
	sc := bufio.NewScanner(rd)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		r, err := parseRule(fields)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out.rules = append(out.rules, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func parseRule(f []string) (rule, error) {
	if len(f) != 4 {
		return rule{}, errors.New("want: allow|deny User:<name>|User:* READ|WRITE|DESCRIBE|DELETE|ALL topic:<name>|topic:<prefix>*|topic:*|group:<name>|group:<prefix>*|group:*|transactional_id:<name>|transactional_id:<prefix>*|transactional_id:*|cluster:kafka-cluster")
	}
	var r rule
	switch strings.ToLower(f[0]) {
	case "allow":
		r.allow = true
	case "deny":
	default:
		return rule{}, fmt.Errorf("permission %q: want allow or deny", f[0])
	}
	name, ok := strings.CutPrefix(f[1], "User:")
	if !ok || name == "" {
		return rule{}, fmt.Errorf("principal %q: want User:<name> or User:*", f[1])
	}
	r.principal = f[1]
	if r.op, ok = opNames[strings.ToUpper(f[2])]; !ok {
		return rule{}, fmt.Errorf("operation %q: want READ, WRITE, DESCRIBE, DELETE or ALL", f[2])
	}
	if f[3] == "cluster:"+ClusterName {
		if r.op != Describe && r.op != All {
			return rule{}, fmt.Errorf("resource %q: the cluster takes DESCRIBE (or ALL)", f[3])
		}
		r.kind, r.topic = ClusterResource, ClusterName
		return r, nil
	}
	topic, ok := strings.CutPrefix(f[3], "topic:")
	if !ok {
		topic, ok = strings.CutPrefix(f[3], "group:")
		r.kind = GroupResource
	}
	if !ok {
		topic, ok = strings.CutPrefix(f[3], "transactional_id:")
		r.kind = TransactionalIDResource
	}
	if !ok || topic == "" {
		return rule{}, fmt.Errorf("resource %q: want topic:<name>, topic:<prefix>*, topic:* or the same with group: or transactional_id:", f[3])
	}
	if r.kind == TransactionalIDResource && r.op != Write && r.op != Describe && r.op != All {
		return rule{}, fmt.Errorf("resource %q: transactional ids are used (WRITE) or described (DESCRIBE)", f[3])
	}
	if r.kind == GroupResource && r.op == Write {
		return rule{}, fmt.Errorf("resource %q: groups are read (READ), described (DESCRIBE) or deleted (DELETE), not written", f[3])
	}
	if r.kind == TopicResource && r.op == Delete {
		return rule{}, fmt.Errorf("resource %q: topics are not deleted through Ferry; DELETE is for groups", f[3])
	}
	switch {
	case topic == "*":
		r.any = true
	case strings.HasSuffix(topic, "*"):
		r.topic, r.prefix = strings.TrimSuffix(topic, "*"), true
		if strings.Contains(r.topic, "*") {
			return rule{}, fmt.Errorf("resource %q: '*' only at the end", f[3])
		}
	case strings.Contains(topic, "*"):
		return rule{}, fmt.Errorf("resource %q: '*' only at the end", f[3])
	default:
		r.topic = topic
	}
	return r, nil
}

// ParseBytes is Parse over a file's content.
func ParseBytes(b []byte) (*Rules, error) { return Parse(bytes.NewReader(b)) }

// Binding is one rule in Kafka's ACL binding terms (DescribeAcls).
type Binding struct {
	Allow     bool
	Principal string
	Operation Operation
	Resource  Resource
	// Name is the literal name, the prefix (Prefixed) or "*" (every one).
	Name     string
	Prefixed bool
}

// Bindings lists the rules in file order.
func (r *Rules) Bindings() []Binding {
	out := make([]Binding, 0, len(r.rules))
	for _, ru := range r.rules {
		b := Binding{Allow: ru.allow, Principal: ru.principal, Operation: ru.op, Resource: ru.kind, Name: ru.topic, Prefixed: ru.prefix}
		if ru.any {
			b.Name = "*"
		}
		out = append(out, b)
	}
	return out
}
