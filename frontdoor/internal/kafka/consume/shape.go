package consume

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
)

var (
	fieldOf = kafka.FieldOf
	arr     = kafka.Arr
	tags    = kafka.Tags
)

// consumeRequestSchemas are the request layouts of Fetch, ListOffsets and
// OffsetForLeaderEpoch; init adds them to the transport's table.
var consumeRequestSchemas = map[int16]kafka.RequestSchema{
	FetchKey: {FlexibleFrom: 12, Fields: []field{
		fieldOf(kInt32, 0, anyV), // replica_id
		fieldOf(kInt32, 0, anyV), // max_wait_ms
		fieldOf(kInt32, 0, anyV), // min_bytes
		fieldOf(kInt32, 3, anyV), // max_bytes
		fieldOf(kInt8, 4, anyV),  // isolation_level
		fieldOf(kInt32, 7, anyV), // session_id
		fieldOf(kInt32, 7, anyV), // session_epoch
		arr(0, anyV, // topics
			fieldOf(kString, 0, 12),
			arr(0, anyV, // partitions
				fieldOf(kInt32, 0, anyV),  // partition
				fieldOf(kInt32, 9, anyV),  // current_leader_epoch
				fieldOf(kInt64, 0, anyV),  // fetch_offset
				fieldOf(kInt32, 12, anyV), // last_fetched_epoch
				fieldOf(kInt64, 5, anyV),  // log_start_offset
				fieldOf(kInt32, 0, anyV),  // partition_max_bytes
				tags),
			tags),
		arr(7, anyV, // forgotten_topics_data
			fieldOf(kString, 0, 12),
			arr(0, anyV, fieldOf(kInt32, 0, anyV)),
			tags),
		fieldOf(kString, 11, anyV), // rack_id
		tags,
	}},
	ListOffsetsKey: {FlexibleFrom: 6, Fields: []field{
		fieldOf(kInt32, 0, anyV), // replica_id
		fieldOf(kInt8, 2, anyV),  // isolation_level
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV), // name
			arr(0, anyV, // partitions
				fieldOf(kInt32, 0, anyV), // partition_index
				fieldOf(kInt32, 4, anyV), // current_leader_epoch
				fieldOf(kInt64, 0, anyV), // timestamp
				fieldOf(kInt32, 0, 0),    // max_num_offsets
				tags),
			tags),
		fieldOf(kInt32, 10, anyV), // timeout_ms
		tags,
	}},
	offsetForLeaderEpochKey: {FlexibleFrom: 4, Fields: []field{
		fieldOf(kInt32, 3, anyV), // replica_id
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV), // topic
			arr(0, anyV, // partitions
				fieldOf(kInt32, 0, anyV), // partition
				fieldOf(kInt32, 2, anyV), // current_leader_epoch
				fieldOf(kInt32, 0, anyV), // leader_epoch
				tags),
			tags),
		tags,
	}},
}

func init() { kafka.AddRequestSchemas(consumeRequestSchemas) }
