package rebuild

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// AppendJSON appends the JSON form of the value at row of col, a column of
// Fluss type t laid out as types.ArrowSchema lays it out. Each form is one
// that transcoding (docs/transcoding.md §3) reads back to the same stored
// value, so produce → consume → produce round-trips:
//
//   - integers and DECIMAL as JSON numbers, DECIMAL with exactly its scale
//     ("12.30"); FLOAT/DOUBLE with the shortest digits that read back to the
//     same float, NaN and the infinities as the strings "NaN", "Infinity",
//     "-Infinity";
//   - BYTES and BINARY as standard base64 with padding;
//   - DATE "YYYY-MM-DD"; TIME "HH:MM:SS" with the precision's fractional
//     digits; TIMESTAMP "YYYY-MM-DDTHH:MM:SS[.f…]" and TIMESTAMP_LTZ the same
//     with a "Z", fractional digits as the precision has them;
//   - ARRAY as an array, ROW as an object of its fields, MAP with STRING or
//     CHAR keys as an object and with other keys as an array of
//     [key, value] pairs.
//
// A null value is JSON null.
func AppendJSON(dst []byte, col arrow.Array, row int, t types.DataType) ([]byte, error) {
	if col.IsNull(row) {
		return append(dst, "null"...), nil
	}
	switch t.Root {
	case types.Boolean:
		return strconv.AppendBool(dst, col.(*array.Boolean).Value(row)), nil
	case types.TinyInt:
		return strconv.AppendInt(dst, int64(col.(*array.Int8).Value(row)), 10), nil
	case types.SmallInt:
		return strconv.AppendInt(dst, int64(col.(*array.Int16).Value(row)), 10), nil
	case types.Int:
		return strconv.AppendInt(dst, int64(col.(*array.Int32).Value(row)), 10), nil
	case types.BigInt:
		return strconv.AppendInt(dst, col.(*array.Int64).Value(row), 10), nil
	case types.Float:
		return appendFloat(dst, float64(col.(*array.Float32).Value(row)), 32), nil
	case types.Double:
		return appendFloat(dst, col.(*array.Float64).Value(row), 64), nil
	case types.Decimal:
		n := col.(*array.Decimal128).Value(row)
		if hi, lo := n.HighBits(), n.LowBits(); hi == 0 && lo <= math.MaxInt64 || hi == -1 && lo > math.MaxInt64 {
			// Fits an int64, as DECIMAL(18) and below always do.
			return appendDecimalInt(dst, int64(lo), t.Scale), nil
		}
		return appendDecimal(dst, n.BigInt(), t.Scale), nil
	case types.Char, types.String:
		return appendString(dst, col.(*array.String).Value(row)), nil
	case types.Bytes:
		return appendBase64(dst, col.(*array.Binary).Value(row)), nil
	case types.Binary:
		return appendBase64(dst, col.(*array.FixedSizeBinary).Value(row)), nil
	case types.Date:
		d := time.Unix(int64(col.(*array.Date32).Value(row))*86400, 0).UTC()
		return append(appendDate(append(dst, '"'), d), '"'), nil
	case types.Time:
		return appendTime(dst, col, row, t.Precision)
	case types.TimestampNTZ, types.TimestampLTZ:
		ts := col.(*array.Timestamp)
		unit := ts.DataType().(*arrow.TimestampType).Unit
		v := ts.Value(row)
		return appendTimestamp(dst, v.ToTime(unit), t.Precision, t.Root == types.TimestampLTZ), nil
	case types.Array:
		l := col.(*array.List)
		start, end := l.ValueOffsets(row)
		dst = append(dst, '[')
		for i := start; i < end; i++ {
			if i > start {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendJSON(dst, l.ListValues(), int(i), *t.Element); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case types.Map:
		return appendMap(dst, col.(*array.Map), row, t)
	case types.Row:
		s := col.(*array.Struct)
		dst = append(dst, '{')
		for i, f := range t.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendString(dst, f.Name), ':')
			var err error
			if dst, err = AppendJSON(dst, s.Field(i), row, f.Type); err != nil {
				return dst, fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
		return append(dst, '}'), nil
	}
	return dst, fmt.Errorf("rebuild: type %s has no JSON form", t)
}

// appendFloat writes the shortest digits that parse back to the same float
// of this size; JSON has no NaN or infinities, so those are the strings
// Jackson writes (and transcoding reads).
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

// appendDecimalInt is appendDecimal for an unscaled value that fits int64,
// without math/big.
func appendDecimalInt(dst []byte, unscaled int64, scale int) []byte {
	var buf [20]byte
	u := uint64(unscaled)
	if unscaled < 0 {
		dst = append(dst, '-')
		u = -u // also right for math.MinInt64
	}
	digits := strconv.AppendUint(buf[:0], u, 10)
	if scale == 0 {
		return append(dst, digits...)
	}
	if len(digits) <= scale {
		dst = append(dst, '0', '.')
		for range scale - len(digits) {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	cut := len(digits) - scale
	dst = append(dst, digits[:cut]...)
	dst = append(dst, '.')
	return append(dst, digits[cut:]...)
}

// appendDecimal writes unscaled × 10^-scale with exactly scale fractional
// digits.
func appendDecimal(dst []byte, unscaled *big.Int, scale int) []byte {
	digits := unscaled.String()
	neg := digits[0] == '-'
	if neg {
		dst = append(dst, '-')
		digits = digits[1:]
	}
	if scale == 0 {
		return append(dst, digits...)
	}
	for len(digits) <= scale {
		digits = "0" + digits
	}
	cut := len(digits) - scale
	dst = append(dst, digits[:cut]...)
	dst = append(dst, '.')
	return append(dst, digits[cut:]...)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD (a Fluss STRING
// written by Ferry is always valid; one written by another writer may not
// be, and JSON cannot carry it).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\ufffd"...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// appendTime writes a TIME of the day with precision's fractional digits.
func appendTime(dst []byte, col arrow.Array, row, precision int) ([]byte, error) {
	var nanos int64
	switch c := col.(type) {
	case *array.Time32:
		v := int64(c.Value(row))
		if c.DataType().(*arrow.Time32Type).Unit == arrow.Second {
			nanos = v * int64(time.Second)
		} else {
			nanos = v * int64(time.Millisecond)
		}
	case *array.Time64:
		v := int64(c.Value(row))
		if c.DataType().(*arrow.Time64Type).Unit == arrow.Microsecond {
			nanos = v * int64(time.Microsecond)
		} else {
			nanos = v
		}
	default:
		return dst, fmt.Errorf("rebuild: TIME column is %s", col.DataType())
	}
	if nanos < 0 || nanos >= int64(24*time.Hour) {
		return dst, fmt.Errorf("rebuild: TIME value %d ns is outside a day", nanos)
	}
	t := time.Unix(0, nanos).UTC()
	dst = t.AppendFormat(append(dst, '"'), "15:04:05")
	dst = appendFraction(dst, t.Nanosecond(), precision)
	return append(dst, '"'), nil
}

func appendTimestamp(dst []byte, t time.Time, precision int, zone bool) []byte {
	t = t.UTC()
	dst = appendDate(append(dst, '"'), t)
	if t.Year() < 0 || t.Year() > 9999 {
		dst = t.AppendFormat(dst, "T15:04:05")
	} else {
		h, m, sec := t.Clock()
		dst = append(dst, 'T', byte('0'+h/10), byte('0'+h%10), ':', byte('0'+m/10), byte('0'+m%10), ':', byte('0'+sec/10), byte('0'+sec%10))
	}
	dst = appendFraction(dst, t.Nanosecond(), precision)
	if zone {
		dst = append(dst, 'Z')
	}
	return append(dst, '"')
}

// appendDate writes t's date as YYYY-MM-DD (time's own format outside
// years 0-9999).
func appendDate(dst []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(dst, "2006-01-02")
	}
	return append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+mo/10), byte('0'+mo%10), '-', byte('0'+d/10), byte('0'+d%10))
}

// appendFraction writes ".f…" with precision digits of nanos (none for 0).
func appendFraction(dst []byte, nanos, precision int) []byte {
	if precision <= 0 {
		return dst
	}
	var frac [9]byte // zero padded
	for i := 8; i >= 0; i-- {
		frac[i] = byte('0' + nanos%10)
		nanos /= 10
	}
	return append(append(dst, '.'), frac[:min(precision, 9)]...)
}

// appendMap writes a map with string keys as an object, any other as pairs.
func appendMap(dst []byte, m *array.Map, row int, t types.DataType) ([]byte, error) {
	start, end := m.ValueOffsets(row)
	keys, items := m.Keys(), m.Items()
	stringKeys := t.Key.Root == types.String || t.Key.Root == types.Char
	open, close := byte('['), byte(']')
	if stringKeys {
		open, close = '{', '}'
	}
	dst = append(dst, open)
	for i := start; i < end; i++ {
		if i > start {
			dst = append(dst, ',')
		}
		var err error
		if stringKeys {
			dst = append(appendString(dst, keys.(*array.String).Value(int(i))), ':')
		} else {
			dst = append(dst, '[')
			if dst, err = AppendJSON(dst, keys, int(i), *t.Key); err != nil {
				return dst, err
			}
			dst = append(dst, ',')
		}
		if dst, err = AppendJSON(dst, items, int(i), *t.Value); err != nil {
			return dst, err
		}
		if !stringKeys {
			dst = append(dst, ']')
		}
	}
	return append(dst, close), nil
}
