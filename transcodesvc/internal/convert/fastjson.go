package convert

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// fastDecoder decodes the common shape of a JSON value in one pass: compact
// (no whitespace), every column's key present once, in table order, with
// plain values (no escapes, integers of at most 18 digits, decimals without
// an exponent...). It first reads the whole value into per-column slots and
// only then appends them, so a value of any other shape, valid or not, is
// left to the generic objectDecoder with the builders untouched: that path
// decides what the value means and words every error, the fast one only
// ever says "not mine".
//
// It exists for speed: producers write every record of a topic with the
// same serializer, so the keys come at the same places and the tokenizer's
// general work (whitespace, key lookup, one call per token) is wasted.
type fastDecoder struct {
	fields []fastField
	// columnar: the batch's values so far are in the fields' own columns
	// (fastcolumns.go), rows of them, not in the builders.
	columnar bool
	rows     int
	mem      memory.Allocator // of the own columns
	// misses counts the batches in a row whose first value did not fit,
	// skip the batches still to convert without own columns (begin).
	misses, skip int
}

// fastKind is how a column's value is read and appended.
type fastKind uint8

const (
	fastBool fastKind = iota
	fastInt
	fastFloat32
	fastFloat64
	fastDecimal
	fastString
	fastBytes
	fastDate
	fastTimestamp
)

type fastField struct {
	// What decodeRow reads for every value comes first, so that a field's
	// hot part shares few cache lines.
	kind     fastKind
	nullable bool
	// key is `{"name":` for the first column, `,"name":` for the others;
	// k0 and k1 its first sixteen bytes as little-endian words, m0 and m1
	// the masks of the bytes it has (keys of at most 16 bytes).
	k0, k1, m0, m1 uint64
	key            []byte
	// The own columns (fastcolumns.go): validity, values (the bytes of
	// STRING and BYTES), offsets (STRING and BYTES); width is the bytes of
	// a fixed-width value, 0 for BOOLEAN, STRING and BYTES.
	width      int
	vals, offs colBuf
	nullRows   []int32 // the rows holding null, in order
	// lo and hi bound an integer column's values.
	lo, hi int64
	// millisLen is the length of the timestamp layout millisTimestamp
	// reads for this column, 0 when it reads none (precisions 0..2, 7..9).
	millisLen int
	t         types.DataType

	// The last YYYY-MM-DD the column read (as two words), its days, its
	// day of the month and the month's length: records of a batch mostly
	// share their dates (timestamps especially), or at least the month.
	lastDate0          uint64
	lastDate1          uint16
	lastDays           int64
	lastDay, monthDays int
	hasDate            bool

	// The slot: the value read for the current record.
	null bool
	i    int64 // integers, booleans, dates, timestamps, decimals that fit
	f    float64
	v    []byte // strings (a slice of the input) and bytes (of buf)
	buf  []byte

	dataPerRow int // STRING and BYTES bytes per row of the last batch

	b    array.Builder
	bl   *array.BooleanBuilder
	i8   *array.Int8Builder
	i16  *array.Int16Builder
	i32  *array.Int32Builder
	i64  *array.Int64Builder
	f32  *array.Float32Builder
	f64  *array.Float64Builder
	dec  *array.Decimal128Builder
	bin  *array.BinaryBuilder // STRING, CHAR and BYTES
	date *array.Date32Builder
	ts   *array.TimestampBuilder
}

// date10 is parseDate for a 10-byte b, remembering the last date read: the
// same date is its days again, another day of the same month is counted
// from it.
func (f *fastField) date10(b []byte) (int64, error) {
	w0, w1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint16(b[8:10])
	if f.hasDate && w0 == f.lastDate0 { // same "YYYY-MM-"
		if w1 == f.lastDate1 {
			return f.lastDays, nil
		}
		if d, ok := digits2(b[8:10]); ok && d >= 1 && d <= f.monthDays {
			f.lastDays += int64(d - f.lastDay)
			f.lastDate1, f.lastDay = w1, d
			return f.lastDays, nil
		}
	}
	days, err := parseDate(b)
	if err == nil {
		// parseDate checked every digit.
		y, _ := digits2(b[0:2])
		yy, _ := digits2(b[2:4])
		m, _ := digits2(b[5:7])
		d, _ := digits2(b[8:10])
		f.lastDate0, f.lastDate1, f.lastDays, f.hasDate = w0, w1, days, true
		f.lastDay, f.monthDays = d, daysIn(y*100+yy, m)
	}
	return days, err
}

// newFastDecoder returns the fast decoder for the JSON columns fields with
// builders bs, or nil when a column's type is not one it reads (nested
// types, TIME, BINARY(n)) or a name needs escaping in JSON.
func newFastDecoder(fields []types.Field, bs []array.Builder) *fastDecoder {
	d := newFastColumns(fields, bs)
	if d == nil {
		return nil
	}
	for i, col := range fields {
		f := &d.fields[i]
		q := quotedKey(col.Name)
		if q == nil {
			return nil
		}
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		f.key = append([]byte{sep}, q...)
		if len(f.key) <= 16 {
			var w [16]byte
			copy(w[:], f.key)
			f.k0, f.k1 = binary.LittleEndian.Uint64(w[:8]), binary.LittleEndian.Uint64(w[8:])
			f.m0, f.m1 = lowBytes(min(len(f.key), 8)), lowBytes(max(len(f.key)-8, 0))
		}
		if col.Type.Root == types.TimestampNTZ || col.Type.Root == types.TimestampLTZ {
			if p := col.Type.Precision; p >= 3 && p <= 6 {
				f.millisLen = len("2006-01-02T15:04:05.000")
				if col.Type.Root == types.TimestampLTZ {
					f.millisLen++ // the Z
				}
			}
		}
	}
	return d
}

// newFastColumns returns a decoder with own columns (fastcolumns.go) for
// the value columns fields with builders bs, whatever the input format,
// or nil when a column's type has none (nested types, TIME, BINARY(n)).
func newFastColumns(fields []types.Field, bs []array.Builder) *fastDecoder {
	d := &fastDecoder{fields: make([]fastField, len(fields))}
	for i, col := range fields {
		f := &d.fields[i]
		f.t = col.Type
		f.nullable = col.Type.Nullable
		f.b = bs[i]
		switch col.Type.Root {
		case types.Boolean:
			f.kind, f.bl = fastBool, bs[i].(*array.BooleanBuilder)
		case types.TinyInt:
			f.kind, f.i8, f.lo, f.hi, f.width = fastInt, bs[i].(*array.Int8Builder), math.MinInt8, math.MaxInt8, 1
		case types.SmallInt:
			f.kind, f.i16, f.lo, f.hi, f.width = fastInt, bs[i].(*array.Int16Builder), math.MinInt16, math.MaxInt16, 2
		case types.Int:
			f.kind, f.i32, f.lo, f.hi, f.width = fastInt, bs[i].(*array.Int32Builder), math.MinInt32, math.MaxInt32, 4
		case types.BigInt:
			f.kind, f.i64, f.lo, f.hi, f.width = fastInt, bs[i].(*array.Int64Builder), math.MinInt64, math.MaxInt64, 8
		case types.Float:
			f.kind, f.f32, f.width = fastFloat32, bs[i].(*array.Float32Builder), 4
		case types.Double:
			f.kind, f.f64, f.width = fastFloat64, bs[i].(*array.Float64Builder), 8
		case types.Decimal:
			f.kind, f.dec, f.width = fastDecimal, bs[i].(*array.Decimal128Builder), 16
		case types.Char, types.String:
			f.kind, f.bin = fastString, bs[i].(*array.StringBuilder).BinaryBuilder
		case types.Bytes:
			f.kind, f.bin = fastBytes, bs[i].(*array.BinaryBuilder)
		case types.Date:
			f.kind, f.date, f.width = fastDate, bs[i].(*array.Date32Builder), 4
		case types.TimestampNTZ, types.TimestampLTZ:
			f.kind, f.ts, f.width = fastTimestamp, bs[i].(*array.TimestampBuilder), 8
		default:
			return nil
		}
	}
	return d
}

// decode reads data and, when it has the fast shape, appends one value to
// every column and reports true. Otherwise it appends nothing. Values go
// to the own columns while the batch is columnar (begin), else to the
// builders.
func (d *fastDecoder) decode(data []byte) bool {
	if d.columnar {
		return d.decodeRow(data)
	}
	pos := 0
	for i := range d.fields {
		f := &d.fields[i]
		if pos+16 <= len(data) && len(f.key) <= 16 {
			if binary.LittleEndian.Uint64(data[pos:])&f.m0 != f.k0 || binary.LittleEndian.Uint64(data[pos+8:])&f.m1 != f.k1 {
				return false
			}
		} else if !hasAt(data, pos, f.key) {
			return false
		}
		pos += len(f.key)
		if pos >= len(data) {
			return false
		}
		if data[pos] == 'n' {
			if !f.nullable || !hasAt(data, pos, nullLit) {
				return false
			}
			f.null = true
			pos += len(nullLit)
			continue
		}
		f.null = false
		if pos = f.read(data, pos); pos < 0 {
			return false
		}
	}
	if pos != len(data)-1 || data[pos] != '}' {
		return false
	}
	for i := range d.fields {
		d.fields[i].append()
	}
	return true
}

// decodeRow is decode into the own columns: each value is stored at row
// d.rows as soon as it is read, and the row counts only once all have
// been.
func (d *fastDecoder) decodeRow(data []byte) bool {
	r, pos := d.rows, 0
	for i := range d.fields {
		f := &d.fields[i]
		if pos+16 <= len(data) && len(f.key) <= 16 {
			if binary.LittleEndian.Uint64(data[pos:])&f.m0 != f.k0 || binary.LittleEndian.Uint64(data[pos+8:])&f.m1 != f.k1 {
				return false
			}
		} else if !hasAt(data, pos, f.key) {
			return false
		}
		pos += len(f.key)
		if pos >= len(data) {
			return false
		}
		if data[pos] == 'n' {
			if !f.nullable || !hasAt(data, pos, nullLit) {
				return false
			}
			f.storeNull(r)
			pos += len(nullLit)
			continue
		}
		if pos = f.readInto(data, pos, r); pos < 0 {
			return false
		}
	}
	if pos != len(data)-1 || data[pos] != '}' {
		return false
	}
	d.rows++
	return true
}

var (
	nullLit  = []byte("null")
	trueLit  = []byte("true")
	falseLit = []byte("false")
)

// lowBytes is a mask of the n (0..8) low bytes of a word.
func lowBytes(n int) uint64 {
	if n == 8 {
		return ^uint64(0)
	}
	return 1<<(8*n) - 1
}

// hasAt reports whether data holds want at pos, comparing eight bytes at a
// time (keys are short).
func hasAt(data []byte, pos int, want []byte) bool {
	if len(data)-pos < len(want) {
		return false
	}
	d := data[pos : pos+len(want)]
	for len(want) >= 8 {
		if binary.LittleEndian.Uint64(d) != binary.LittleEndian.Uint64(want) {
			return false
		}
		d, want = d[8:], want[8:]
	}
	for i, c := range want {
		if d[i] != c {
			return false
		}
	}
	return true
}

// read reads the value at pos (not null) into the slot and returns the
// position after it, or -1 when the value is not of the fast shape.
func (f *fastField) read(data []byte, pos int) int {
	switch f.kind {
	case fastBool:
		switch {
		case hasAt(data, pos, trueLit):
			f.i = 1
			return pos + len(trueLit)
		case hasAt(data, pos, falseLit):
			f.i = 0
			return pos + len(falseLit)
		}
		return -1
	case fastInt:
		v, end := readInt(data, pos)
		if end < 0 || v < f.lo || v > f.hi {
			return -1
		}
		f.i = v
		return end
	case fastFloat64:
		v, end := readFloat64(data, pos)
		if end < 0 {
			return -1
		}
		f.f = v
		return end
	case fastFloat32:
		end := numberEnd(data, pos)
		if end < 0 {
			return -1
		}
		var err error
		if f.f, err = strconv.ParseFloat(bstr(data[pos:end]), 32); err != nil {
			return -1
		}
		return end
	case fastDecimal:
		return f.readDecimal(data, pos)
	case fastString:
		v, end := readString(data, pos)
		if end < 0 || (f.t.Root == types.Char && len(v) > f.t.Length) {
			return -1
		}
		f.v = v
		return end
	case fastBytes:
		if v, end := readBase64(data, pos, f.buf[:0]); end >= 0 {
			f.buf, f.v = v, v
			return end
		}
		v, end := readString(data, pos)
		if end < 0 {
			return -1
		}
		enc := base64.StdEncoding
		if len(v)%4 != 0 {
			enc = base64.RawStdEncoding
		}
		if n := enc.DecodedLen(len(v)); cap(f.buf) < n {
			f.buf = make([]byte, n)
		}
		n, err := enc.Decode(f.buf[:cap(f.buf)], v)
		if err != nil {
			return -1
		}
		f.v = f.buf[:n]
		return end
	case fastDate:
		// parseDate checks every byte of a 10-byte string, so none is a
		// quote, backslash or control character: no need to scan it.
		if end := pos + 12; end <= len(data) && data[pos] == '"' && data[end-1] == '"' {
			days, err := f.date10(data[pos+1 : end-1])
			if err != nil {
				return -1
			}
			f.i = days
			return end
		}
		v, end := readString(data, pos)
		if end < 0 {
			return -1
		}
		days, err := parseDate(v)
		if err != nil {
			return -1
		}
		f.i = days
		return end
	case fastTimestamp:
		return f.readTimestamp(data, pos)
	}
	return -1
}

// base64Std maps the standard base64 alphabet to its values, every other
// byte to 0xff.
var base64Std = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" {
		t[c] = byte(i)
	}
	return t
}()

// readBase64 decodes a string of whole base64 quanta, the last one
// possibly padded (xx== or xxx=), into dst in the same pass that finds its
// end, and returns the bytes and the position after the closing quote. Any
// other string, -1: readString and encoding/base64 decide about it (the
// only alphabet characters pass, so there is nothing to unescape here).
func readBase64(data []byte, pos int, dst []byte) ([]byte, int) {
	if pos >= len(data) || data[pos] != '"' {
		return nil, -1
	}
	pos++
	for pos+4 <= len(data) {
		a, b, c, d := base64Std[data[pos]], base64Std[data[pos+1]], base64Std[data[pos+2]], base64Std[data[pos+3]]
		if a|b|c|d == 0xff {
			break
		}
		dst = append(dst, a<<2|b>>4, b<<4|c>>2, c<<6|d)
		pos += 4
	}
	if pos < len(data) && data[pos] == '"' {
		return dst, pos + 1
	}
	// A padded last quantum, then the closing quote.
	if pos+5 > len(data) || data[pos+4] != '"' || data[pos+3] != '=' {
		return nil, -1
	}
	a, b, c := base64Std[data[pos]], base64Std[data[pos+1]], base64Std[data[pos+2]]
	switch {
	case a|b == 0xff:
		return nil, -1
	case data[pos+2] == '=':
		dst = append(dst, a<<2|b>>4)
	case c != 0xff:
		dst = append(dst, a<<2|b>>4, b<<4|c>>2)
	default:
		return nil, -1
	}
	return dst, pos + 5
}

// readInt reads an unquoted JSON integer of at most 18 digits, or one in
// quotes as producers write 64-bit integers, and returns it and the position
// after it (-1 for anything else).
func readInt(data []byte, pos int) (int64, int) {
	quoted := pos < len(data) && data[pos] == '"'
	if quoted {
		pos++
	}
	neg := pos < len(data) && data[pos] == '-'
	if neg {
		pos++
	}
	start := pos
	var u int64
	for pos < len(data) && data[pos] >= '0' && data[pos] <= '9' {
		u = u*10 + int64(data[pos]-'0')
		pos++
	}
	n := pos - start
	// No leading zeros (JSON's grammar), no more digits than an int64
	// always holds; a fraction or exponent after them is left to the
	// generic path by the caller's next check.
	if n == 0 || n > 18 || (n > 1 && data[start] == '0') {
		return 0, -1
	}
	if quoted {
		if pos >= len(data) || data[pos] != '"' {
			return 0, -1
		}
		pos++
	}
	if neg {
		u = -u
	}
	return u, pos
}

// readFloat64 reads a JSON number without an exponent whose digits, as an
// integer, are exact in a float64 and at most 22 of them after the point:
// the value is then one correctly rounded division, as in parseFloat64.
// Other numbers take parseFloat64 itself.
func readFloat64(data []byte, pos int) (float64, int) {
	start := pos
	neg := pos < len(data) && data[pos] == '-'
	if neg {
		pos++
	}
	ds := pos
	var m uint64
	for ; pos < len(data) && data[pos] >= '0' && data[pos] <= '9'; pos++ {
		m = m*10 + uint64(data[pos]-'0')
	}
	digits := pos - ds
	if digits == 0 || (digits > 1 && data[ds] == '0') {
		return 0, -1
	}
	frac := 0
	if pos < len(data) && data[pos] == '.' {
		pos++
		fs := pos
		for ; pos < len(data) && data[pos] >= '0' && data[pos] <= '9'; pos++ {
			m = m*10 + uint64(data[pos]-'0')
		}
		if frac = pos - fs; frac == 0 {
			return 0, -1
		}
		digits += frac
	}
	if (pos < len(data) && (data[pos] == 'e' || data[pos] == 'E')) || digits > 19 || m > 1<<53 || frac > 22 {
		end := numberEnd(data, start)
		if end < 0 {
			return 0, -1
		}
		v, err := parseFloat64(data[start:end])
		if err != nil {
			return 0, -1
		}
		return v, end
	}
	v := float64(m) / exactPow10[frac]
	if neg {
		v = -v
	}
	return v, pos
}

// numberEnd returns the position after the JSON number at pos, or -1.
func numberEnd(data []byte, pos int) int {
	s := scanner{data: data, pos: pos}
	if pos >= len(data) || (data[pos] != '-' && (data[pos] < '0' || data[pos] > '9')) {
		return -1
	}
	if _, err := s.number(); err != nil {
		return -1
	}
	return s.pos
}

// readString reads a string without escapes or control characters and
// returns its bytes (a slice of data, valid UTF-8) and the position after
// its closing quote, or -1.
func readString(data []byte, pos int) ([]byte, int) {
	if pos >= len(data) || data[pos] != '"' {
		return nil, -1
	}
	pos++
	start := pos
	ascii := true
	for {
		for pos+8 <= len(data) {
			i := firstSpecial8(binary.LittleEndian.Uint64(data[pos:]))
			pos += i
			if i < 8 {
				break
			}
		}
		if pos >= len(data) {
			return nil, -1
		}
		switch c := data[pos]; {
		case c == '"':
			v := data[start:pos]
			if !ascii && !utf8.Valid(v) {
				return nil, -1
			}
			return v, pos + 1
		case c == '\\' || c < 0x20: // an escape or a control character
			return nil, -1
		case c >= 0x80:
			ascii = false
		}
		pos++
	}
}

// readDecimal reads a decimal number or string without exponent, sign '+'
// or leading zeros whose unscaled value at the column's scale has at most
// 18 digits and fits the precision.
func (f *fastField) readDecimal(data []byte, pos int) int {
	quoted := data[pos] == '"'
	if quoted {
		pos++
	}
	neg := pos < len(data) && data[pos] == '-'
	if neg {
		pos++
	}
	var u int64
	digits, frac := 0, 0 // significant digits (no leading zeros), digits after '.'
	start := pos
	for ; pos < len(data) && data[pos] >= '0' && data[pos] <= '9'; pos++ {
		if u != 0 || data[pos] != '0' {
			digits++
		}
		u = u*10 + int64(data[pos]-'0')
		if digits > 18 {
			return -1
		}
	}
	if pos == start || (pos-start > 1 && data[start] == '0') {
		return -1
	}
	if pos < len(data) && data[pos] == '.' {
		pos++
		fs := pos
		for ; pos < len(data) && data[pos] >= '0' && data[pos] <= '9'; pos++ {
			if u != 0 || data[pos] != '0' {
				digits++
			}
			u = u*10 + int64(data[pos]-'0')
			if digits > 18 {
				return -1
			}
		}
		if frac = pos - fs; frac == 0 {
			return -1
		}
	}
	if pos < len(data) && (data[pos] == 'e' || data[pos] == 'E') {
		return -1
	}
	if quoted {
		if pos >= len(data) || data[pos] != '"' {
			return -1
		}
		pos++
	}
	shift := f.t.Scale - frac
	if shift < 0 || (u != 0 && (digits+shift > f.t.Precision || digits+shift > 18)) {
		return -1
	}
	u *= pow10i(shift)
	if neg {
		u = -u
	}
	f.i = u
	return pos
}

// millisTimestamp reads the layout producers write most,
// YYYY-MM-DDTHH:MM:SS.fff with a Z for TIMESTAMP_LTZ and without for
// TIMESTAMP, into epoch milliseconds, for precisions 3 to 6 (whose units
// hold any such value). false leaves it to parseTimestamp.
func (f *fastField) millisTimestamp(v []byte) (int64, bool) {
	ltz := f.t.Root == types.TimestampLTZ
	if f.millisLen == 0 || len(v) != f.millisLen || v[10] != 'T' || v[13] != ':' || v[16] != ':' || v[19] != '.' || (ltz && v[23] != 'Z') {
		return 0, false
	}
	days, err := f.date10(v[:10])
	h, ok1 := digits2(v[11:13])
	m, ok2 := digits2(v[14:16])
	sec, ok3 := digits2(v[17:19])
	ms1, ok4 := digits2(v[20:22])
	if err != nil || !(ok1 && ok2 && ok3 && ok4) || v[22] < '0' || v[22] > '9' || h > 23 || m > 59 || sec > 59 {
		return 0, false
	}
	ms := ms1*10 + int(v[22]-'0')
	return (days*86400+int64(h*3600+m*60+sec))*1000 + int64(ms), true
}

// readTimestamp reads an ISO-8601 string (zoned for TIMESTAMP_LTZ, not for
// TIMESTAMP) or epoch milliseconds, as timestampWriter accepts them.
func (f *fastField) readTimestamp(data []byte, pos int) int {
	var sec, nanos int64
	var end int
	if data[pos] == '"' {
		// millisTimestamp checks every byte of its layout, so when it takes
		// the bytes up to the quote that ends it, none needs scanning.
		if n := f.millisLen; n > 0 && pos+n+2 <= len(data) && data[pos+n+1] == '"' {
			if ms, ok := f.millisTimestamp(data[pos+1 : pos+n+1]); ok {
				f.i = ms * (unitsPerSecond(f.t.Precision) / 1000)
				return pos + n + 2
			}
		}
		var v []byte
		if v, end = readString(data, pos); end < 0 {
			return -1
		}
		var zoned bool
		var err error
		if sec, nanos, zoned, err = parseTimestamp(v); err != nil || zoned != (f.t.Root == types.TimestampLTZ) {
			return -1
		}
	} else {
		var ms int64
		if ms, end = readInt(data, pos); end < 0 {
			return -1
		}
		sec, nanos = millisToSecNanos(ms)
	}
	v, err := toUnit(sec, nanos, f.t.Precision)
	if err != nil || (sec < 0 && nanos%1e6 != 0) {
		return -1
	}
	f.i = v
	return end
}

// append adds the slot's value to the column. ConvertRecord reserved a
// row in every builder for each record of the batch, so fixed-width values
// skip the capacity check.
func (f *fastField) append() {
	if f.null {
		if f.bin != nil {
			f.bin.AppendNull() // also appends an offset
		} else {
			f.b.UnsafeAppendBoolToBitmap(false)
		}
		return
	}
	switch f.kind {
	case fastBool:
		f.bl.UnsafeAppend(f.i != 0)
	case fastInt:
		switch {
		case f.i64 != nil:
			f.i64.UnsafeAppend(f.i)
		case f.i32 != nil:
			f.i32.UnsafeAppend(int32(f.i))
		case f.i16 != nil:
			f.i16.UnsafeAppend(int16(f.i))
		default:
			f.i8.UnsafeAppend(int8(f.i))
		}
	case fastFloat32:
		f.f32.UnsafeAppend(float32(f.f))
	case fastFloat64:
		f.f64.UnsafeAppend(f.f)
	case fastDecimal:
		f.dec.UnsafeAppend(decimal128.FromI64(f.i))
	case fastString, fastBytes:
		if f.bin.DataCap()-f.bin.DataLen() >= len(f.v) {
			f.bin.UnsafeAppend(f.v) // offsets reserved, bytes fit
		} else {
			f.bin.Append(f.v)
		}
	case fastDate:
		f.date.UnsafeAppend(arrow.Date32(f.i))
	case fastTimestamp:
		f.ts.UnsafeAppend(arrow.Timestamp(f.i))
	}
}
