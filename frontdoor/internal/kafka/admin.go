package kafka

import "github.com/ferrygw/ferry/frontdoor/internal/idempotence"

// adminAPIs are the admin APIs Kafka's tools call: the describes, and the
// refusals of topic and config changes (refusal.go). states is the
// idempotent producer state, nil with idempotence off.
func adminAPIs(cfg Config, d Deps, states *idempotence.States) []API {
	return []API{
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
