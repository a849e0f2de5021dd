package acl

import (
	"slices"
	"strings"
	"testing"
)

const example = `
# permission  principal    operation  resource
allow  User:alice   WRITE     topic:shop.orders
allow  User:*       DESCRIBE  topic:public.*
allow  User:etl     ALL       topic:shop.*
deny   User:etl     WRITE     topic:shop.payments   # not even etl
allow  User:reader  READ      topic:*
allow  User:reader  READ      group:readers-*
allow  User:ops     DELETE    group:*
`

func TestAllowed(t *testing.T) {
	r, err := Parse(strings.NewReader(example))
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 7 {
		t.Fatalf("%d rules", r.Len())
	}
	tests := []struct {
		principal string
		op        Operation
		topic     string
		want      bool
	}{
		{"User:alice", Write, "shop.orders", true},
		{"User:alice", Describe, "shop.orders", true}, // WRITE implies DESCRIBE
		{"User:alice", Read, "shop.orders", false},
		{"User:alice", Write, "shop.orders2", false}, // literal, not prefix
		{"User:alice", Describe, "public.news", true},
		{Anonymous, Describe, "public.news", true}, // User:* covers anonymous sessions
		{Anonymous, Write, "public.news", false},
		{"User:etl", Write, "shop.refunds", true},
		{"User:etl", Read, "shop.refunds", true},
		{"User:etl", Write, "shop.payments", false}, // deny wins
		{"User:etl", Describe, "shop.payments", true},
		{"User:etl", Write, "shopx", false},
		{"User:reader", Describe, "anything", true}, // READ implies DESCRIBE
		{"User:reader", Write, "anything", false},
		{"User:nobody", Describe, "shop.orders", false}, // nothing allows it
	}
	for _, tt := range tests {
		if got := r.Allowed(tt.principal, tt.op, tt.topic); got != tt.want {
			t.Errorf("Allowed(%s, %s, %s) = %v, want %v", tt.principal, tt.op, tt.topic, got, tt.want)
		}
	}
	if (&Rules{}).Allowed("User:alice", Describe, "x") {
		t.Error("empty rules allow")
	}
}

func TestParseRejects(t *testing.T) {
	for _, bad := range []string{
		"allow User:a WRITE",                   // missing resource
		"permit User:a WRITE topic:x",          // permission
		"allow alice WRITE topic:x",            // principal
		"allow User: WRITE topic:x",            // empty name
		"allow User:a DELETE topic:x",          // operation
		"allow User:a WRITE group:x",           // not a group operation
		"allow User:a READ cluster:x",          // resource type
		"allow User:a DELETE topic:x",          // topics are not deleted
		"allow User:a WRITE topic:",            // empty topic
		"allow User:a WRITE topic:a*b",         // inner wildcard
		"allow User:a WRITE topic:a**",         // double wildcard
		"allow User:a WRITE topic:x extra",     // extra field
		"allow User:a WRITE topic:x\nbad line", // second line
	} {
		if _, err := Parse(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line ") {
			t.Errorf("Parse(%q) = %v, want an error naming the line", bad, err)
		}
	}
}

func TestPrincipal(t *testing.T) {
	if Principal("") != Anonymous || Principal("bob") != "User:bob" {
		t.Fatal(Principal(""), Principal("bob"))
	}
}

// TestAllowedGroup: group rules and topic rules are apart; READ on a group
// implies DESCRIBE.
func TestAllowedGroup(t *testing.T) {
	r, err := Parse(strings.NewReader(example))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		principal string
		op        Operation
		group     string
		want      bool
	}{
		{"User:reader", Read, "readers-1", true},
		{"User:reader", Describe, "readers-1", true},
		{"User:reader", Read, "writers", false},
		{"User:etl", Read, "shop.x", false}, // topic:shop.* is no group rule
		{"User:alice", Read, "shop.orders", false},
		{"User:ops", Delete, "any", true},
		{"User:ops", Describe, "any", true}, // DELETE implies DESCRIBE
		{"User:ops", Read, "any", false},
		{"User:reader", Delete, "readers-1", false},
	} {
		if got := r.AllowedGroup(tt.principal, tt.op, tt.group); got != tt.want {
			t.Errorf("AllowedGroup(%s, %s, %s) = %v, want %v", tt.principal, tt.op, tt.group, got, tt.want)
		}
	}
	if r.Allowed("User:reader", Read, "readers-1") != true || r.AllowedGroup("User:reader", Write, "readers-1") {
		t.Error("topic and group rules mixed")
	}
}

// TestClusterAndBindings: cluster:kafka-cluster takes DESCRIBE (or ALL) and
// nothing else; Bindings gives every rule back in file order, wildcards as
// "*" and prefixes without their "*".
func TestClusterAndBindings(t *testing.T) {
	r, err := Parse(strings.NewReader(`
allow User:admin DESCRIBE cluster:kafka-cluster
allow User:*     WRITE    topic:shop.*
deny  User:bob   ALL      topic:*
allow User:etl   READ     group:etl
`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.AllowedCluster("User:admin", Describe) || r.AllowedCluster("User:bob", Describe) || r.Allowed("User:admin", Describe, ClusterName) {
		t.Error("cluster rule: admin may describe the cluster, bob may not, and it is no topic rule")
	}
	want := []Binding{
		{Allow: true, Principal: "User:admin", Operation: Describe, Resource: ClusterResource, Name: ClusterName},
		{Allow: true, Principal: "User:*", Operation: Write, Resource: TopicResource, Name: "shop.", Prefixed: true},
		{Allow: false, Principal: "User:bob", Operation: All, Resource: TopicResource, Name: "*"},
		{Allow: true, Principal: "User:etl", Operation: Read, Resource: GroupResource, Name: "etl"},
	}
	if got := r.Bindings(); !slices.Equal(got, want) {
		t.Errorf("bindings\n got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{"allow User:a READ cluster:kafka-cluster", "allow User:a DESCRIBE cluster:other"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed, want an error", bad)
		}
	}
}

// TestAllowedTransactionalID: transactional id rules are apart from topic
// and group rules; WRITE implies DESCRIBE; READ and DELETE do not apply.
func TestAllowedTransactionalID(t *testing.T) {
	r, err := Parse(strings.NewReader(`
allow User:etl    WRITE    transactional_id:etl-*
allow User:ops    DESCRIBE transactional_id:*
deny  User:etl    ALL      transactional_id:etl-secret
allow User:etl    WRITE    topic:*
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		principal string
		op        Operation
		id        string
		want      bool
	}{
		{"User:etl", Write, "etl-1", true},
		{"User:etl", Describe, "etl-1", true},
		{"User:etl", Write, "etl-secret", false},
		{"User:etl", Write, "other", false}, // topic:* is no transactional id rule
		{"User:ops", Describe, "etl-1", true},
		{"User:ops", Write, "etl-1", false},
	} {
		if got := r.AllowedTransactionalID(tt.principal, tt.op, tt.id); got != tt.want {
			t.Errorf("%s %s transactional_id:%s = %v, want %v", tt.principal, tt.op, tt.id, got, tt.want)
		}
	}
	if r.Allowed("User:etl", Write, "etl-1") != true || r.AllowedGroup("User:etl", Read, "etl-1") {
		t.Error("transactional id rules leaked into topics or groups")
	}
	for _, bad := range []string{"allow User:x READ transactional_id:a", "allow User:x DELETE transactional_id:a", "allow User:x WRITE transactional_id:"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
