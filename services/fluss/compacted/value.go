package compacted

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// AppendValue appends the compacted encoding of the non-null value at row
// of col, a column of Fluss type t (CompactedRowWriter's write methods, as
// BinaryWriter.createValueWriter picks them per type). ARRAY, MAP and ROW
// are not supported: Fluss writes them as nested binary structures that
// this package does not build.
func AppendValue(dst []byte, col arrow.Array, row int, t types.DataType) ([]byte, error) {
	bad := func() ([]byte, error) {
		return dst, fmt.Errorf("arrow type %s does not carry Fluss %s", col.DataType(), t)
	}
	switch t.Root {
	case types.Boolean:
		a, ok := col.(*array.Boolean)
		if !ok {
			return bad()
		}
		if a.Value(row) {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case types.TinyInt:
		a, ok := col.(*array.Int8)
		if !ok {
			return bad()
		}
		return append(dst, byte(a.Value(row))), nil
	case types.SmallInt:
		a, ok := col.(*array.Int16)
		if !ok {
			return bad()
		}
		return binary.LittleEndian.AppendUint16(dst, uint16(a.Value(row))), nil
	case types.Int:
		a, ok := col.(*array.Int32)
		if !ok {
			return bad()
		}
		return binary.AppendUvarint(dst, uint64(uint32(a.Value(row)))), nil
	case types.Date:
		a, ok := col.(*array.Date32)
		if !ok {
			return bad()
		}
		return binary.AppendUvarint(dst, uint64(uint32(a.Value(row)))), nil
	case types.Time:
		var ms int32
		switch a := col.(type) {
		case *array.Time32:
			ms = int32(a.Value(row))
			if a.DataType().(*arrow.Time32Type).Unit == arrow.Second {
				ms *= 1000
			}
		case *array.Time64:
			// Truncating, as Fluss's ArrowTimeColumnVector reads it.
			v := int64(a.Value(row))
			if a.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
				ms = int32(v / 1e6)
			} else {
				ms = int32(v / 1e3)
			}
		default:
			return bad()
		}
		return binary.AppendUvarint(dst, uint64(uint32(ms))), nil
	case types.BigInt:
		a, ok := col.(*array.Int64)
		if !ok {
			return bad()
		}
		return binary.AppendUvarint(dst, uint64(a.Value(row))), nil
	case types.Float:
		a, ok := col.(*array.Float32)
		if !ok {
			return bad()
		}
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(a.Value(row))), nil
	case types.Double:
		a, ok := col.(*array.Float64)
		if !ok {
			return bad()
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(a.Value(row))), nil
	case types.Char, types.String:
		a, ok := col.(*array.String)
		if !ok {
			return bad()
		}
		v := a.Value(row)
		dst = binary.AppendUvarint(dst, uint64(uint32(len(v))))
		return append(dst, v...), nil
	case types.Binary, types.Bytes:
		var v []byte
		switch a := col.(type) {
		case *array.FixedSizeBinary:
			v = a.Value(row)
		case *array.Binary:
			v = a.Value(row)
		default:
			return bad()
		}
		dst = binary.AppendUvarint(dst, uint64(uint32(len(v))))
		return append(dst, v...), nil
	case types.Decimal:
		a, ok := col.(*array.Decimal128)
		if !ok {
			return bad()
		}
		v := a.Value(row)
		if t.Precision <= 18 {
			// A compact decimal's unscaled value fits an int64.
			return binary.AppendUvarint(dst, v.LowBits()), nil
		}
		// The length prefix is at most one byte (16 bytes at most follow).
		lenAt := len(dst)
		dst = appendTwosComplement(append(dst, 0), v)
		dst[lenAt] = byte(len(dst) - lenAt - 1)
		return dst, nil
	case types.TimestampNTZ, types.TimestampLTZ:
		a, ok := col.(*array.Timestamp)
		if !ok {
			return bad()
		}
		millis, nanos := splitMillis(int64(a.Value(row)), a.DataType().(*arrow.TimestampType).Unit)
		dst = binary.AppendUvarint(dst, uint64(millis))
		if t.Precision <= 3 {
			return dst, nil
		}
		return binary.AppendUvarint(dst, uint64(uint32(nanos))), nil
	}
	return dst, fmt.Errorf("type %s is not supported in compacted rows", t)
}

// splitMillis turns a timestamp in unit into Fluss's (epoch millis,
// nano-of-millisecond) with the millis floored, as TimestampNtz/Ltz hold it.
func splitMillis(v int64, unit arrow.TimeUnit) (int64, int32) {
	switch unit {
	case arrow.Second:
		return v * 1000, 0
	case arrow.Millisecond:
		return v, 0
	case arrow.Microsecond:
		ms, rem := floorDivMod(v, 1000)
		return ms, int32(rem * 1000)
	default:
		ms, rem := floorDivMod(v, 1e6)
		return ms, int32(rem)
	}
}

func floorDivMod(a, b int64) (int64, int64) {
	q, r := a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// appendTwosComplement appends v as java.math.BigInteger.toByteArray
// writes it: the shortest big-endian two's complement form, at least one
// byte. It works on the 128 bits directly, so the hot path allocates nothing.
func appendTwosComplement(dst []byte, v decimal128.Num) []byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(v.HighBits()))
	binary.BigEndian.PutUint64(b[8:], v.LowBits())
	// Drop leading bytes that only repeat the sign of the byte after them.
	i := 0
	for i < 15 && ((b[i] == 0 && b[i+1]&0x80 == 0) || (b[i] == 0xff && b[i+1]&0x80 != 0)) {
		i++
	}
	return append(dst, b[i:]...)
}
