package kafka

// adminAPIs are the admin APIs Kafka's tools call: the describes, and the
// refusals of topic and config changes (refusal.go).
func adminAPIs(cfg Config, d Deps) []API {
	return []API{
		createTopicsAPI(), deleteTopicsAPI(), deleteRecordsAPI(), createPartitionsAPI(),
		alterConfigsAPI(), incrementalAlterConfigsAPI(),
		(&describeConfigsHandler{catalog: d.Catalog, maxMessageBytes: d.Produce.MaxMessageBytes,
			broker: brokerConfigs(d.Catalog.Self().GetNodeId(), cfg, d)}).api(),
		(&describeClusterHandler{catalog: d.Catalog}).api(),
		(&describeTopicPartitionsHandler{catalog: d.Catalog}).api(),
	}
}
