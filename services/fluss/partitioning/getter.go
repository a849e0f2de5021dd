package partitioning

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// Separator joins the values of a partition name (ResolvedPartitionSpec).
const Separator = "$"

// SupportsKeyType reports whether Fluss 0.9.1 accepts a column of this type
// as a partition key (PartitionUtils.PARTITION_KEY_SUPPORTED_TYPES):
// everything scalar except DECIMAL.
func SupportsKeyType(r types.Root) bool {
	switch r {
	case types.Char, types.String, types.Boolean, types.Binary, types.Bytes,
		types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Float, types.Double,
		types.Date, types.Time, types.TimestampNTZ, types.TimestampLTZ:
		return true
	}
	return false
}

// ErrFloatKey refuses FLOAT and DOUBLE partition keys: Fluss names their
// partitions with Java's Float/Double.toString, whose digits differ between
// JVMs (JDK 19 and later print the shortest digits, JDK 17's FloatingDecimal
// often one more, e.g. 1.17549435E-38 and 9.999999999999999E22 for 1e23), so
// the partition a row belongs to depends on the writer's JVM.
var ErrFloatKey = errors.New("FLOAT and DOUBLE partition keys are named differently by different JVMs")

// Getter computes the partition name of rows of a partitioned table, as the
// Java client's PartitionGetter does before it writes a row.
type Getter struct {
	cols  []int
	types []types.DataType
	names []string
}

// NewGetter prepares a getter for the partition keys of a table with these
// columns.
func NewGetter(columns []types.Field, partitionKeys []string) (*Getter, error) {
	if len(partitionKeys) == 0 {
		return nil, fmt.Errorf("partitioning: no partition keys")
	}
	g := &Getter{}
	for _, k := range partitionKeys {
		idx := -1
		for i, c := range columns {
			if c.Name == k {
				idx = i
				break
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("partitioning: partition key %q is not a column", k)
		}
		t := columns[idx].Type
		if !SupportsKeyType(t.Root) {
			return nil, fmt.Errorf("partitioning: partition key %q has type %s, which Fluss does not allow as a partition key", k, t)
		}
		if t.Root == types.Float || t.Root == types.Double {
			return nil, fmt.Errorf("partitioning: partition key %q has type %s: %w", k, t, ErrFloatKey)
		}
		g.cols = append(g.cols, idx)
		g.types = append(g.types, t)
		g.names = append(g.names, k)
	}
	return g, nil
}

// AppendName appends the partition name of row to dst: each key's value
// (AppendValue) joined by Separator.
func (g *Getter) AppendName(dst []byte, rec arrow.RecordBatch, row int) ([]byte, error) {
	if row < 0 || int64(row) >= rec.NumRows() {
		return dst, fmt.Errorf("partitioning: row %d outside 0..%d", row, rec.NumRows()-1)
	}
	for i, c := range g.cols {
		if c >= int(rec.NumCols()) {
			return dst, fmt.Errorf("partitioning: record has %d columns, partition key %q is column %d", rec.NumCols(), g.names[i], c)
		}
		if i > 0 {
			dst = append(dst, Separator...)
		}
		var err error
		dst, err = AppendValue(dst, rec.Column(c), row, g.types[i])
		if err != nil {
			return dst, fmt.Errorf("partitioning: partition key %q row %d: %w", g.names[i], row, err)
		}
	}
	return dst, nil
}

// AppendValue appends one partition key value in the text form Fluss's
// PartitionUtils.convertValueOfType gives it. col must have the Arrow type
// types.ArrowField maps t to.
func AppendValue(dst []byte, col arrow.Array, row int, t types.DataType) ([]byte, error) {
	if col.IsNull(row) {
		return dst, fmt.Errorf("null partition value")
	}
	switch t.Root {
	case types.Char, types.String:
		if c, ok := col.(*array.String); ok {
			return append(dst, c.Value(row)...), nil
		}
	case types.Boolean:
		if c, ok := col.(*array.Boolean); ok {
			return strconv.AppendBool(dst, c.Value(row)), nil
		}
	case types.Binary:
		if c, ok := col.(*array.FixedSizeBinary); ok {
			return hex.AppendEncode(dst, c.Value(row)), nil
		}
	case types.Bytes:
		if c, ok := col.(*array.Binary); ok {
			return hex.AppendEncode(dst, c.Value(row)), nil
		}
	case types.TinyInt:
		if c, ok := col.(*array.Int8); ok {
			return strconv.AppendInt(dst, int64(c.Value(row)), 10), nil
		}
	case types.SmallInt:
		if c, ok := col.(*array.Int16); ok {
			return strconv.AppendInt(dst, int64(c.Value(row)), 10), nil
		}
	case types.Int:
		if c, ok := col.(*array.Int32); ok {
			return strconv.AppendInt(dst, int64(c.Value(row)), 10), nil
		}
	case types.BigInt:
		if c, ok := col.(*array.Int64); ok {
			return strconv.AppendInt(dst, c.Value(row), 10), nil
		}
	case types.Date:
		if c, ok := col.(*array.Date32); ok {
			return appendDate(dst, int64(c.Value(row))), nil
		}
	case types.Time:
		if ms, ok := timeMillis(col, row); ok {
			return appendTime(dst, ms), nil
		}
	case types.TimestampNTZ, types.TimestampLTZ:
		if c, ok := col.(*array.Timestamp); ok {
			unit := c.DataType().(*arrow.TimestampType).Unit
			ms, nanoOfMilli := timestampParts(int64(c.Value(row)), unit)
			return appendTimestamp(dst, ms, nanoOfMilli), nil
		}
	case types.Float, types.Double:
		return dst, ErrFloatKey
	default:
		return dst, fmt.Errorf("type %s cannot be a partition key", t)
	}
	return dst, fmt.Errorf("column of Arrow type %s does not hold %s values", col.DataType(), t)
}

// appendDate formats days since the epoch as yyyy-MM-dd (dayToString; the
// year zero-padded to four digits, with its sign when negative).
func appendDate(dst []byte, days int64) []byte {
	d := time.Unix(days*86400, 0).UTC()
	dst = appendPadded(dst, int64(d.Year()), 4)
	dst = appendPadded(append(dst, '-'), int64(d.Month()), 2)
	return appendPadded(append(dst, '-'), int64(d.Day()), 2)
}

// timeMillis reads a TIME value as milliseconds of the day, the int Fluss
// rows hold whatever the column's precision.
func timeMillis(col arrow.Array, row int) (int64, bool) {
	switch c := col.(type) {
	case *array.Time32:
		v := int64(c.Value(row))
		if c.DataType().(*arrow.Time32Type).Unit == arrow.Second {
			return v * 1000, true
		}
		return v, true
	case *array.Time64:
		v := int64(c.Value(row))
		if c.DataType().(*arrow.Time64Type).Unit == arrow.Microsecond {
			return v / 1000, true
		}
		return v / 1_000_000, true
	}
	return 0, false
}

// appendTime formats milliseconds of the day as HH-mm-ss_SSS (milliToString).
func appendTime(dst []byte, ms int64) []byte {
	const perHour, perMinute = 3_600_000, 60_000
	h := floorDiv(ms, perHour)
	rest := floorMod(ms, perHour)
	dst = appendPadded(dst, h, 2)
	dst = appendPadded(append(dst, '-'), rest/perMinute, 2)
	dst = appendPadded(append(dst, '-'), rest%perMinute/1000, 2)
	return appendPadded(append(dst, '_'), floorMod(ms, 1000), 3)
}

// timestampParts splits an Arrow timestamp into epoch milliseconds and
// nanoseconds of the millisecond, as Fluss's TimestampNtz/TimestampLtz hold it.
func timestampParts(v int64, unit arrow.TimeUnit) (ms int64, nanoOfMilli int64) {
	switch unit {
	case arrow.Second:
		return v * 1000, 0
	case arrow.Millisecond:
		return v, 0
	case arrow.Microsecond:
		return floorDiv(v, 1000), floorMod(v, 1000) * 1000
	default:
		return floorDiv(v, 1_000_000), floorMod(v, 1_000_000)
	}
}

// appendTimestamp formats a timestamp in UTC as yyyy-MM-dd-HH-mm-ss_ and the
// nanoseconds of the second without trailing zeros (timestampToString).
func appendTimestamp(dst []byte, ms, nanoOfMilli int64) []byte {
	ts := time.UnixMilli(ms).UTC().Add(time.Duration(nanoOfMilli))
	dst = appendYearOfEra(dst, ts.Year())
	for _, v := range [...]int{int(ts.Month()), ts.Day(), ts.Hour(), ts.Minute(), ts.Second()} {
		dst = appendPadded(append(dst, '-'), int64(v), 2)
	}
	dst = append(dst, '_')
	if ns := ts.Nanosecond(); ns != 0 {
		digits := 9
		for ns%10 == 0 {
			ns /= 10
			digits--
		}
		dst = appendPadded(dst, int64(ns), digits)
	}
	return dst
}

// appendYearOfEra formats a year as Java's "yyyy" pattern: the year of the
// era (1 BC is year 1) padded to four digits, with a "+" when it needs more.
func appendYearOfEra(dst []byte, year int) []byte {
	if year <= 0 {
		year = 1 - year
	}
	if year > 9999 {
		dst = append(dst, '+')
	}
	return appendPadded(dst, int64(year), 4)
}

// appendPadded appends v in decimal, zero-padded to width characters
// including a minus sign, as Java's %0Nd does (-5 as "-005" for width 4).
func appendPadded(dst []byte, v int64, width int) []byte {
	if v < 0 {
		dst = append(dst, '-')
		v = -v
		width--
	}
	var buf [20]byte
	digits := strconv.AppendInt(buf[:0], v, 10)
	for i := len(digits); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, digits...)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }
