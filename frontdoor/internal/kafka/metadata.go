package kafka

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metadata v0-v13, the range Kafka 4.x brokers serve. v10+ carry topic
// ids, v13 a top-level error code (KIP-1102) that we leave at 0.
const (
	MetadataMin = 0
	MetadataMax = 13
)

type metadataHandler struct {
	catalog *backends.Catalog
}

func (h *metadataHandler) api() API {
	return API{Key: MetadataKey, MinVersion: MetadataMin, MaxVersion: MetadataMax, Serve: h.serve}
}

func (h *metadataHandler) serve(ctx context.Context, s *Session, req Request) (Reply, error) {
	r := req.Body.(*kmsg.MetadataRequest)
	// v0: an empty list means every topic; v1+: a null list does.
	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	// Each topic is answered once however often it is named, as Kafka
	// does (it collects the requested topics in a set).
	var names []string
	var ids [][16]byte
	seenNames := map[string]bool{}
	seenIDs := map[[16]byte]bool{}
	for _, t := range r.Topics {
		switch {
		case t.Topic != nil && !seenNames[*t.Topic]:
			seenNames[*t.Topic] = true
			names = append(names, *t.Topic)
		case t.Topic == nil && !seenIDs[t.TopicID]:
			seenIDs[t.TopicID] = true
			ids = append(ids, t.TopicID)
		}
	}
	if dup := len(r.Topics) - len(names) - len(ids); dup > 0 {
		s.Log.Debug("metadata request named topics more than once; answering each once", "duplicates", dup)
	}
	// AllowAutoTopicCreation is ignored on purpose: Ferry never creates
	// topics; tables are created in Fluss first.
	// Later runs off the read loop: take what it needs from the session now.
	log, allowed := s.Log, s.MayDo(acl.Describe)
	for _, n := range names {
		if !allowed(n) {
			s.Refused(ctx, acl.Describe, n)
		}
	}
	return Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		// Topic ids have no lookup of their own in the catalog: ask for
		// every topic and pick by id.
		md, err := h.metadata(ctx, names, all || len(ids) > 0)
		if err != nil {
			log.Warn("metadata: catalog unavailable; answering with this broker only", "err", err)
			fillUnavailable(resp, h.catalog, names, ids)
			return resp, nil
		}
		fillMetadata(resp, md, allowed, names, ids, all)
		return resp, nil
	}}, nil
}

// MetadataTopicsPerCall bounds the topic names in one catalogsvc call, so a
// request naming hundreds of thousands of topics becomes calls of bounded
// size (each well under the gRPC message limit) instead of one huge one.
const MetadataTopicsPerCall = 1000

// metadata asks catalogsvc about names (every topic when all), in calls of
// at most metadataTopicsPerCall names, and merges the answers.
func (h *metadataHandler) metadata(ctx context.Context, names []string, all bool) (*catalogv1.MetadataResponse, error) {
	if all {
		return h.catalog.Metadata(ctx, nil, true)
	}
	var md *catalogv1.MetadataResponse
	for start := 0; start == 0 || start < len(names); start += MetadataTopicsPerCall {
		part, err := h.catalog.Metadata(ctx, names[start:min(start+MetadataTopicsPerCall, len(names))], false)
		if err != nil {
			return nil, err
		}
		if md == nil {
			md = part
		} else {
			md.Topics = append(md.Topics, part.GetTopics()...)
		}
	}
	return md, nil
}

func brokerOf(b *catalogv1.Broker) kmsg.MetadataResponseBroker {
	out := kmsg.NewMetadataResponseBroker()
	out.NodeID, out.Host, out.Port = b.GetNodeId(), b.GetHost(), b.GetPort()
	if rack := b.GetRack(); rack != "" {
		out.Rack = &rack
	}
	return out
}

func fillMetadata(resp *kmsg.MetadataResponse, md *catalogv1.MetadataResponse, allowed func(string) bool, names []string, ids [][16]byte, all bool) {
	for _, b := range md.GetBrokers() {
		resp.Brokers = append(resp.Brokers, brokerOf(b))
	}
	if id := md.GetClusterId(); id != "" {
		resp.ClusterID = &id
	}
	resp.ControllerID = md.GetControllerId()

	byName := make(map[string]*catalogv1.TopicMetadata, len(md.GetTopics()))
	byID := map[[16]byte]*catalogv1.TopicMetadata{}
	for _, t := range md.GetTopics() {
		byName[t.GetTopic()] = t
		if len(t.GetTopicId()) == 16 {
			byID[[16]byte(t.GetTopicId())] = t
		}
	}
	add := func(t *catalogv1.TopicMetadata) {
		if !allowed(t.GetTopic()) {
			return
		}
		resp.Topics = append(resp.Topics, topicOf(t))
	}
	switch {
	case all:
		for _, t := range md.GetTopics() {
			add(t) // topics the user may not see are left out, as Kafka does
		}
	default:
		for _, n := range names {
			t := byName[n]
			switch {
			case !allowed(n):
				resp.Topics = append(resp.Topics, topicErr(n, nil, kerr.TopicAuthorizationFailed.Code))
			case t == nil:
				resp.Topics = append(resp.Topics, topicErr(n, nil, kerr.UnknownTopicOrPartition.Code))
			default:
				add(t)
			}
		}
		for _, id := range ids {
			if t := byID[id]; t != nil && allowed(t.GetTopic()) {
				add(t)
			} else {
				resp.Topics = append(resp.Topics, topicErr("", &id, kerr.UnknownTopicID.Code))
			}
		}
	}
}

func topicOf(t *catalogv1.TopicMetadata) kmsg.MetadataResponseTopic {
	out := kmsg.NewMetadataResponseTopic()
	name := t.GetTopic()
	out.Topic = &name
	if len(t.GetTopicId()) == 16 {
		out.TopicID = [16]byte(t.GetTopicId())
	}
	out.ErrorCode = int16(t.GetErrorCode())
	for _, p := range t.GetPartitions() {
		op := kmsg.NewMetadataResponseTopicPartition()
		op.Partition = p.GetPartition()
		op.Leader = p.GetLeaderId()
		op.LeaderEpoch = LeaderEpoch
		op.Replicas = append([]int32{}, p.GetReplicaIds()...)
		op.ISR = append([]int32{}, p.GetReplicaIds()...)
		op.OfflineReplicas = []int32{}
		if op.Leader < 0 {
			op.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		out.Partitions = append(out.Partitions, op)
	}
	return out
}

func topicErr(name string, id *[16]byte, code int16) kmsg.MetadataResponseTopic {
	out := kmsg.NewMetadataResponseTopic()
	if name != "" {
		out.Topic = &name
	}
	if id != nil {
		out.TopicID = *id
	}
	out.ErrorCode = code
	out.Partitions = []kmsg.MetadataResponseTopicPartition{}
	return out
}

// fillUnavailable answers while catalogsvc cannot be reached: this broker
// alone, and every named topic LEADER_NOT_AVAILABLE, which clients retry.
func fillUnavailable(resp *kmsg.MetadataResponse, c *backends.Catalog, names []string, ids [][16]byte) {
	self := c.Self()
	resp.Brokers = []kmsg.MetadataResponseBroker{brokerOf(self)}
	resp.ControllerID = self.GetNodeId()
	if id := c.ClusterID(); id != "" {
		resp.ClusterID = &id
	}
	for _, n := range names {
		resp.Topics = append(resp.Topics, topicErr(n, nil, kerr.LeaderNotAvailable.Code))
	}
	for _, id := range ids {
		resp.Topics = append(resp.Topics, topicErr("", &id, kerr.LeaderNotAvailable.Code))
	}
}
