package kafka

// adminAPIs are the admin APIs Kafka's tools call: the describes, and the
// refusals of topic and config changes (refusal.go).
func adminAPIs() []API {
	return []API{
		createTopicsAPI(), deleteTopicsAPI(), deleteRecordsAPI(), createPartitionsAPI(),
		alterConfigsAPI(), incrementalAlterConfigsAPI(),
	}
}
