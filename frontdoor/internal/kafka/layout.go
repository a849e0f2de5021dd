package kafka

// The request layout language of shape.go, for the tables the concern
// packages keep beside their handlers (their shape.go).
type (
	Field         = field
	RequestSchema = requestSchema
)

const (
	AnyV    = anyV
	KInt8   = kInt8
	KInt16  = kInt16
	KInt32  = kInt32
	KInt64  = kInt64
	KUUID   = kUUID
	KString = kString
	KBytes  = kBytes
)

var (
	FieldOf = fieldOf
	Arr     = arr
	Tags    = tags
)

// ProduceArr is the array of Produce partition entries, which the work
// cost counts apart (requestShape.ProduceEntries).
func ProduceArr(minV, maxV int16, elem ...Field) Field {
	return field{kind: kArray, minV: minV, maxV: maxV, produce: true, elem: elem}
}

// Struct is a nullable struct of elem (int8 -1 for null, else its fields).
func Struct(minV, maxV int16, elem ...Field) Field {
	return field{kind: kStruct, minV: minV, maxV: maxV, elem: elem}
}
