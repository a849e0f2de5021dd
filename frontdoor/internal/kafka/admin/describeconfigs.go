package admin

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
)

// DescribeConfigs v1-v4 (Kafka 4's range): a topic's configs derived from
// its Fluss table (topicconfig.go) and this frontdoor's settings under
// Kafka's broker config names, all read-only. Secrets are never listed:
// only the settings below are, and none of them is one.
const (
	DescribeConfigsKey int16 = 32
	DescribeConfigsMin       = 1
	DescribeConfigsMax       = 4
)

type describeConfigsHandler struct {
	catalog *backends.Catalog
	// maxMessageBytes is the produce limit, every topic's max.message.bytes.
	maxMessageBytes int
	broker          []configEntry
}

func (h *describeConfigsHandler) api() kafka.API {
	return kafka.API{Key: DescribeConfigsKey, MinVersion: DescribeConfigsMin, MaxVersion: DescribeConfigsMax, Serve: h.serve}
}

// brokerConfigs are frontdoor's settings that have a Kafka broker config
// name, as a static broker config.
func brokerConfigs(nodeID int32, cfg kafka.Config, d Deps) []configEntry {
	static := func(name, value string, typ kmsg.ConfigType, doc string) configEntry {
		return configEntry{name: name, value: value, source: kmsg.ConfigSourceStaticBrokerConfig, typ: typ, doc: doc}
	}
	var mechs []string
	if d.SASL != nil {
		mechs = append(mechs, "PLAIN")
	}
	if d.Scram != nil {
		mechs = append(mechs, "SCRAM-SHA-256", "SCRAM-SHA-512")
	}
	if d.Token != nil {
		mechs = append(mechs, "OAUTHBEARER")
	}
	out := []configEntry{
		static("node.id", strconv.Itoa(int(nodeID)), kmsg.ConfigTypeInt, "frontdoor's Kafka node id (-node-id)"),
		static("broker.id", strconv.Itoa(int(nodeID)), kmsg.ConfigTypeInt, "frontdoor's Kafka node id (-node-id)"),
		static("message.max.bytes", strconv.Itoa(d.Produce.MaxMessageBytes), kmsg.ConfigTypeInt, "the largest record batch of one partition"),
		static("socket.request.max.bytes", strconv.Itoa(int(cfg.MaxRequestBytes)), kmsg.ConfigTypeInt, "the largest request frame"),
		static("connections.max.idle.ms", strconv.FormatInt(cfg.IdleTimeout.Milliseconds(), 10), kmsg.ConfigTypeLong, "idle connections are closed after this long"),
		static("max.connections", strconv.Itoa(cfg.MaxConnections), kmsg.ConfigTypeInt, "concurrent client connections"),
		static("queued.max.requests", strconv.Itoa(cfg.MaxInFlightRequests), kmsg.ConfigTypeInt, "pipelined requests per connection"),
		static("auto.create.topics.enable", "false", kmsg.ConfigTypeBoolean, "topics are Fluss tables, created with Fluss DDL"),
		static("sasl.enabled.mechanisms", strings.Join(mechs, ","), kmsg.ConfigTypeList, "the SASL mechanisms frontdoor offers"),
	}
	slices.SortFunc(out, func(a, b configEntry) int { return strings.Compare(a.name, b.name) })
	return out
}

func (h *describeConfigsHandler) serve(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	may := s.MayDo(acl.Describe)
	self := strconv.Itoa(int(h.catalog.Self().GetNodeId()))
	// Authorization happens now, on the read loop, with the session.
	refused := make([]bool, len(r.Resources))
	var topics []string
	for i, res := range r.Resources {
		if res.ResourceType == kmsg.ConfigResourceTypeTopic {
			if !may(res.ResourceName) {
				refused[i] = true
				s.Refused(ctx, acl.Describe, res.ResourceName)
			} else {
				topics = append(topics, res.ResourceName)
			}
		}
	}
	log := s.Log
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
		var found map[string]backends.Topic
		var lookupErr error
		if len(topics) > 0 {
			found, lookupErr = h.catalog.ResolveFresh(ctx, topics)
			if lookupErr != nil {
				log.Warn("describe configs: catalog unavailable", "err", lookupErr)
			}
		}
		for i, res := range r.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			fail := func(e *kerr.Error, msg string) {
				rr.ErrorCode = e.Code
				if msg != "" {
					rr.ErrorMessage = &msg
				}
			}
			switch res.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				t := found[res.ResourceName]
				switch {
				case refused[i]:
					fail(kerr.TopicAuthorizationFailed, "")
				case lookupErr != nil:
					fail(kerr.UnknownServerError, "the catalog is unavailable")
				case t.Mapping == nil:
					// An empty message, not null, as a broker answers.
					rr.ErrorCode, rr.ErrorMessage = kerr.UnknownTopicOrPartition.Code, kmsg.StringPtr("")
					if t.ErrorCode != 0 && t.ErrorCode != kerr.UnknownTopicOrPartition.Code {
						rr.ErrorCode, rr.ErrorMessage = t.ErrorCode, kmsg.StringPtr(t.ErrorMsg)
					}
				default:
					rr.Configs = configsOf(r, res, topicConfigs(t.Mapping, h.maxMessageBytes))
				}
			case kmsg.ConfigResourceTypeBroker:
				switch res.ResourceName {
				case self:
					rr.Configs = configsOf(r, res, h.broker)
				case "":
					// The cluster-wide dynamic defaults: Ferry has none.
					rr.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
				default:
					fail(kerr.InvalidRequest, "Unexpected broker id, expected "+self+" or empty string, but received "+res.ResourceName)
				}
			default:
				log.Info("describe configs: resource type not described", "resource_type", res.ResourceType.String(), "resource", res.ResourceName)
				fail(kerr.InvalidRequest, "Ferry describes topic and broker configs only, not "+res.ResourceType.String())
			}
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil
	}}, nil
}

// configsOf answers one resource: the entries it names (all when it names
// none), with synonyms and documentation when the request asks for them.
func configsOf(r *kmsg.DescribeConfigsRequest, res kmsg.DescribeConfigsRequestResource, entries []configEntry) []kmsg.DescribeConfigsResponseResourceConfig {
	out := []kmsg.DescribeConfigsResponseResourceConfig{}
	for _, e := range entries {
		if res.ConfigNames != nil && !slices.Contains(res.ConfigNames, e.name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly, c.Source, c.ConfigType = e.name, kmsg.StringPtr(e.value), true, e.source, e.typ
		c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
		if r.IncludeSynonyms {
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = e.name, c.Value, e.source
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
			if e.from != "" {
				from := syn
				from.Name, from.Value = e.from, kmsg.StringPtr(e.fromValue)
				c.ConfigSynonyms = append(c.ConfigSynonyms, from)
			}
		}
		if r.IncludeDocumentation && e.doc != "" {
			c.Documentation = kmsg.StringPtr(e.doc)
		}
		out = append(out, c)
	}
	return out
}
