package txnapi

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
	kString = kafka.KString
	kBytes  = kafka.KBytes
	kUUID   = kafka.KUUID
)

var (
	fieldOf = kafka.FieldOf
	arr     = kafka.Arr
	tags    = kafka.Tags
)

// txnRequestSchemas are the layouts of the transaction APIs;
// init adds them to the transport's table.
var txnRequestSchemas = map[int16]kafka.RequestSchema{
	AddPartitionsToTxnKey: {FlexibleFrom: 3, Fields: []field{
		arr(4, anyV, // transactions (the brokers' form)
			fieldOf(kString, 4, anyV), // transactional_id
			fieldOf(kInt64, 4, anyV),  // producer_id
			fieldOf(kInt16, 4, anyV),  // producer_epoch
			fieldOf(kInt8, 4, anyV),   // verify_only
			arr(4, anyV, fieldOf(kString, 0, anyV), arr(0, anyV, fieldOf(kInt32, 0, anyV)), tags), // topics
			tags),
		fieldOf(kString, 0, 3), // v3_and_below_transactional_id
		fieldOf(kInt64, 0, 3),  // v3_and_below_producer_id
		fieldOf(kInt16, 0, 3),  // v3_and_below_producer_epoch
		arr(0, 3, // v3_and_below_topics
			fieldOf(kString, 0, anyV),              // name
			arr(0, anyV, fieldOf(kInt32, 0, anyV)), // partitions
			tags),
		tags,
	}},
	AddOffsetsToTxnKey: {FlexibleFrom: 3, Fields: []field{
		fieldOf(kString, 0, anyV), // transactional_id
		fieldOf(kInt64, 0, anyV),  // producer_id
		fieldOf(kInt16, 0, anyV),  // producer_epoch
		fieldOf(kString, 0, anyV), // group_id
		tags,
	}},
	TxnOffsetCommitKey: {FlexibleFrom: 3, Fields: []field{
		fieldOf(kString, 0, anyV), // transactional_id
		fieldOf(kString, 0, anyV), // group_id
		fieldOf(kInt64, 0, anyV),  // producer_id
		fieldOf(kInt16, 0, anyV),  // producer_epoch
		fieldOf(kInt32, 3, anyV),  // generation_id
		fieldOf(kString, 3, anyV), // member_id
		fieldOf(kString, 3, anyV), // group_instance_id
		arr(0, anyV, // topics
			fieldOf(kString, 0, anyV), // name
			arr(0, anyV, // partitions
				fieldOf(kInt32, 0, anyV),  // partition_index
				fieldOf(kInt64, 0, anyV),  // committed_offset
				fieldOf(kInt32, 2, anyV),  // committed_leader_epoch
				fieldOf(kString, 0, anyV), // committed_metadata
				tags),
			tags),
		tags,
	}},
	EndTxnKey: {FlexibleFrom: 3, Fields: []field{
		fieldOf(kString, 0, anyV), // transactional_id
		fieldOf(kInt64, 0, anyV),  // producer_id
		fieldOf(kInt16, 0, anyV),  // producer_epoch
		fieldOf(kInt8, 0, anyV),   // committed
		tags,
	}},
	DescribeTransactionsKey: {FlexibleFrom: 0, Fields: []field{
		arr(0, anyV, fieldOf(kString, 0, anyV)), // transactional_ids
		tags,
	}},
	ListTransactionsKey: {FlexibleFrom: 0, Fields: []field{
		arr(0, anyV, fieldOf(kString, 0, anyV)), // state_filters
		arr(0, anyV, fieldOf(kInt64, 0, anyV)),  // producer_id_filters
		fieldOf(kInt64, 1, anyV),                // duration_filter
		fieldOf(kString, 2, anyV),               // transactional_id_pattern
		tags,
	}},
}

func init() { kafka.AddRequestSchemas(txnRequestSchemas) }
