package produce

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
	kBytes  = kafka.KBytes
)

var (
	fieldOf    = kafka.FieldOf
	arr        = kafka.Arr
	produceArr = kafka.ProduceArr
	tags       = kafka.Tags
)

// produceRequestSchemas are the request layouts of Produce and
// InitProducerId; init adds them to the transport's table.
var produceRequestSchemas = map[int16]kafka.RequestSchema{
	kafka.ProduceKey: {FlexibleFrom: 9, Fields: []field{
		fieldOf(kString, 3, anyV), // transactional_id
		fieldOf(kInt16, 0, anyV),  // acks
		fieldOf(kInt32, 0, anyV),  // timeout_ms
		arr(0, anyV, // topic_data
			fieldOf(kString, 0, 12), // name
			fieldOf(kUUID, 13, anyV),
			produceArr(0, anyV, // partition_data
				fieldOf(kInt32, 0, anyV), // index
				fieldOf(kBytes, 0, anyV), // records
				tags,
			),
			tags),
		tags,
	}},
	InitProducerIDKey: {FlexibleFrom: 2, Fields: []field{
		fieldOf(kString, 0, anyV), // transactional_id
		fieldOf(kInt32, 0, anyV),  // transaction_timeout_ms
		fieldOf(kInt64, 3, anyV),  // producer_id
		fieldOf(kInt16, 3, anyV),  // producer_epoch
		fieldOf(kInt8, 6, anyV),   // enable_2pc
		fieldOf(kInt8, 6, anyV),   // keep_prepared_txn
		tags,
	}},
}

func init() { kafka.AddRequestSchemas(produceRequestSchemas) }
