// Package server is catalogsvc's gRPC face: topic resolution for the
// produce path, topic listing, Kafka Metadata answers and the frontdoor
// broker registry.
package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ferrygw/ferry/catalogsvc/internal/brokers"
	"github.com/ferrygw/ferry/catalogsvc/internal/catalog"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// MaxTopicsPerRequest bounds the topics named in one request. Kafka
// clients name the topics they produce to, a few at a time; a request
// beyond this is a bug or an attack, and each unknown name may cost a
// refresh.
const MaxTopicsPerRequest = 10000

// Topics is what the server needs from the catalog.
type Topics interface {
	ResolveStale(ctx context.Context, topics []string, stale catalog.Stale) []catalog.Result
	Topics(ctx context.Context) ([]*catalogv1.TopicMapping, error)
}

// Server implements catalogv1.CatalogServiceServer.
type Server struct {
	catalogv1.UnimplementedCatalogServiceServer

	topics    Topics
	registry  *brokers.Registry
	clusterID string
	log       *slog.Logger
}

// New returns a server answering from topics and registry, presenting
// clusterID to Kafka clients.
func New(topics Topics, registry *brokers.Registry, clusterID string, log *slog.Logger) *Server {
	return &Server{topics: topics, registry: registry, clusterID: clusterID, log: log}
}

// ResolveTopics returns the mapping of each named topic, or its Kafka error.
func (s *Server) ResolveTopics(ctx context.Context, req *catalogv1.ResolveTopicsRequest) (*catalogv1.ResolveTopicsResponse, error) {
	if n := len(req.GetTopics()); n > MaxTopicsPerRequest {
		return nil, status.Errorf(codes.InvalidArgument, "%d topics in one request, at most %d allowed", n, MaxTopicsPerRequest)
	}
	results := s.topics.ResolveStale(ctx, req.GetTopics(), catalog.Stale{TableIDs: req.GetStaleTableIds(), PartitionIDs: req.GetStalePartitionIds()})
	resp := &catalogv1.ResolveTopicsResponse{Results: make([]*catalogv1.TopicResult, len(results))}
	failed := 0
	for i, r := range results {
		resp.Results[i] = &catalogv1.TopicResult{Topic: r.Topic, Mapping: r.Mapping, ErrorCode: int32(r.Code), ErrorMessage: r.Message}
		if r.Code != 0 {
			failed++
			s.log.DebugContext(ctx, "topic not resolved", "topic", r.Topic, "error_code", r.Code, "reason", r.Message)
		}
	}
	trace.SpanFromContext(ctx).SetAttributes(
		attribute.Int("ferry.topics.requested", len(results)),
		attribute.Int("ferry.topics.failed", failed))
	return resp, nil
}

// ListTopics returns every exposed topic.
func (s *Server) ListTopics(ctx context.Context, _ *catalogv1.ListTopicsRequest) (*catalogv1.ListTopicsResponse, error) {
	topics, err := s.topics.Topics(ctx)
	if err != nil {
		return nil, catalogError(err)
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("ferry.topics", len(topics)))
	return &catalogv1.ListTopicsResponse{Topics: topics}, nil
}

// Heartbeat registers a frontdoor instance as a broker for the lease.
func (s *Server) Heartbeat(ctx context.Context, req *catalogv1.HeartbeatRequest) (*catalogv1.HeartbeatResponse, error) {
	if req.GetBroker() == nil {
		return nil, status.Error(codes.InvalidArgument, "heartbeat without broker")
	}
	b := fromProto(req.GetBroker())
	lease := time.Duration(req.GetLeaseMs()) * time.Millisecond
	isNew, err := s.registry.Heartbeat(b, lease)
	switch {
	case errors.Is(err, brokers.ErrNodeIDTaken):
		s.log.WarnContext(ctx, "heartbeat refused", "node_id", b.NodeID, "host", b.Host, "port", b.Port, "err", err)
		return nil, status.Error(codes.AlreadyExists, err.Error())
	case err != nil:
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if isNew {
		s.log.InfoContext(ctx, "broker registered", "node_id", b.NodeID, "host", b.Host, "port", b.Port,
			"rack", b.Rack, "lease", lease)
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("ferry.broker.node_id", int(b.NodeID)))
	return &catalogv1.HeartbeatResponse{ClusterId: s.clusterID}, nil
}

// Metadata answers a Kafka Metadata request: the live brokers (with the
// asking instance always among them), the lowest node id as controller,
// and for each topic its partitions with leaders spread over the brokers.
func (s *Server) Metadata(ctx context.Context, req *catalogv1.MetadataRequest) (*catalogv1.MetadataResponse, error) {
	if n := len(req.GetTopics()); n > MaxTopicsPerRequest {
		return nil, status.Errorf(codes.InvalidArgument, "%d topics in one request, at most %d allowed", n, MaxTopicsPerRequest)
	}
	var self *brokers.Broker
	if req.GetSelf() != nil {
		b := fromProto(req.GetSelf())
		if err := b.Validate(); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "self: %v", err)
		}
		self = &b
	}
	live := s.registry.Live(self)
	resp := &catalogv1.MetadataResponse{
		ClusterId:    s.clusterID,
		ControllerId: brokers.Controller(live),
		Brokers:      make([]*catalogv1.Broker, len(live)),
	}
	for i, b := range live {
		resp.Brokers[i] = &catalogv1.Broker{NodeId: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack}
	}

	var results []catalog.Result
	if req.GetAllTopics() {
		topics, err := s.topics.Topics(ctx)
		if err != nil {
			return nil, catalogError(err)
		}
		results = make([]catalog.Result, len(topics))
		for i, m := range topics {
			results[i] = catalog.Result{Topic: m.Topic, Mapping: m}
		}
	} else if len(req.GetTopics()) > 0 {
		results = s.topics.ResolveStale(ctx, req.GetTopics(), catalog.Stale{})
	}
	resp.Topics = make([]*catalogv1.TopicMetadata, len(results))
	for i, r := range results {
		resp.Topics[i] = topicMetadata(r, live)
	}
	trace.SpanFromContext(ctx).SetAttributes(
		attribute.Int("ferry.brokers", len(live)),
		attribute.Int("ferry.topics", len(results)),
		attribute.Bool("ferry.all_topics", req.GetAllTopics()))
	return resp, nil
}

func topicMetadata(r catalog.Result, live []brokers.Broker) *catalogv1.TopicMetadata {
	tm := &catalogv1.TopicMetadata{Topic: r.Topic, ErrorCode: int32(r.Code), ErrorMessage: r.Message}
	if r.Mapping == nil {
		return tm
	}
	tm.TopicId = r.Mapping.TopicId
	if len(live) == 0 {
		// Without a broker no partition has a leader; the code is
		// retriable, clients ask again once a frontdoor registered.
		tm.ErrorCode = int32(kerr.LeaderNotAvailable.Code)
		tm.ErrorMessage = "no live frontdoor broker has registered"
		return tm
	}
	tm.Partitions = make([]*catalogv1.PartitionMetadata, r.Mapping.PartitionCount)
	for p := range r.Mapping.PartitionCount {
		leader := brokers.Leader(r.Topic, p, live)
		tm.Partitions[p] = &catalogv1.PartitionMetadata{Partition: p, LeaderId: leader, ReplicaIds: []int32{leader}}
	}
	return tm
}

func fromProto(b *catalogv1.Broker) brokers.Broker {
	return brokers.Broker{NodeID: b.GetNodeId(), Host: b.GetHost(), Port: b.GetPort(), Rack: b.GetRack()}
}

// catalogError maps catalog failures onto gRPC codes: a catalog that has
// not loaded yet is Unavailable, which gRPC clients treat as retriable.
func catalogError(err error) error {
	switch {
	case errors.Is(err, catalog.ErrNotLoaded):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}
