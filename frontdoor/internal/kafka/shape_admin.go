package kafka

import "maps"

// adminRequestSchemas are the layouts of the admin APIs (refusals and
// describes), kept apart from shape.go's so that each API's file set stays
// together; init merges them into requestSchemas.
var adminRequestSchemas = map[int16]requestSchema{
	createTopicsKey: {flexibleFrom: 5, fields: []field{
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV), // name
			fieldOf(kInt32, 0, anyV),  // num_partitions
			fieldOf(kInt16, 0, anyV),  // replication_factor
			arr(0, anyV, // assignments
				fieldOf(kInt32, 0, anyV),               // partition_index
				arr(0, anyV, fieldOf(kInt32, 0, anyV)), // broker_ids
				tags),
			arr(0, anyV, // configs
				fieldOf(kString, 0, anyV), // name
				fieldOf(kString, 0, anyV), // value
				tags),
			tags),
		fieldOf(kInt32, 0, anyV), // timeout_ms
		fieldOf(kInt8, 1, anyV),  // validate_only
		tags,
	}},
	deleteTopicsKey: {flexibleFrom: 4, fields: []field{
		arr(6, anyV, // topics
			fieldOf(kString, 6, anyV), // name
			fieldOf(kUUID, 6, anyV),   // topic_id
			tags),
		arr(0, 5, fieldOf(kString, 0, 5)), // topic_names
		fieldOf(kInt32, 0, anyV),          // timeout_ms
		tags,
	}},
	deleteRecordsKey: {flexibleFrom: 2, fields: []field{
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV), // name
			arr(0, anyV, // partitions
				fieldOf(kInt32, 0, anyV), // partition_index
				fieldOf(kInt64, 0, anyV), // offset
				tags),
			tags),
		fieldOf(kInt32, 0, anyV), // timeout_ms
		tags,
	}},
	createPartitionsKey: {flexibleFrom: 2, fields: []field{
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV), // name
			fieldOf(kInt32, 0, anyV),  // count
			arr(0, anyV, // assignments
				arr(0, anyV, fieldOf(kInt32, 0, anyV)), // broker_ids
				tags),
			tags),
		fieldOf(kInt32, 0, anyV), // timeout_ms
		fieldOf(kInt8, 0, anyV),  // validate_only
		tags,
	}},
	alterConfigsKey: {flexibleFrom: 2, fields: []field{
		arr(0, anyV, // resources
			fieldOf(kInt8, 0, anyV),   // resource_type
			fieldOf(kString, 0, anyV), // resource_name
			arr(0, anyV, // configs
				fieldOf(kString, 0, anyV), // name
				fieldOf(kString, 0, anyV), // value
				tags),
			tags),
		fieldOf(kInt8, 0, anyV), // validate_only
		tags,
	}},
	incrementalAlterConfigsKey: {flexibleFrom: 1, fields: []field{
		arr(0, anyV, // resources
			fieldOf(kInt8, 0, anyV),   // resource_type
			fieldOf(kString, 0, anyV), // resource_name
			arr(0, anyV, // configs
				fieldOf(kString, 0, anyV), // name
				fieldOf(kInt8, 0, anyV),   // config_operation
				fieldOf(kString, 0, anyV), // value
				tags),
			tags),
		fieldOf(kInt8, 0, anyV), // validate_only
		tags,
	}},
	describeConfigsKey: {flexibleFrom: 4, fields: []field{
		arr(0, anyV, // resources
			fieldOf(kInt8, 0, anyV),                 // resource_type
			fieldOf(kString, 0, anyV),               // resource_name
			arr(0, anyV, fieldOf(kString, 0, anyV)), // configuration_keys
			tags),
		fieldOf(kInt8, 1, anyV), // include_synonyms
		fieldOf(kInt8, 3, anyV), // include_documentation
		tags,
	}},
	describeClusterKey: {flexibleFrom: 0, fields: []field{
		fieldOf(kInt8, 0, anyV), // include_cluster_authorized_operations
		fieldOf(kInt8, 1, anyV), // endpoint_type
		fieldOf(kInt8, 2, anyV), // include_fenced_brokers
		tags,
	}},
	describeTopicPartitionsKey: {flexibleFrom: 0, fields: []field{
		arr(0, anyV, fieldOf(kString, 0, anyV), tags), // topics
		fieldOf(kInt32, 0, anyV),                      // response_partition_limit
		{kind: kStruct, minV: 0, maxV: anyV, elem: []field{ // cursor
			fieldOf(kString, 0, anyV), // topic_name
			fieldOf(kInt32, 0, anyV),  // partition_index
			tags,
		}},
		tags,
	}},
	describeACLsKey: {flexibleFrom: 2, fields: []field{
		fieldOf(kInt8, 0, anyV),   // resource_type_filter
		fieldOf(kString, 0, anyV), // resource_name_filter
		fieldOf(kInt8, 1, anyV),   // pattern_type_filter
		fieldOf(kString, 0, anyV), // principal_filter
		fieldOf(kString, 0, anyV), // host_filter
		fieldOf(kInt8, 0, anyV),   // operation
		fieldOf(kInt8, 0, anyV),   // permission_type
		tags,
	}},
	describeLogDirsKey: {flexibleFrom: 2, fields: []field{
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV),              // topic
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partitions
			tags),
		tags,
	}},
	describeProducersKey: {flexibleFrom: 0, fields: []field{
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV),              // name
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partition_indexes
			tags),
		tags,
	}},
	listPartitionReassignmentsKey: {flexibleFrom: 0, fields: []field{
		fieldOf(kInt32, 0, anyV), // timeout_ms
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV),              // name
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partition_indexes
			tags),
		tags,
	}},
	electLeadersKey: {flexibleFrom: 2, fields: []field{
		fieldOf(kInt8, 1, anyV), // election_type
		arr(0, anyV, // topic_partitions
			fieldOf(kString, 0, anyV),              // topic
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partitions
			tags),
		fieldOf(kInt32, 0, anyV), // timeout_ms
		tags,
	}},
	alterPartitionReassignmentsKey: {flexibleFrom: 0, fields: []field{
		fieldOf(kInt32, 0, anyV), // timeout_ms
		fieldOf(kInt8, 1, anyV),  // allow_replication_factor_change
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV), // name
			arr(0, anyV, // partitions
				fieldOf(kInt32, 0, anyV),               // partition_index
				arr(0, anyV, fieldOf(kInt32, 0, anyV)), // replicas
				tags),
			tags),
		tags,
	}},
}

func init() { maps.Copy(requestSchemas, adminRequestSchemas) }
