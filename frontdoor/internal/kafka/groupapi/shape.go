package groupapi

import "github.com/ferrygw/ferry/frontdoor/internal/kafka"

// Shorthands for the transport's request layout language (shape.go
// there), so that the table reads as the transport's own does.
type field = kafka.Field

const (
	anyV    = kafka.AnyV
	kInt8   = kafka.KInt8
	kInt32  = kafka.KInt32
	kInt64  = kafka.KInt64
	kString = kafka.KString
	kBytes  = kafka.KBytes
	kUUID   = kafka.KUUID
)

var (
	fieldOf = kafka.FieldOf
	arr     = kafka.Arr
	tags    = kafka.Tags
)

// groupsRequestSchemas are the request layouts of the consumer group APIs;
// init adds them to the transport's table.
var groupsRequestSchemas = map[int16]kafka.RequestSchema{
	JoinGroupKey: {FlexibleFrom: 6, Fields: []field{
		fieldOf(kString, 0, anyV), // group_id
		fieldOf(kInt32, 0, anyV),  // session_timeout_ms
		fieldOf(kInt32, 1, anyV),  // rebalance_timeout_ms
		fieldOf(kString, 0, anyV), // member_id
		fieldOf(kString, 5, anyV), // group_instance_id
		fieldOf(kString, 0, anyV), // protocol_type
		arr(0, anyV, // protocols
			fieldOf(kString, 0, anyV), // name
			fieldOf(kBytes, 0, anyV),  // metadata
			tags),
		fieldOf(kString, 8, anyV), // reason
		tags,
	}},
	SyncGroupKey: {FlexibleFrom: 4, Fields: []field{
		fieldOf(kString, 0, anyV), // group_id
		fieldOf(kInt32, 0, anyV),  // generation_id
		fieldOf(kString, 0, anyV), // member_id
		fieldOf(kString, 3, anyV), // group_instance_id
		fieldOf(kString, 5, anyV), // protocol_type
		fieldOf(kString, 5, anyV), // protocol_name
		arr(0, anyV, // assignments
			fieldOf(kString, 0, anyV), // member_id
			fieldOf(kBytes, 0, anyV),  // assignment
			tags),
		tags,
	}},
	HeartbeatKey: {FlexibleFrom: 4, Fields: []field{
		fieldOf(kString, 0, anyV), // group_id
		fieldOf(kInt32, 0, anyV),  // generation_id
		fieldOf(kString, 0, anyV), // member_id
		fieldOf(kString, 3, anyV), // group_instance_id
		tags,
	}},
	LeaveGroupKey: {FlexibleFrom: 4, Fields: []field{
		fieldOf(kString, 0, anyV), // group_id
		fieldOf(kString, 0, 2),    // member_id
		arr(3, anyV, // members
			fieldOf(kString, 0, anyV), // member_id
			fieldOf(kString, 0, anyV), // group_instance_id
			fieldOf(kString, 5, anyV), // reason
			tags),
		tags,
	}},
	OffsetCommitKey: {FlexibleFrom: 8, Fields: []field{
		fieldOf(kString, 0, anyV), // group_id
		fieldOf(kInt32, 1, anyV),  // generation_id_or_member_epoch
		fieldOf(kString, 1, anyV), // member_id
		fieldOf(kString, 7, anyV), // group_instance_id
		fieldOf(kInt64, 2, 4),     // retention_time_ms
		arr(0, anyV, // topics
			fieldOf(kString, 0, 9), // name
			arr(0, anyV, // partitions
				fieldOf(kInt32, 0, anyV),  // partition_index
				fieldOf(kInt64, 0, anyV),  // committed_offset
				fieldOf(kInt64, 1, 1),     // commit_timestamp
				fieldOf(kInt32, 6, anyV),  // committed_leader_epoch
				fieldOf(kString, 0, anyV), // committed_metadata
				tags),
			tags),
		tags,
	}},
	OffsetFetchKey: {FlexibleFrom: 6, Fields: []field{
		fieldOf(kString, 0, 7), // group_id
		arr(0, 7, // topics
			fieldOf(kString, 0, anyV),              // name
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partition_indexes
			tags),
		arr(8, anyV, // groups
			fieldOf(kString, 8, anyV), // group_id
			fieldOf(kString, 9, anyV), // member_id
			fieldOf(kInt32, 9, anyV),  // member_epoch
			arr(8, anyV, // topics
				fieldOf(kString, 8, anyV),              // name
				arr(8, anyV, fieldOf(kInt32, 8, anyV)), // partition_indexes
				tags),
			tags),
		fieldOf(kInt8, 7, anyV), // require_stable
		tags,
	}},
	ListGroupsKey: {FlexibleFrom: 3, Fields: []field{
		arr(4, anyV, fieldOf(kString, 4, anyV)), // states_filter
		arr(5, anyV, fieldOf(kString, 5, anyV)), // types_filter
		tags,
	}},
	DescribeGroupsKey: {FlexibleFrom: 5, Fields: []field{
		arr(0, anyV, fieldOf(kString, 0, anyV)), // groups
		fieldOf(kInt8, 3, anyV),                 // include_authorized_operations
		tags,
	}},
	DeleteGroupsKey: {FlexibleFrom: 2, Fields: []field{
		arr(0, anyV, fieldOf(kString, 0, anyV)), // groups_names
		tags,
	}},
	OffsetDeleteKey: {FlexibleFrom: anyV, Fields: []field{
		fieldOf(kString, 0, anyV), // group_id
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV),              // name
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partitions: partition_index
			tags),
		tags,
	}},
	FindCoordinatorKey: {FlexibleFrom: 3, Fields: []field{
		fieldOf(kString, 0, 3), // key
		fieldOf(kInt8, 1, anyV),
		arr(4, anyV, fieldOf(kString, 0, anyV)), // coordinator_keys
		tags,
	}},
	ConsumerGroupHeartbeatKey: {FlexibleFrom: 0, Fields: []field{
		fieldOf(kString, 0, anyV),               // group_id
		fieldOf(kString, 0, anyV),               // member_id
		fieldOf(kInt32, 0, anyV),                // member_epoch
		fieldOf(kString, 0, anyV),               // instance_id
		fieldOf(kString, 0, anyV),               // rack_id
		fieldOf(kInt32, 0, anyV),                // rebalance_timeout_ms
		arr(0, anyV, fieldOf(kString, 0, anyV)), // subscribed_topic_names
		fieldOf(kString, 1, anyV),               // subscribed_topic_regex
		fieldOf(kString, 0, anyV),               // server_assignor
		arr(0, anyV, // topic_partitions
			fieldOf(kUUID, 0, anyV),                // topic_id
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partitions
			tags),
		tags,
	}},
	ConsumerGroupDescribeKey: {FlexibleFrom: 0, Fields: []field{
		arr(0, anyV, fieldOf(kString, 0, anyV)), // group_ids
		fieldOf(kInt8, 0, anyV),                 // include_authorized_operations
		tags,
	}},
}

func init() { kafka.AddRequestSchemas(groupsRequestSchemas) }
