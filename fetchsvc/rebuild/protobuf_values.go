package rebuild

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// The value messages of DECIMAL, DATE and TIME columns
// (protoschema's built-in imports), written as Confluent's serdes write
// them. A NULL reaches these only where Protobuf has no null (a list
// element, a map value): it writes the empty message.

// appendVarintField appends field num as a varint unless v is 0, which
// proto3 leaves out.
func appendVarintField(dst []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return dst
	}
	return protowire.AppendVarint(protowire.AppendTag(dst, num, protowire.VarintType), v)
}

// pbDecimalEnc writes a DECIMAL as confluent.type.Decimal: the unscaled
// value in the fewest big-endian two's-complement bytes (one for zero:
// Java's BigInteger takes no empty array), its number of digits as the
// precision, and the column's scale.
func pbDecimalEnc(col types.Field) pbEnc {
	scale := uint64(int64(col.Type.Scale))
	return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
		return appendLenPrefixed(dst, func(dst []byte) ([]byte, error) {
			if c.IsNull(row) {
				return dst, nil
			}
			n := c.(*array.Decimal128).Value(row)
			var buf [16]byte
			binary.BigEndian.PutUint64(buf[:8], uint64(n.HighBits()))
			binary.BigEndian.PutUint64(buf[8:], n.LowBits())
			b := buf[:]
			// Drop leading bytes that only repeat the sign.
			for len(b) > 1 && ((b[0] == 0 && b[1]&0x80 == 0) || (b[0] == 0xff && b[1]&0x80 != 0)) {
				b = b[1:]
			}
			dst = protowire.AppendBytes(protowire.AppendTag(dst, 1, protowire.BytesType), b)
			dst = appendVarintField(dst, 2, uint64(digits(n)))
			return appendVarintField(dst, 3, scale), nil
		})
	}
}

// digits is the number of decimal digits of n's unscaled value, 1 for 0.
func digits(n decimal128.Num) int32 {
	for p := int32(1); p < 38; p++ {
		if n.FitsInPrecision(p) {
			return p
		}
	}
	return 38
}

// pbDateEnc writes a DATE as google.type.Date. Fluss's DATE reaches
// beyond the years 1 to 9999 a google.type.Date holds: those fail.
func pbDateEnc(col types.Field) pbEnc {
	return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
		var y, m, d int
		if !c.IsNull(row) {
			days := int64(c.(*array.Date32).Value(row))
			tm := time.Unix(days*86400, 0).UTC()
			if y, m, d = tm.Year(), int(tm.Month()), tm.Day(); y < 1 || y > 9999 {
				return dst, fmt.Errorf("column %s: %s is not a date of years 1 to 9999, which google.type.Date holds", col.Name, tm.Format("2006-01-02"))
			}
		}
		return appendLenPrefixed(dst, func(dst []byte) ([]byte, error) {
			dst = appendVarintField(dst, 1, uint64(y))
			dst = appendVarintField(dst, 2, uint64(m))
			return appendVarintField(dst, 3, uint64(d)), nil
		})
	}
}

// pbTimeOfDayEnc writes a TIME as google.type.TimeOfDay.
func pbTimeOfDayEnc(col types.Field) pbEnc {
	nanosPerUnit := 1e9 / unitsPerSecond(col.Type.Precision)
	return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
		var ns int64
		switch a := c.(type) {
		case *array.Time32:
			if !a.IsNull(row) {
				ns = int64(a.Value(row)) * nanosPerUnit
			}
		case *array.Time64:
			if !a.IsNull(row) {
				ns = int64(a.Value(row)) * nanosPerUnit
			}
		}
		return appendLenPrefixed(dst, func(dst []byte) ([]byte, error) {
			dst = appendVarintField(dst, 1, uint64(ns/3600e9))
			dst = appendVarintField(dst, 2, uint64(ns/60e9%60))
			dst = appendVarintField(dst, 3, uint64(ns/1e9%60))
			return appendVarintField(dst, 4, uint64(ns%1e9)), nil
		})
	}
}
