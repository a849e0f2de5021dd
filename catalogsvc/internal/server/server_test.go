package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/catalogsvc/internal/brokers"
	"github.com/ferrygw/ferry/catalogsvc/internal/catalog"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// stubTopics answers from a fixed set; a nil set means "not loaded".
type stubTopics struct {
	topics   map[string]*catalogv1.TopicMapping
	resolved [][]string
	stale    []catalog.Stale
}

func (s *stubTopics) ResolveStale(_ context.Context, names []string, stale catalog.Stale) []catalog.Result {
	s.resolved = append(s.resolved, names)
	s.stale = append(s.stale, stale)
	out := make([]catalog.Result, len(names))
	for i, n := range names {
		out[i].Topic = n
		switch m, ok := s.topics[n]; {
		case s.topics == nil:
			out[i].Code, out[i].Message = kerr.LeaderNotAvailable.Code, "not loaded"
		case ok:
			out[i].Mapping = m
		default:
			out[i].Code, out[i].Message = kerr.UnknownTopicOrPartition.Code, "unknown"
		}
	}
	return out
}

func (s *stubTopics) Topics(context.Context) ([]*catalogv1.TopicMapping, error) {
	if s.topics == nil {
		return nil, fmt.Errorf("%w: dial tcp: connection refused", catalog.ErrNotLoaded)
	}
	var out []*catalogv1.TopicMapping
	for _, n := range []string{"a.one", "b.three"} {
		if m, ok := s.topics[n]; ok {
			out = append(out, m)
		}
	}
	return out, nil
}

func loaded() *stubTopics {
	return &stubTopics{topics: map[string]*catalogv1.TopicMapping{
		"a.one":   {Topic: "a.one", TopicId: []byte("0123456789abcdef"), PartitionCount: 1},
		"b.three": {Topic: "b.three", TopicId: []byte("fedcba9876543210"), PartitionCount: 3},
	}}
}

func newServer(topics Topics) (*Server, *brokers.Registry) {
	reg := brokers.NewRegistry(time.Minute, time.Now)
	return New(topics, reg, "cluster-1", slog.New(slog.DiscardHandler)), reg
}

func TestResolveTopics(t *testing.T) {
	s, _ := newServer(loaded())
	resp, err := s.ResolveTopics(context.Background(), &catalogv1.ResolveTopicsRequest{Topics: []string{"b.three", "nope"}})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.GetResults()
	if len(r) != 2 || r[0].GetMapping().GetTopic() != "b.three" || r[0].GetErrorCode() != 0 ||
		r[1].GetMapping() != nil || r[1].GetErrorCode() != int32(kerr.UnknownTopicOrPartition.Code) || r[1].GetErrorMessage() != "unknown" {
		t.Errorf("results = %v", r)
	}

	stub := loaded()
	s, _ = newServer(stub)
	if _, err := s.ResolveTopics(context.Background(), &catalogv1.ResolveTopicsRequest{Topics: []string{"a.one"},
		StaleTableIds: []int64{4}, StalePartitionIds: []int64{5, 6}}); err != nil {
		t.Fatal(err)
	}
	if got := stub.stale[0]; !slices.Equal(got.TableIDs, []int64{4}) || !slices.Equal(got.PartitionIDs, []int64{5, 6}) {
		t.Errorf("stale ids passed on: %+v", got)
	}

	_, err = s.ResolveTopics(context.Background(), &catalogv1.ResolveTopicsRequest{Topics: make([]string, MaxTopicsPerRequest+1)})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("oversized request: %v", err)
	}
}

func TestListTopics(t *testing.T) {
	s, _ := newServer(loaded())
	resp, err := s.ListTopics(context.Background(), &catalogv1.ListTopicsRequest{})
	if err != nil || len(resp.GetTopics()) != 2 {
		t.Fatalf("ListTopics = %v, %v", resp, err)
	}
	s, _ = newServer(&stubTopics{})
	_, err = s.ListTopics(context.Background(), &catalogv1.ListTopicsRequest{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("not loaded: %v, want Unavailable with the cause", err)
	}
}

func TestHeartbeat(t *testing.T) {
	s, reg := newServer(loaded())
	ctx := context.Background()
	resp, err := s.Heartbeat(ctx, &catalogv1.HeartbeatRequest{
		Broker: &catalogv1.Broker{NodeId: 1, Host: "fd1", Port: 9092}, LeaseMs: 10_000})
	if err != nil || resp.GetClusterId() != "cluster-1" {
		t.Fatalf("Heartbeat = %v, %v", resp, err)
	}
	if live := reg.Live(nil); len(live) != 1 || live[0].Host != "fd1" {
		t.Errorf("registry = %v", live)
	}
	tests := []struct {
		name string
		req  *catalogv1.HeartbeatRequest
		code codes.Code
	}{
		{"no broker", &catalogv1.HeartbeatRequest{LeaseMs: 1000}, codes.InvalidArgument},
		{"no lease", &catalogv1.HeartbeatRequest{Broker: &catalogv1.Broker{NodeId: 2, Host: "h", Port: 1}}, codes.InvalidArgument},
		{"bad port", &catalogv1.HeartbeatRequest{Broker: &catalogv1.Broker{NodeId: 2, Host: "h"}, LeaseMs: 1000}, codes.InvalidArgument},
		{"id taken", &catalogv1.HeartbeatRequest{Broker: &catalogv1.Broker{NodeId: 1, Host: "other", Port: 9092}, LeaseMs: 1000}, codes.AlreadyExists},
	}
	for _, tt := range tests {
		if _, err := s.Heartbeat(ctx, tt.req); status.Code(err) != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
}

func TestMetadata(t *testing.T) {
	s, _ := newServer(loaded())
	ctx := context.Background()
	for _, b := range []*catalogv1.Broker{{NodeId: 7, Host: "fd7", Port: 9092}, {NodeId: 3, Host: "fd3", Port: 9092}} {
		if _, err := s.Heartbeat(ctx, &catalogv1.HeartbeatRequest{Broker: b, LeaseMs: 60_000}); err != nil {
			t.Fatal(err)
		}
	}
	self := &catalogv1.Broker{NodeId: 5, Host: "fd5", Port: 9093, Rack: "r1"}
	resp, err := s.Metadata(ctx, &catalogv1.MetadataRequest{AllTopics: true, Self: self})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetClusterId() != "cluster-1" || resp.GetControllerId() != 3 {
		t.Errorf("cluster %q controller %d", resp.GetClusterId(), resp.GetControllerId())
	}
	var ids []string
	for _, b := range resp.GetBrokers() {
		ids = append(ids, fmt.Sprintf("%d@%s:%d", b.GetNodeId(), b.GetHost(), b.GetPort()))
	}
	if got := strings.Join(ids, ","); got != "3@fd3:9092,5@fd5:9093,7@fd7:9092" {
		t.Errorf("brokers = %s", got)
	}
	if len(resp.GetTopics()) != 2 {
		t.Fatalf("topics = %v", resp.GetTopics())
	}
	three := resp.GetTopics()[1]
	if three.GetTopic() != "b.three" || string(three.GetTopicId()) != "fedcba9876543210" || len(three.GetPartitions()) != 3 {
		t.Fatalf("b.three = %v", three)
	}
	leaders := map[int32]bool{}
	for i, p := range three.GetPartitions() {
		if p.GetPartition() != int32(i) || len(p.GetReplicaIds()) != 1 || p.GetReplicaIds()[0] != p.GetLeaderId() {
			t.Errorf("partition %d = %v", i, p)
		}
		leaders[p.GetLeaderId()] = true
	}
	if len(leaders) != 3 {
		t.Errorf("3 partitions over 3 brokers used %d leaders", len(leaders))
	}

	// Named topics, one unknown.
	resp, err = s.Metadata(ctx, &catalogv1.MetadataRequest{Topics: []string{"a.one", "zzz"}, Self: self})
	if err != nil {
		t.Fatal(err)
	}
	if tp := resp.GetTopics(); len(tp) != 2 || tp[0].GetErrorCode() != 0 || len(tp[0].GetPartitions()) != 1 ||
		tp[1].GetErrorCode() != int32(kerr.UnknownTopicOrPartition.Code) || len(tp[1].GetPartitions()) != 0 {
		t.Errorf("named topics = %v", tp)
	}

	// No topics, not all: brokers only, and the catalog is not asked.
	stub := loaded()
	s2, _ := newServer(stub)
	resp, err = s2.Metadata(ctx, &catalogv1.MetadataRequest{Self: self})
	if err != nil || len(resp.GetTopics()) != 0 || len(resp.GetBrokers()) != 1 || len(stub.resolved) != 0 {
		t.Errorf("empty request = %v, %v (resolved %v)", resp, err, stub.resolved)
	}
}

func TestMetadataLoneInstanceLeadsEverything(t *testing.T) {
	s, _ := newServer(loaded())
	self := &catalogv1.Broker{NodeId: 0, Host: "127.0.0.1", Port: 9092}
	resp, err := s.Metadata(context.Background(), &catalogv1.MetadataRequest{AllTopics: true, Self: self})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetControllerId() != 0 || len(resp.GetBrokers()) != 1 {
		t.Errorf("controller %d brokers %v", resp.GetControllerId(), resp.GetBrokers())
	}
	for _, tm := range resp.GetTopics() {
		for _, p := range tm.GetPartitions() {
			if p.GetLeaderId() != 0 {
				t.Errorf("%s/%d led by %d", tm.GetTopic(), p.GetPartition(), p.GetLeaderId())
			}
		}
	}
}

func TestMetadataErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := newServer(loaded())
	// Nobody registered and no self: topics exist but have no leader.
	resp, err := s.Metadata(ctx, &catalogv1.MetadataRequest{Topics: []string{"a.one"}})
	if err != nil {
		t.Fatal(err)
	}
	if tm := resp.GetTopics()[0]; tm.GetErrorCode() != int32(kerr.LeaderNotAvailable.Code) || len(tm.GetPartitions()) != 0 || resp.GetControllerId() != -1 {
		t.Errorf("no brokers: %v", resp)
	}
	if _, err := s.Metadata(ctx, &catalogv1.MetadataRequest{Self: &catalogv1.Broker{NodeId: 1}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("invalid self: %v", err)
	}
	notLoaded, _ := newServer(&stubTopics{})
	self := &catalogv1.Broker{NodeId: 1, Host: "h", Port: 1}
	if _, err := notLoaded.Metadata(ctx, &catalogv1.MetadataRequest{AllTopics: true, Self: self}); status.Code(err) != codes.Unavailable {
		t.Errorf("all topics, not loaded: %v", err)
	}
	resp, err = notLoaded.Metadata(ctx, &catalogv1.MetadataRequest{Topics: []string{"a.one"}, Self: self})
	if err != nil || resp.GetTopics()[0].GetErrorCode() != int32(kerr.LeaderNotAvailable.Code) {
		t.Errorf("named topic, not loaded: %v, %v", resp, err)
	}
	if _, err := s.Metadata(ctx, &catalogv1.MetadataRequest{Topics: make([]string, MaxTopicsPerRequest+1)}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("oversized: %v", err)
	}
}

func BenchmarkMetadataAllTopics(b *testing.B) {
	topics := &stubTopics{topics: map[string]*catalogv1.TopicMapping{}}
	for i := range 2 {
		n := []string{"a.one", "b.three"}[i]
		topics.topics[n] = &catalogv1.TopicMapping{Topic: n, TopicId: make([]byte, 16), PartitionCount: 12}
	}
	s, _ := newServer(topics)
	for id := range int32(3) {
		_, _ = s.Heartbeat(context.Background(), &catalogv1.HeartbeatRequest{
			Broker: &catalogv1.Broker{NodeId: id, Host: "h", Port: 9092 + id}, LeaseMs: 60_000})
	}
	req := &catalogv1.MetadataRequest{AllTopics: true, Self: &catalogv1.Broker{NodeId: 0, Host: "h", Port: 9092}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Metadata(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
