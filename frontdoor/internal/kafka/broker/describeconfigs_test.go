package broker

import (
	"strings"
	"testing"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/admin"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/produce"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

func describeConfigs(t *testing.T, c *rawClient, v int16, synonyms bool, res ...kmsg.DescribeConfigsRequestResource) []kmsg.DescribeConfigsResponseResource {
	t.Helper()
	r := kmsg.NewPtrDescribeConfigsRequest()
	r.Version, r.Resources, r.IncludeSynonyms, r.IncludeDocumentation = v, res, synonyms, synonyms
	resp := c.roundTrip(r).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != len(res) {
		t.Fatalf("%d resources answered, want %d", len(resp.Resources), len(res))
	}
	return resp.Resources
}

func configResource(typ kmsg.ConfigResourceType, name string, keys ...string) kmsg.DescribeConfigsRequestResource {
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = typ, name, keys
	return res
}

// configMap is name -> "value source" of a resource's configs; every one
// must be read-only.
func configMap(t *testing.T, r kmsg.DescribeConfigsResponseResource) map[string]string {
	t.Helper()
	if r.ErrorCode != 0 {
		t.Fatalf("%s: error %d %v", r.ResourceName, r.ErrorCode, r.ErrorMessage)
	}
	out := map[string]string{}
	for _, c := range r.Configs {
		if !c.ReadOnly || c.Value == nil {
			t.Errorf("%s %s: read-only %v value %v, want read-only with a value", r.ResourceName, c.Name, c.ReadOnly, c.Value)
			continue
		}
		out[c.Name] = *c.Value + " " + c.Source.String()
	}
	return out
}

// TestDescribeConfigsTopics: a topic's configs come from its Fluss table:
// cleanup.policy from its kind, retention.ms from table.log.ttl (Fluss's
// default when unset), compression.type from its Arrow codec,
// max.message.bytes from frontdoor's limit, and every Fluss property under
// its own name; a change of the table shows at once.
func TestDescribeConfigsTopics(t *testing.T) {
	rules, err := acl.Parse(strings.NewReader("allow User:* DESCRIBE topic:orders\nallow User:* DESCRIBE topic:events\nallow User:* DESCRIBE topic:nope\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{authz: rules, produce: func(p *produce.ProduceConfig) { p.MaxMessageBytes = 500000 }})
	h.cat.AddTopic("hidden", 1, 300)
	h.cat.EditTopic("orders", func(m *catalogv1.TopicMapping) {
		m.Kind = catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY
		m.ArrowCompression = catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME
		m.TableProperties = map[string]string{"table.log.ttl": "2 h", "table.log.arrow.compression.type": "LZ4_FRAME", "table.replication.factor": "3"}
		m.CustomProperties = map[string]string{"kafka.enabled": "true", "owner": "ops"}
	})
	h.cat.EditTopic("events", func(m *catalogv1.TopicMapping) { m.Kind = catalogv1.TableKind_TABLE_KIND_LOG })
	c := dialRaw(t, h.addr)

	for v := int16(admin.DescribeConfigsMin); v <= admin.DescribeConfigsMax; v++ {
		got := describeConfigs(t, c, v, false,
			configResource(kmsg.ConfigResourceTypeTopic, "orders"),
			configResource(kmsg.ConfigResourceTypeTopic, "events"),
			configResource(kmsg.ConfigResourceTypeTopic, "nope"),
			configResource(kmsg.ConfigResourceTypeTopic, "hidden"))
		orders := configMap(t, got[0])
		for k, want := range map[string]string{
			"cleanup.policy":                   "compact DYNAMIC_TOPIC_CONFIG",
			"retention.ms":                     "7200000 DYNAMIC_TOPIC_CONFIG",
			"compression.type":                 "lz4 DYNAMIC_TOPIC_CONFIG",
			"max.message.bytes":                "500000 STATIC_BROKER_CONFIG",
			"table.log.ttl":                    "2 h DYNAMIC_TOPIC_CONFIG",
			"table.replication.factor":         "3 DYNAMIC_TOPIC_CONFIG",
			"table.log.arrow.compression.type": "LZ4_FRAME DYNAMIC_TOPIC_CONFIG",
			"kafka.enabled":                    "true DYNAMIC_TOPIC_CONFIG",
			"owner":                            "ops DYNAMIC_TOPIC_CONFIG",
		} {
			if orders[k] != want {
				t.Errorf("v%d orders %s = %q, want %q", v, k, orders[k], want)
			}
		}
		if len(orders) != 9 {
			t.Errorf("v%d orders: %d configs %v, want 9", v, len(orders), orders)
		}
		events := configMap(t, got[1])
		for k, want := range map[string]string{
			"cleanup.policy":   "delete DYNAMIC_TOPIC_CONFIG",
			"retention.ms":     "604800000 DEFAULT_CONFIG",
			"compression.type": "zstd DEFAULT_CONFIG",
		} {
			if events[k] != want {
				t.Errorf("v%d events %s = %q, want %q", v, k, events[k], want)
			}
		}
		// A broker answers an unknown topic with an empty message, not null.
		if got[2].ErrorMessage == nil || *got[2].ErrorMessage != "" || got[3].ErrorMessage != nil {
			t.Errorf("v%d: messages %v, %v; want empty and null", v, got[2].ErrorMessage, got[3].ErrorMessage)
		}
		if got[2].ErrorCode != kerr.UnknownTopicOrPartition.Code || got[3].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("v%d: nope %d, hidden %d; want UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED", v, got[2].ErrorCode, got[3].ErrorCode)
		}
	}

	// Named keys only, with synonyms naming the Fluss property and docs.
	got := describeConfigs(t, c, 4, true, configResource(kmsg.ConfigResourceTypeTopic, "orders", "retention.ms", "no.such.config"))
	if len(got[0].Configs) != 1 {
		t.Fatalf("named keys: %+v", got[0].Configs)
	}
	rc := got[0].Configs[0]
	if len(rc.ConfigSynonyms) != 2 || rc.ConfigSynonyms[1].Name != "table.log.ttl" || *rc.ConfigSynonyms[1].Value != "2 h" ||
		rc.ConfigType != kmsg.ConfigTypeLong || rc.Documentation == nil || !strings.Contains(*rc.Documentation, "table.log.ttl") {
		t.Errorf("retention.ms with synonyms: %+v", rc)
	}

	// The table changes in Fluss: the next answer shows it, though the
	// mapping frontdoor caches for produce is still the old one.
	h.cat.EditTopic("events", func(m *catalogv1.TopicMapping) {
		m.TableProperties = map[string]string{"table.log.ttl": "3 days"}
		m.MappingId = "events-v2"
	})
	events := configMap(t, describeConfigs(t, c, 4, false, configResource(kmsg.ConfigResourceTypeTopic, "events"))[0])
	if events["retention.ms"] != "259200000 DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("events after the change: %v", events)
	}
}

// TestDescribeConfigsBroker: this frontdoor's settings under Kafka's broker
// config names, static and read-only; the empty name (cluster defaults) has
// none; another broker's id is INVALID_REQUEST, as a broker answers.
func TestDescribeConfigsBroker(t *testing.T) {
	h := newHarness(t, harnessOpts{sasl: testUsers(t), cfg: func(c *kafka.Config) { c.MaxConnections = 77 }})
	c := dialRaw(t, h.addr)
	if resp := handshake(t, c, 1, "PLAIN"); resp.ErrorCode != 0 {
		t.Fatalf("handshake error %d", resp.ErrorCode)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-pw")
	if resp := c.roundTrip(auth).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != 0 {
		t.Fatalf("authenticate error %d", resp.ErrorCode)
	}
	got := describeConfigs(t, c, 4, false,
		configResource(kmsg.ConfigResourceTypeBroker, "7"),
		configResource(kmsg.ConfigResourceTypeBroker, ""),
		configResource(kmsg.ConfigResourceTypeBroker, "8"),
		configResource(kmsg.ConfigResourceTypeBrokerLogger, "7"))
	broker := configMap(t, got[0])
	for k, want := range map[string]string{
		"node.id":                   "7 STATIC_BROKER_CONFIG",
		"max.connections":           "77 STATIC_BROKER_CONFIG",
		"message.max.bytes":         "1048588 STATIC_BROKER_CONFIG",
		"sasl.enabled.mechanisms":   "PLAIN STATIC_BROKER_CONFIG",
		"auto.create.topics.enable": "false STATIC_BROKER_CONFIG",
	} {
		if broker[k] != want {
			t.Errorf("broker %s = %q, want %q", k, broker[k], want)
		}
	}
	for k, v := range broker {
		if strings.Contains(v, "pw") || strings.Contains(strings.ToLower(k), "password") {
			t.Errorf("broker config %s=%s looks like a secret", k, v)
		}
	}
	if got[1].ErrorCode != 0 || len(got[1].Configs) != 0 {
		t.Errorf("cluster defaults: %+v", got[1])
	}
	if got[2].ErrorCode != kerr.InvalidRequest.Code || got[3].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("other broker %d, broker logger %d; want INVALID_REQUEST", got[2].ErrorCode, got[3].ErrorCode)
	}
}
