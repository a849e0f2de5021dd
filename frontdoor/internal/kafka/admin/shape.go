package admin

import "github.com/ferrygw/ferry/frontdoor/internal/kafka"

// Shorthands for the transport's request layout language (shape.go
// there), so that the table reads as the transport's own does.
type field = kafka.Field

const (
	anyV    = kafka.AnyV
	kInt8   = kafka.KInt8
	kInt16  = kafka.KInt16
	kInt32  = kafka.KInt32
	kInt64  = kafka.KInt64
	kUUID   = kafka.KUUID
	kString = kafka.KString
)

var (
	fieldOf  = kafka.FieldOf
	arr      = kafka.Arr
	structOf = kafka.Struct
	tags     = kafka.Tags
)

// adminRequestSchemas are the layouts of the admin APIs (refusals and
// describes); init adds them to the transport's table.
var adminRequestSchemas = map[int16]kafka.RequestSchema{
	CreateTopicsKey: {FlexibleFrom: 5, Fields: []field{
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
	DeleteTopicsKey: {FlexibleFrom: 4, Fields: []field{
		arr(6, anyV, // topics
			fieldOf(kString, 6, anyV), // name
			fieldOf(kUUID, 6, anyV),   // topic_id
			tags),
		arr(0, 5, fieldOf(kString, 0, 5)), // topic_names
		fieldOf(kInt32, 0, anyV),          // timeout_ms
		tags,
	}},
	DeleteRecordsKey: {FlexibleFrom: 2, Fields: []field{
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
	CreatePartitionsKey: {FlexibleFrom: 2, Fields: []field{
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
	AlterConfigsKey: {FlexibleFrom: 2, Fields: []field{
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
	IncrementalAlterConfigsKey: {FlexibleFrom: 1, Fields: []field{
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
	DescribeConfigsKey: {FlexibleFrom: 4, Fields: []field{
		arr(0, anyV, // resources
			fieldOf(kInt8, 0, anyV),                 // resource_type
			fieldOf(kString, 0, anyV),               // resource_name
			arr(0, anyV, fieldOf(kString, 0, anyV)), // configuration_keys
			tags),
		fieldOf(kInt8, 1, anyV), // include_synonyms
		fieldOf(kInt8, 3, anyV), // include_documentation
		tags,
	}},
	DescribeClusterKey: {FlexibleFrom: 0, Fields: []field{
		fieldOf(kInt8, 0, anyV), // include_cluster_authorized_operations
		fieldOf(kInt8, 1, anyV), // endpoint_type
		fieldOf(kInt8, 2, anyV), // include_fenced_brokers
		tags,
	}},
	DescribeTopicPartitionsKey: {FlexibleFrom: 0, Fields: []field{
		arr(0, anyV, fieldOf(kString, 0, anyV), tags), // topics
		fieldOf(kInt32, 0, anyV),                      // response_partition_limit
		structOf(0, anyV, // cursor
			fieldOf(kString, 0, anyV), // topic_name
			fieldOf(kInt32, 0, anyV),  // partition_index
			tags,
		),
		tags,
	}},
	DescribeACLsKey: {FlexibleFrom: 2, Fields: []field{
		fieldOf(kInt8, 0, anyV),   // resource_type_filter
		fieldOf(kString, 0, anyV), // resource_name_filter
		fieldOf(kInt8, 1, anyV),   // pattern_type_filter
		fieldOf(kString, 0, anyV), // principal_filter
		fieldOf(kString, 0, anyV), // host_filter
		fieldOf(kInt8, 0, anyV),   // operation
		fieldOf(kInt8, 0, anyV),   // permission_type
		tags,
	}},
	DescribeLogDirsKey: {FlexibleFrom: 2, Fields: []field{
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV),              // topic
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partitions
			tags),
		tags,
	}},
	DescribeProducersKey: {FlexibleFrom: 0, Fields: []field{
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV),              // name
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partition_indexes
			tags),
		tags,
	}},
	ListPartitionReassignmentsKey: {FlexibleFrom: 0, Fields: []field{
		fieldOf(kInt32, 0, anyV), // timeout_ms
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV),              // name
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partition_indexes
			tags),
		tags,
	}},
	ElectLeadersKey: {FlexibleFrom: 2, Fields: []field{
		fieldOf(kInt8, 1, anyV), // election_type
		arr(0, anyV, // topic_partitions
			fieldOf(kString, 0, anyV),              // topic
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partitions
			tags),
		fieldOf(kInt32, 0, anyV), // timeout_ms
		tags,
	}},
	AlterPartitionReassignmentsKey: {FlexibleFrom: 0, Fields: []field{
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

func init() { kafka.AddRequestSchemas(adminRequestSchemas) }
