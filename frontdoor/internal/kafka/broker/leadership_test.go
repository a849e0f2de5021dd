package broker

import (
	"strings"
	"testing"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka/admin"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// TestReplicaPlacementAPIs: one log dir standing for Fluss without sizes, no reassignments in progress, and
// leader elections and reassignments refused with POLICY_VIOLATION and a
// message, on one connection that keeps serving.
func TestReplicaPlacementAPIs(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	for v := int16(admin.DescribeLogDirsMin); v <= admin.DescribeLogDirsMax; v++ {
		r := kmsg.NewPtrDescribeLogDirsRequest()
		r.Version = v
		resp := c.roundTrip(r).(*kmsg.DescribeLogDirsResponse)
		if resp.ErrorCode != 0 || len(resp.Dirs) != 1 || resp.Dirs[0].Dir != "fluss" || resp.Dirs[0].ErrorCode != 0 || len(resp.Dirs[0].Topics) != 0 ||
			v >= 4 && (resp.Dirs[0].TotalBytes != -1 || resp.Dirs[0].UsableBytes != -1) {
			t.Errorf("DescribeLogDirs v%d: %+v", v, resp)
		}
	}
	lr := kmsg.NewPtrListPartitionReassignmentsRequest()
	if resp := c.roundTrip(lr).(*kmsg.ListPartitionReassignmentsResponse); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Errorf("ListPartitionReassignments: %+v", resp)
	}
	for v := int16(admin.ElectLeadersMin); v <= admin.ElectLeadersMax; v++ {
		resp := c.roundTrip(adminRequest(admin.ElectLeadersKey, v)).(*kmsg.ElectLeadersResponse)
		if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("ElectLeaders v%d: %+v", v, resp)
		}
		p := resp.Topics[1].Partitions[1]
		if p.ErrorCode != kerr.PolicyViolation.Code || p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "Fluss") {
			t.Errorf("ElectLeaders v%d partition: %+v", v, p)
		}
	}
	all := kmsg.NewPtrElectLeadersRequest()
	all.Version = 2
	if resp := c.roundTrip(all).(*kmsg.ElectLeadersResponse); resp.ErrorCode != kerr.PolicyViolation.Code {
		t.Errorf("ElectLeaders of every partition: %+v", resp)
	}
	for v := int16(admin.AlterPartitionReassignmentsMin); v <= admin.AlterPartitionReassignmentsMax; v++ {
		resp := c.roundTrip(adminRequest(admin.AlterPartitionReassignmentsKey, v)).(*kmsg.AlterPartitionAssignmentsResponse)
		if resp.ErrorCode != kerr.PolicyViolation.Code || resp.ErrorMessage == nil || len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 ||
			resp.Topics[0].Partitions[1].ErrorCode != kerr.PolicyViolation.Code {
			t.Errorf("AlterPartitionReassignments v%d: %+v", v, resp)
		}
	}
	if md := c.roundTrip(mdReq(12, "orders")).(*kmsg.MetadataResponse); len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata afterwards: %+v", md.Topics)
	}

	// With an ACL file, log dirs need DESCRIBE on the cluster (v3+ say so).
	rules, err := acl.Parse(strings.NewReader("allow User:* DESCRIBE topic:*\n"))
	if err != nil {
		t.Fatal(err)
	}
	c = dialRaw(t, newHarness(t, harnessOpts{authz: rules}).addr)
	r := kmsg.NewPtrDescribeLogDirsRequest()
	r.Version = 4
	if resp := c.roundTrip(r).(*kmsg.DescribeLogDirsResponse); resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(resp.Dirs) != 0 {
		t.Errorf("DescribeLogDirs without cluster DESCRIBE: %+v", resp)
	}
}
