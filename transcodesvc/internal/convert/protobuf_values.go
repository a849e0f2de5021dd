package convert

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// The value messages of DECIMAL, DATE and TIME columns
// (protoschema's built-in imports), read from their merged occurrences.

// pbSmallFields reads fields 1 to len(wts) of the merged messages occ, the
// last occurrence of each, into vals (wts[i] is field i+1's wire type);
// other fields are skipped. present has bit i set for each field found.
func pbSmallFields(occ []pbOcc, what string, wts []protowire.Type, vals []pbOcc) (present uint8, err error) {
	for _, o := range occ {
		b := o.b
		for len(b) > 0 {
			n, wt, l := protowire.ConsumeTag(b)
			if l < 0 {
				return 0, pbParseErr(l, "a field tag")
			}
			b = b[l:]
			if n < 1 || int(n) > len(wts) {
				if l = protowire.ConsumeFieldValue(n, wt, b); l < 0 {
					return 0, pbParseErr(l, fmt.Sprintf("field number %d", n))
				}
				b = b[l:]
				continue
			}
			if wt != wts[n-1] {
				return 0, &fieldError{msg: fmt.Sprintf("malformed Protobuf: %s field %d has wire type %d, its type is written with wire type %d", what, n, wt, wts[n-1])}
			}
			v, l := consumeOcc(wt, b)
			if l < 0 {
				return 0, pbParseErr(l, fmt.Sprintf("%s field %d", what, n))
			}
			b = b[l:]
			vals[n-1] = v
			present |= 1 << (n - 1)
		}
	}
	return present, nil
}

var decimalWireTypes = []protowire.Type{protowire.BytesType, protowire.VarintType, protowire.VarintType}

// pbDecimal reads confluent.type.Decimal (value: the unscaled number,
// big-endian two's complement; precision; scale) into a DECIMAL column. A
// scale other than the column's is rescaled when that is exact (more
// digits after the point, or dropping only zeros); the precision field is
// not needed for the value and not checked (confluent-kafka-python's
// reader ignores it too), the column's precision is.
func pbDecimal(col types.Field, db *array.Decimal128Builder) pbValue {
	t := col.Type
	var vals [3]pbOcc
	return func(occ []pbOcc) error {
		vals = [3]pbOcc{}
		if _, err := pbSmallFields(occ, "Decimal", decimalWireTypes, vals[:]); err != nil {
			return err
		}
		n, ok := decimalFromBytes(vals[0].b)
		scale := int32(vals[2].v)
		if !ok {
			return &fieldError{msg: fmt.Sprintf("Decimal of %d bytes does not fit column %s (%s)", len(vals[0].b), col.Name, t)}
		}
		if scale != int32(t.Scale) {
			r, err := n.Rescale(scale, int32(t.Scale))
			if err != nil {
				return &fieldError{msg: fmt.Sprintf("Decimal of unscaled value %s and scale %d does not fit column %s (%s) exactly", n.BigInt(), scale, col.Name, t)}
			}
			n = r
		}
		if !n.FitsInPrecision(int32(t.Precision)) {
			return &fieldError{msg: fmt.Sprintf("Decimal %s has more than %d integer digits for column %s (%s)", n.ToString(int32(t.Scale)), t.Precision-t.Scale, col.Name, t)}
		}
		db.Append(n)
		return nil
	}
}

var int32x4WireTypes = []protowire.Type{protowire.VarintType, protowire.VarintType, protowire.VarintType, protowire.VarintType}

// pbDate reads google.type.Date (year, month, day) into a DATE column. A
// partial date (year, month or day 0, which google.type.Date allows for
// "any year" and the like) is not a DATE value.
func pbDate(col types.Field, db *array.Date32Builder) pbValue {
	t := col.Type
	var vals [3]pbOcc
	return func(occ []pbOcc) error {
		vals = [3]pbOcc{}
		if _, err := pbSmallFields(occ, "Date", int32x4WireTypes[:3], vals[:]); err != nil {
			return err
		}
		y, m, d := int32(vals[0].v), int32(vals[1].v), int32(vals[2].v)
		days, ok := civilDays(y, m, d)
		if !ok {
			return &fieldError{msg: fmt.Sprintf("Date year %d month %d day %d is not a calendar date from year 1 to 9999, so it does not fit column %s (%s)", y, m, d, col.Name, t)}
		}
		db.Append(arrow.Date32(days))
		return nil
	}
}

// civilDays is the number of days from 1970-01-01 to y-m-d; false unless
// it is a date of years 1 to 9999.
func civilDays(y, m, d int32) (int32, bool) {
	if y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, false
	}
	tm := time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC)
	if tm.Day() != int(d) { // February 30th and the like roll over
		return 0, false
	}
	return int32(tm.Unix() / 86400), true
}

// pbTimeOfDay reads google.type.TimeOfDay (hours, minutes, seconds,
// nanos) into a TIME column: 00:00:00 to 23:59:59.999999999 (not the 24:00
// or leap second 60 google.type.TimeOfDay allows), with no more fractional
// digits than the column's precision.
func pbTimeOfDay(col types.Field, b array.Builder) pbValue {
	t := col.Type
	b32, _ := b.(*array.Time32Builder)
	b64, _ := b.(*array.Time64Builder)
	var vals [4]pbOcc
	return func(occ []pbOcc) error {
		vals = [4]pbOcc{}
		if _, err := pbSmallFields(occ, "TimeOfDay", int32x4WireTypes, vals[:]); err != nil {
			return err
		}
		h, m, s, ns := int64(int32(vals[0].v)), int64(int32(vals[1].v)), int64(int32(vals[2].v)), int64(int32(vals[3].v))
		if h < 0 || h > 23 || m < 0 || m > 59 || s < 0 || s > 59 || ns < 0 || ns > 999_999_999 {
			return &fieldError{msg: fmt.Sprintf("TimeOfDay %d:%d:%d and %d ns is not a time from 00:00:00 to 23:59:59.999999999, so it does not fit column %s (%s)", h, m, s, ns, col.Name, t)}
		}
		v, err := toUnit(h*3600+m*60+s, ns, t.Precision)
		if err != nil {
			return &fieldError{msg: fmt.Sprintf("TimeOfDay %02d:%02d:%02d.%09d does not fit column %s (%s): %v", h, m, s, ns, col.Name, t, err)}
		}
		if b32 != nil {
			b32.Append(arrow.Time32(v))
		} else {
			b64.Append(arrow.Time64(v))
		}
		return nil
	}
}
