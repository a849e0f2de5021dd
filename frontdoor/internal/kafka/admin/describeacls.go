package admin

import (
	"context"
	"strings"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
)

// DescribeAcls v1-v3 (Kafka 4's range): the ACL file's rules as Kafka ACL
// bindings (host "*"), those the filter matches, to a principal the file
// allows DESCRIBE on cluster:kafka-cluster. Without an ACL file it is
// SECURITY_DISABLED, as on a broker without an authorizer.
const (
	DescribeACLsKey int16 = 29
	DescribeACLsMin       = 1
	DescribeACLsMax       = 3
)

func describeACLsAPI() kafka.API {
	return kafka.API{Key: DescribeACLsKey, MinVersion: DescribeACLsMin, MaxVersion: DescribeACLsMax, Serve: serveDescribeACLs}
}

func serveDescribeACLs(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	principal := acl.Principal(s.User)
	switch {
	case s.Authz == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured on the broker")
		return kafka.Ready(resp), nil
	case !s.Authz.AllowedCluster(principal, acl.Describe):
		s.Log.Warn("not authorized", "principal", principal, "operation", "DESCRIBE", "resource", "cluster")
		if s.Denied != nil {
			s.Denied(ctx, acl.Describe)
		}
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return kafka.Ready(resp), nil
	}
	index := map[[3]string]int{}
	for _, b := range s.Authz.Bindings() {
		typ, pattern, op, perm := bindingKafka(b)
		if !aclFilterMatches(r, typ, b.Name, pattern) ||
			r.Principal != nil && *r.Principal != b.Principal || r.Host != nil && *r.Host != "*" ||
			r.Operation != kmsg.ACLOperationAny && r.Operation != op ||
			r.PermissionType != kmsg.ACLPermissionTypeAny && r.PermissionType != perm {
			continue
		}
		key := [3]string{typ.String(), b.Name, pattern.String()}
		i, ok := index[key]
		if !ok {
			rr := kmsg.NewDescribeACLsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ResourcePatternType = typ, b.Name, pattern
			resp.Resources = append(resp.Resources, rr)
			i = len(resp.Resources) - 1
			index[key] = i
		}
		ra := kmsg.NewDescribeACLsResponseResourceACL()
		ra.Principal, ra.Host, ra.Operation, ra.PermissionType = b.Principal, "*", op, perm
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, ra)
	}
	return kafka.Ready(resp), nil
}

// bindingKafka is a rule in Kafka's codes.
func bindingKafka(b acl.Binding) (kmsg.ACLResourceType, kmsg.ACLResourcePatternType, kmsg.ACLOperation, kmsg.ACLPermissionType) {
	typ := kmsg.ACLResourceTypeTopic
	switch b.Resource {
	case acl.GroupResource:
		typ = kmsg.ACLResourceTypeGroup
	case acl.ClusterResource:
		typ = kmsg.ACLResourceTypeCluster
	case acl.TransactionalIDResource:
		typ = kmsg.ACLResourceTypeTransactionalId
	}
	pattern := kmsg.ACLResourcePatternTypeLiteral
	if b.Prefixed {
		pattern = kmsg.ACLResourcePatternTypePrefixed
	}
	op := map[acl.Operation]kmsg.ACLOperation{acl.Describe: kmsg.ACLOperationDescribe, acl.Write: kmsg.ACLOperationWrite,
		acl.Read: kmsg.ACLOperationRead, acl.Delete: kmsg.ACLOperationDelete, acl.All: kmsg.ACLOperationAll}[b.Operation]
	perm := kmsg.ACLPermissionTypeDeny
	if b.Allow {
		perm = kmsg.ACLPermissionTypeAllow
	}
	return typ, pattern, op, perm
}

// aclFilterMatches is Kafka's resource pattern filter: ANY matches the
// name under any pattern, LITERAL and PREFIXED their own kind, MATCH every
// pattern that applies to the name (the literal, "*", or a prefix of it).
func aclFilterMatches(r *kmsg.DescribeACLsRequest, typ kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType) bool {
	if r.ResourceType != kmsg.ACLResourceTypeAny && r.ResourceType != typ {
		return false
	}
	switch r.ResourcePatternType {
	case kmsg.ACLResourcePatternTypeAny:
		return r.ResourceName == nil || *r.ResourceName == name
	case kmsg.ACLResourcePatternTypeMatch:
		if r.ResourceName == nil {
			return true
		}
		if pattern == kmsg.ACLResourcePatternTypePrefixed {
			return strings.HasPrefix(*r.ResourceName, name)
		}
		return name == *r.ResourceName || name == "*"
	default:
		return r.ResourcePatternType == pattern && (r.ResourceName == nil || *r.ResourceName == name)
	}
}
