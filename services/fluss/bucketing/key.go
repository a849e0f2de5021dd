package bucketing

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// KeyEncoder encodes a row's bucket key columns the way Fluss's
// CompactedKeyEncoder does (the default, non-lake encoding): the key fields
// one after another in compacted-row form, with no null bitmap since key
// columns may not be null.
//
//	BOOLEAN, TINYINT     1 byte
//	SMALLINT             2 bytes little-endian
//	INT, DATE, TIME      unsigned LEB128 varint of the int32 bits (TIME in ms of day)
//	BIGINT               unsigned LEB128 varint of the int64 bits
//	FLOAT, DOUBLE        IEEE bits, little-endian
//	CHAR, STRING,
//	BINARY, BYTES        varint length, bytes (CHAR/BINARY are not padded)
//	DECIMAL(p<=18)       varint of the unscaled long
//	DECIMAL(p>18)        varint length, unscaled two's complement big-endian, minimal
//	TIMESTAMP(p<=3)      varint of epoch millis
//	TIMESTAMP(p>3)       varint of epoch millis (floor), varint of nano-of-millisecond
type KeyEncoder struct {
	cols  []int
	types []types.DataType
	names []string
}

// NewKeyEncoder prepares an encoder for the named bucket keys of a table
// with these columns.
func NewKeyEncoder(columns []types.Field, keys []string) (*KeyEncoder, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("bucketing: no bucket keys")
	}
	e := &KeyEncoder{}
	for _, k := range keys {
		idx := -1
		for i, c := range columns {
			if c.Name == k {
				idx = i
				break
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("bucketing: bucket key %q is not a column", k)
		}
		t := columns[idx].Type
		switch t.Root {
		case types.Array, types.Map, types.Row:
			return nil, fmt.Errorf("bucketing: bucket key %q has type %s, which Fluss cannot hash", k, t)
		}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("bucketing: bucket key %q: %w", k, err)
		}
		e.cols = append(e.cols, idx)
		e.types = append(e.types, t)
		e.names = append(e.names, k)
	}
	return e, nil
}

// Encode appends the bucket key of row to dst.
func (e *KeyEncoder) Encode(dst []byte, rec arrow.RecordBatch, row int) ([]byte, error) {
	if row < 0 || int64(row) >= rec.NumRows() {
		return dst, fmt.Errorf("bucketing: row %d outside 0..%d", row, rec.NumRows()-1)
	}
	for i, c := range e.cols {
		if c >= int(rec.NumCols()) {
			return dst, fmt.Errorf("bucketing: record has %d columns, key %q is column %d", rec.NumCols(), e.names[i], c)
		}
		var err error
		dst, err = e.appendValue(dst, rec.Column(c), row, e.types[i])
		if err != nil {
			return dst, fmt.Errorf("bucketing: key %q row %d: %w", e.names[i], row, err)
		}
	}
	return dst, nil
}

func (e *KeyEncoder) appendValue(dst []byte, col arrow.Array, row int, t types.DataType) ([]byte, error) {
	if col.IsNull(row) {
		return dst, fmt.Errorf("null value in a bucket key column")
	}
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
		b := twosComplement(v.BigInt())
		dst = binary.AppendUvarint(dst, uint64(uint32(len(b))))
		return append(dst, b...), nil
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
	return dst, fmt.Errorf("type %s cannot be a bucket key", t)
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

// twosComplement is java.math.BigInteger.toByteArray: the shortest
// big-endian two's complement form, at least one byte.
func twosComplement(v *big.Int) []byte {
	if v.Sign() >= 0 {
		b := v.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -v - 1 has the complement bits of v; invert them back.
	m := new(big.Int).Neg(v)
	m.Sub(m, big.NewInt(1))
	b := m.Bytes()
	if len(b) == 0 || b[0]&0x80 != 0 {
		b = append([]byte{0}, b...)
	}
	for i := range b {
		b[i] = ^b[i]
	}
	return b
}
