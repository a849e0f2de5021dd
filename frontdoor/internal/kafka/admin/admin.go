package admin

import (
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/produce"
)

// Deps is what the admin APIs show of frontdoor's backends and settings.
type Deps struct {
	Catalog *backends.Catalog
	Produce produce.ProduceConfig
	// SASL, Scram and Token are the authenticators in use (nil: not
	// offered), for the broker config sasl.enabled.mechanisms.
	SASL  kafka.PlainAuthenticator
	Scram kafka.ScramAuthenticator
	Token kafka.TokenAuthenticator
}

// APIs are the admin APIs Kafka's tools call: the describes, and the
// refusals of topic and config changes (refusal.go). states is the
// idempotent producer state, nil with idempotence off.
func APIs(cfg kafka.Config, d Deps, states *idempotence.States) []kafka.API {
	return []kafka.API{
		createTopicsAPI(), deleteTopicsAPI(), deleteRecordsAPI(), createPartitionsAPI(),
		alterConfigsAPI(), incrementalAlterConfigsAPI(),
		(&describeConfigsHandler{catalog: d.Catalog, maxMessageBytes: d.Produce.MaxMessageBytes,
			broker: brokerConfigs(d.Catalog.Self().GetNodeId(), cfg, d)}).api(),
		(&describeClusterHandler{catalog: d.Catalog}).api(),
		(&describeTopicPartitionsHandler{catalog: d.Catalog}).api(),
		(&describeProducersHandler{catalog: d.Catalog, states: states}).api(),
		describeACLsAPI(), describeLogDirsAPI(), listPartitionReassignmentsAPI(), electLeadersAPI(), alterPartitionReassignmentsAPI(),
	}
}
