package broker

import (
	"strings"
	"testing"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka/admin"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// TestDescribeACLs: the ACL file's rules as Kafka bindings, filtered as a
// broker filters them, to a principal allowed DESCRIBE on the cluster;
// others get CLUSTER_AUTHORIZATION_FAILED, and without an ACL file it is
// SECURITY_DISABLED.
func TestDescribeACLs(t *testing.T) {
	rules, err := acl.Parse(strings.NewReader(`
allow User:ANONYMOUS DESCRIBE cluster:kafka-cluster
allow User:alice     WRITE    topic:orders
allow User:*         READ     topic:shop.*
deny  User:bob       ALL      topic:*
allow User:alice     READ     topic:orders
allow User:etl       READ     group:etl
`))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{authz: rules})
	c := dialRaw(t, h.addr)
	describe := func(v int16, edit func(*kmsg.DescribeACLsRequest)) *kmsg.DescribeACLsResponse {
		r := kmsg.NewPtrDescribeACLsRequest()
		r.Version = v
		r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		if edit != nil {
			edit(r)
		}
		return c.roundTrip(r).(*kmsg.DescribeACLsResponse)
	}
	// flat is "TYPE:name:PATTERN principal OP PERM" per binding.
	flat := func(resp *kmsg.DescribeACLsResponse) string {
		var out []string
		for _, res := range resp.Resources {
			for _, a := range res.ACLs {
				if a.Host != "*" {
					t.Errorf("host %q, want *", a.Host)
				}
				out = append(out, res.ResourceType.String()+":"+res.ResourceName+":"+res.ResourcePatternType.String()+" "+a.Principal+" "+a.Operation.String()+" "+a.PermissionType.String())
			}
		}
		return strings.Join(out, ", ")
	}
	for v := int16(admin.DescribeACLsMin); v <= admin.DescribeACLsMax; v++ {
		resp := describe(v, nil)
		want := "CLUSTER:kafka-cluster:LITERAL User:ANONYMOUS DESCRIBE ALLOW, TOPIC:orders:LITERAL User:alice WRITE ALLOW, TOPIC:orders:LITERAL User:alice READ ALLOW, " +
			"TOPIC:shop.:PREFIXED User:* READ ALLOW, TOPIC:*:LITERAL User:bob ALL DENY, GROUP:etl:LITERAL User:etl READ ALLOW"
		if resp.ErrorCode != 0 || flat(resp) != want {
			t.Errorf("v%d all: %d %s\nwant %s", v, resp.ErrorCode, flat(resp), want)
		}
		if len(resp.Resources) != 5 {
			t.Errorf("v%d: %d resources, want the two orders bindings under one", v, len(resp.Resources))
		}
	}
	for name, c := range map[string]struct {
		edit func(*kmsg.DescribeACLsRequest)
		want string
	}{
		"MATCH shop.x": {func(r *kmsg.DescribeACLsRequest) {
			r.ResourceType, r.ResourceName, r.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr("shop.x"), kmsg.ACLResourcePatternTypeMatch
		}, "TOPIC:shop.:PREFIXED User:* READ ALLOW, TOPIC:*:LITERAL User:bob ALL DENY"},
		"principal alice, READ": {func(r *kmsg.DescribeACLsRequest) {
			r.Principal, r.Operation = kmsg.StringPtr("User:alice"), kmsg.ACLOperationRead
		}, "TOPIC:orders:LITERAL User:alice READ ALLOW"},
		"DENY": {func(r *kmsg.DescribeACLsRequest) { r.PermissionType = kmsg.ACLPermissionTypeDeny }, "TOPIC:*:LITERAL User:bob ALL DENY"},
		"PREFIXED shop.": {func(r *kmsg.DescribeACLsRequest) {
			r.ResourceName, r.ResourcePatternType = kmsg.StringPtr("shop."), kmsg.ACLResourcePatternTypePrefixed
		}, "TOPIC:shop.:PREFIXED User:* READ ALLOW"},
		"GROUP":          {func(r *kmsg.DescribeACLsRequest) { r.ResourceType = kmsg.ACLResourceTypeGroup }, "GROUP:etl:LITERAL User:etl READ ALLOW"},
		"host elsewhere": {func(r *kmsg.DescribeACLsRequest) { r.Host = kmsg.StringPtr("10.0.0.1") }, ""},
	} {
		if got := flat(describe(3, c.edit)); got != c.want {
			t.Errorf("%s: %s, want %s", name, got, c.want)
		}
	}

	// Without DESCRIBE on the cluster, and without an ACL file.
	denied, err := acl.Parse(strings.NewReader("allow User:* DESCRIBE topic:*\n"))
	if err != nil {
		t.Fatal(err)
	}
	c = dialRaw(t, newHarness(t, harnessOpts{authz: denied}).addr)
	if resp := describe(3, nil); resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(resp.Resources) != 0 {
		t.Errorf("without cluster DESCRIBE: %+v", resp)
	}
	c = dialRaw(t, newHarness(t, harnessOpts{}).addr)
	if resp := describe(3, nil); resp.ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("without ACLs: %+v", resp)
	}
}
