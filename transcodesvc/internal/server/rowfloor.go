package server

import "github.com/apache/arrow-go/v18/arrow"

// minRowBytes is a lower bound of the Arrow bytes one row of schema takes:
// fixed-width values and the offsets of variable-width ones, without
// validity bitmaps or variable-width data. A batch whose records times
// this exceeds MaxOutputBytes cannot fit an answer, so it is refused
// before its Arrow is built: a 32 MiB batch of two-byte records would
// otherwise build gigabytes for a wide table before being refused.
func minRowBytes(schema *arrow.Schema) int64 {
	var n int64
	for _, f := range schema.Fields() {
		n += minValueBytes(f.Type)
	}
	return n
}

func minValueBytes(t arrow.DataType) int64 {
	switch t := t.(type) {
	case *arrow.StructType:
		var n int64
		for _, f := range t.Fields() {
			n += minValueBytes(f.Type)
		}
		return n
	case *arrow.StringType, *arrow.BinaryType, *arrow.ListType, *arrow.MapType:
		return 4 // an int32 offset
	case *arrow.LargeStringType, *arrow.LargeBinaryType, *arrow.LargeListType:
		return 8
	case arrow.FixedWidthDataType:
		return int64(t.BitWidth() / 8) // booleans: a bit, counted as 0
	}
	return 0
}
