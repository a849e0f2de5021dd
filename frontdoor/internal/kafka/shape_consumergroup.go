package kafka

import "maps"

// consumerGroupRequestSchemas are the layouts of the KIP-848 consumer
// group APIs; init merges them into requestSchemas.
var consumerGroupRequestSchemas = map[int16]requestSchema{
	consumerGroupHeartbeatKey: {flexibleFrom: 0, fields: []field{
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
	consumerGroupDescribeKey: {flexibleFrom: 0, fields: []field{
		arr(0, anyV, fieldOf(kString, 0, anyV)), // group_ids
		fieldOf(kInt8, 0, anyV),                 // include_authorized_operations
		tags,
	}},
}

func init() { maps.Copy(requestSchemas, consumerGroupRequestSchemas) }
