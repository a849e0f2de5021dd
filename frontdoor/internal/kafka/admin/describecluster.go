package admin

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
)

// DescribeCluster v0-v2: the live frontdoors, the cluster id and the
// controller id, from the same catalogsvc answer Metadata gives, so the two
// agree. Ferry has no controller endpoint: a request for one is
// MISMATCHED_ENDPOINT_TYPE, as a broker answers it.
const (
	DescribeClusterKey int16 = 60
	DescribeClusterMin       = 0
	DescribeClusterMax       = 2
)

// Kafka's AclOperation codes, for authorized-operations bit fields.
const (
	aclOpRead            = 3
	aclOpWrite           = 4
	aclOpDescribe        = 8
	aclOpDescribeConfigs = 10
	aclOpIdempotentWrite = 12
)

// clusterOperations is what a principal may do to the cluster: describe
// it (with an ACL file, when it allows DESCRIBE on cluster:kafka-cluster),
// describe broker configs and write idempotently (both open to everyone).
func clusterOperations(s *kafka.Session) int32 {
	ops := int32(1<<aclOpDescribeConfigs | 1<<aclOpIdempotentWrite)
	if s.Authz == nil || s.Authz.AllowedCluster(acl.Principal(s.User), acl.Describe) {
		ops |= 1 << aclOpDescribe
	}
	return ops
}

type describeClusterHandler struct {
	catalog *backends.Catalog
}

func (h *describeClusterHandler) api() kafka.API {
	return kafka.API{Key: DescribeClusterKey, MinVersion: DescribeClusterMin, MaxVersion: DescribeClusterMax, Serve: h.serve}
}

func (h *describeClusterHandler) serve(_ context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	if r.Version >= 1 && r.EndpointType != 1 {
		s.Log.Info("describe cluster: only the broker endpoint is served", "endpoint_type", r.EndpointType)
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		msg := "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type " + endpointTypeName(r.EndpointType)
		resp.ErrorMessage = &msg
		return kafka.Ready(resp), nil
	}
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterOperations(s)
	}
	log := s.Log
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		md, err := h.catalog.Metadata(ctx, nil, false)
		if err != nil {
			log.Warn("describe cluster: catalog unavailable; answering with this broker only", "err", err)
			self := h.catalog.Self()
			resp.Brokers = []kmsg.DescribeClusterResponseBroker{clusterBroker(self.GetNodeId(), self.GetHost(), self.GetPort(), self.GetRack())}
			resp.ControllerID, resp.ClusterID = self.GetNodeId(), h.catalog.ClusterID()
			return resp, nil
		}
		resp.ClusterID, resp.ControllerID = md.GetClusterId(), md.GetControllerId()
		for _, b := range md.GetBrokers() {
			resp.Brokers = append(resp.Brokers, clusterBroker(b.GetNodeId(), b.GetHost(), b.GetPort(), b.GetRack()))
		}
		return resp, nil
	}}, nil
}

func clusterBroker(id int32, host string, port int32, rack string) kmsg.DescribeClusterResponseBroker {
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = id, host, port
	if rack != "" {
		b.Rack = &rack
	}
	return b
}

func endpointTypeName(t int8) string {
	switch t {
	case 1:
		return "BROKER"
	case 2:
		return "CONTROLLER"
	}
	return "UNKNOWN"
}
