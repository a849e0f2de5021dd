package convert

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// bstr views b as a string without copying, for parsers that do not keep
// their argument.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

var (
	errNotNumber             = errors.New("is not a number")
	errNotInteger            = errors.New("is not an integer")
	errRange                 = errors.New("is out of range")
	errTooManyDigits         = errors.New("has too many digits")
	errTooManyFractionDigits = errors.New("has more fractional digits than the scale allows")
	errNotJSONNumber         = errors.New("is not a number as JSON writes one (no '+', no leading zeros, no spaces)")
)

// isJSONNumber reports whether lit is exactly one JSON number. A quoted
// integer must be written as the number itself would be (only the quotes
// added), so "+1" or "007" is refused as 1 or 007 unquoted is.
func isJSONNumber(lit []byte) bool {
	s := scanner{data: lit}
	if c := s.peek(); s.pos != 0 || (c != '-' && (c < '0' || c > '9')) {
		return false
	}
	n, err := s.number()
	return err == nil && len(n) == len(lit)
}

// exactPow10 are the powers of ten a float64 holds exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat64 parses a JSON number literal (the scanner checked its
// grammar). Most literals have few digits and a small exponent: then the
// digits as an integer m <= 2^53 and 10^|e| <= 10^22 are both exact float64s,
// and one multiplication or division rounds m*10^e correctly (Clinger's fast
// path, the first thing strconv tries too, after a slower generic scan). The
// rest goes to strconv.ParseFloat.
func parseFloat64(lit []byte) (float64, error) {
	i, neg := 0, false
	if len(lit) > 0 && lit[0] == '-' {
		i, neg = 1, true
	}
	var m uint64
	digits, exp := 0, 0
	for ; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
		m = m*10 + uint64(lit[i]-'0')
		digits++
	}
	if i < len(lit) && lit[i] == '.' {
		for i++; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
			m = m*10 + uint64(lit[i]-'0')
			digits++
			exp--
		}
	}
	if i < len(lit) {
		// An exponent ('e' or 'E'; the grammar allows nothing else here).
		i++
		eneg := false
		if lit[i] == '+' || lit[i] == '-' {
			eneg = lit[i] == '-'
			i++
		}
		e := 0
		for ; i < len(lit) && e < 1000; i++ {
			e = e*10 + int(lit[i]-'0')
		}
		if i < len(lit) {
			digits = 100 // a huge exponent: not for the fast path
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	// 19 digits never overflow m; m <= 2^53 is exact.
	if digits <= 19 && m <= 1<<53 && exp >= -22 && exp <= 22 {
		f := float64(m)
		if exp < 0 {
			f /= exactPow10[-exp]
		} else {
			f *= exactPow10[exp]
		}
		if neg {
			f = -f
		}
		return f, nil
	}
	return strconv.ParseFloat(bstr(lit), 64)
}

// parseInt parses an integral number literal into an int64 within
// [lo, hi]. Plain digit strings take the fast path; forms like 1.0 or 1e3
// are accepted when their value is integral, 1.5 is not.
func parseInt(lit []byte, lo, hi int64) (int64, error) {
	neg := len(lit) > 0 && lit[0] == '-'
	d := lit
	if neg {
		d = d[1:]
	}
	var u uint64
	simple := len(d) > 0 && len(d) <= 19 && (d[0] != '0' || len(d) == 1)
	if simple {
		for _, c := range d {
			if c < '0' || c > '9' {
				simple = false
				break
			}
			u = u*10 + uint64(c-'0')
		}
	}
	if !simple {
		var x decimalDigits
		if err := x.parse(lit); err != nil {
			return 0, err
		}
		if err := x.rescale(0, 20); err != nil {
			if errors.Is(err, errTooManyFractionDigits) {
				return 0, errNotInteger
			}
			return 0, err
		}
		var ok bool
		if u, ok = x.uint64(); !ok {
			return 0, errRange
		}
		neg = x.neg
	}
	var v int64
	switch {
	case !neg && u <= math.MaxInt64:
		v = int64(u)
	case neg && u <= 1<<63:
		v = int64(-u) // 1<<63 negates to math.MinInt64, as wanted
	default:
		return 0, errRange
	}
	if v < lo || v > hi {
		return 0, errRange
	}
	return v, nil
}

// maxSignificant bounds the digits kept while parsing; no DECIMAL(38) or
// 64-bit integer needs more, even written with trailing zeros.
const maxSignificant = 80

// decimalDigits is an exact decimal: value = digits × 10^exp, where digits
// has no leading zeros (and is empty for zero).
type decimalDigits struct {
	neg    bool
	digits []byte
	exp    int
	buf    [maxSignificant]byte
}

// parse reads a number literal: optional sign, digits, optional fraction
// and exponent. A leading '+' or zeros are allowed because decimal strings
// (not JSON numbers, which the scanner checks) may carry them.
func (x *decimalDigits) parse(lit []byte) error {
	x.neg = false
	x.digits = x.buf[:0]
	x.exp = 0
	i := 0
	if i < len(lit) && (lit[i] == '-' || lit[i] == '+') {
		x.neg = lit[i] == '-'
		i++
	}
	intDigits := 0
	for ; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
		intDigits++
		if err := x.push(lit[i]); err != nil {
			return err
		}
	}
	fracDigits := 0
	if i < len(lit) && lit[i] == '.' {
		i++
		for ; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
			fracDigits++
			if err := x.push(lit[i]); err != nil {
				return err
			}
			x.exp--
		}
		if fracDigits == 0 {
			return errNotNumber
		}
	}
	if intDigits+fracDigits == 0 {
		return errNotNumber
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := false
		if i < len(lit) && (lit[i] == '-' || lit[i] == '+') {
			eneg = lit[i] == '-'
			i++
		}
		j := i
		e := 0
		for ; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
			if e < 1_000_000 { // far past any representable exponent
				e = e*10 + int(lit[i]-'0')
			}
		}
		if i == j {
			return errNotNumber
		}
		if eneg {
			e = -e
		}
		x.exp += e
	}
	if i != len(lit) {
		return errNotNumber
	}
	return nil
}

func (x *decimalDigits) push(c byte) error {
	if len(x.digits) == 0 && c == '0' {
		return nil
	}
	if len(x.digits) == maxSignificant {
		return errTooManyDigits
	}
	x.digits = append(x.digits, c)
	return nil
}

// rescale turns the value into an unscaled integer for the given scale
// (value × 10^scale) with at most maxDigits digits. Dropping non-zero
// fractional digits is an error: Ferry never rounds silently.
func (x *decimalDigits) rescale(scale, maxDigits int) error {
	if len(x.digits) == 0 {
		x.exp = 0
		return nil
	}
	shift := x.exp + scale
	if shift < 0 {
		drop := -shift
		if drop > len(x.digits) {
			return errTooManyFractionDigits
		}
		for _, c := range x.digits[len(x.digits)-drop:] {
			if c != '0' {
				return errTooManyFractionDigits
			}
		}
		x.digits = x.digits[:len(x.digits)-drop]
	} else if shift > 0 {
		if len(x.digits)+shift > maxDigits {
			return errRange
		}
		for ; shift > 0; shift-- {
			x.digits = append(x.digits, '0')
		}
	}
	x.exp = -scale
	if len(x.digits) > maxDigits {
		return errRange
	}
	return nil
}

func (x *decimalDigits) uint64() (uint64, bool) {
	var u uint64
	for _, c := range x.digits {
		hi, lo := bits.Mul64(u, 10)
		lo, carry := bits.Add64(lo, uint64(c-'0'), 0)
		if hi != 0 || carry != 0 {
			return 0, false
		}
		u = lo
	}
	return u, true
}

var pow10u64 = func() (p [19]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

// num returns the digits as a Decimal128 unscaled value (at most 38 digits).
func (x *decimalDigits) num() decimal128.Num {
	d := x.digits
	var n decimal128.Num
	for len(d) > 0 {
		k := min(len(d), 18)
		var chunk uint64
		for _, c := range d[:k] {
			chunk = chunk*10 + uint64(c-'0')
		}
		n = n.Mul(decimal128.FromU64(pow10u64[k])).Add(decimal128.FromU64(chunk))
		d = d[k:]
	}
	if x.neg {
		n = n.Negate()
	}
	return n
}

// parseDecimal parses a decimal literal into the unscaled Decimal128 for
// DECIMAL(precision, scale).
func parseDecimal(x *decimalDigits, lit []byte, precision, scale int) (decimal128.Num, error) {
	if err := x.parse(lit); err != nil {
		return decimal128.Num{}, err
	}
	if err := x.rescale(scale, precision); err != nil {
		return decimal128.Num{}, err
	}
	return x.num(), nil
}

// --- dates and times -------------------------------------------------------

var errDateFormat = errors.New("is not a date: want YYYY-MM-DD")

func digits2(b []byte) (int, bool) {
	if b[0] < '0' || b[0] > '9' || b[1] < '0' || b[1] > '9' {
		return 0, false
	}
	return int(b[0]-'0')*10 + int(b[1]-'0'), true
}

// parseDate reads YYYY-MM-DD (years 0000..9999) into days since 1970-01-01.
func parseDate(b []byte) (int64, error) {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return 0, errDateFormat
	}
	y1, ok1 := digits2(b[0:2])
	y2, ok2 := digits2(b[2:4])
	m, ok3 := digits2(b[5:7])
	d, ok4 := digits2(b[8:10])
	if !(ok1 && ok2 && ok3 && ok4) {
		return 0, errDateFormat
	}
	y := y1*100 + y2
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, errors.New("is not a valid calendar date")
	}
	return daysFromCivil(y, m, d), nil
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil counts days from 1970-01-01 to y-m-d in the proleptic
// Gregorian calendar (H. Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

var errTimeFormat = errors.New("is not a time: want HH:MM:SS[.fffffffff]")

// parseTime reads HH:MM:SS with up to nine fractional digits into
// nanoseconds of the day.
func parseTime(b []byte) (int64, error) {
	if len(b) < 8 || b[2] != ':' || b[5] != ':' {
		return 0, errTimeFormat
	}
	h, ok1 := digits2(b[0:2])
	m, ok2 := digits2(b[3:5])
	s, ok3 := digits2(b[6:8])
	if !(ok1 && ok2 && ok3) {
		return 0, errTimeFormat
	}
	if h > 23 || m > 59 || s > 59 {
		return 0, errors.New("is not a valid time of day")
	}
	nanos, rest, err := parseFraction(b[8:])
	if err != nil {
		return 0, err
	}
	if len(rest) != 0 {
		return 0, errTimeFormat
	}
	return (int64(h)*3600+int64(m)*60+int64(s))*1e9 + nanos, nil
}

// parseFraction reads an optional ".d{1,9}" into nanoseconds.
func parseFraction(b []byte) (nanos int64, rest []byte, err error) {
	if len(b) == 0 || b[0] != '.' {
		return 0, b, nil
	}
	i := 1
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if i > 9 {
			return 0, nil, errors.New("has more than nine fractional second digits")
		}
		nanos = nanos*10 + int64(b[i]-'0')
	}
	if i == 1 {
		return 0, nil, errTimeFormat
	}
	for k := i; k <= 9; k++ {
		nanos *= 10
	}
	return nanos, b[i:], nil
}

var errTimestampFormat = errors.New("is not a timestamp: want YYYY-MM-DDTHH:MM:SS[.fffffffff][Z|±HH:MM]")

// parseTimestamp reads an ISO-8601 date-time. It returns seconds and
// nanoseconds since the epoch as if the wall clock were UTC, shifted by the
// zone offset when one is present (hasZone).
func parseTimestamp(b []byte) (sec int64, nanos int64, hasZone bool, err error) {
	if len(b) < 19 || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') {
		return 0, 0, false, errTimestampFormat
	}
	days, err := parseDate(b[:10])
	if err != nil {
		return 0, 0, false, err
	}
	rest := b[11:]
	if len(rest) < 8 || rest[2] != ':' || rest[5] != ':' {
		return 0, 0, false, errTimestampFormat
	}
	end := 8
	if len(rest) > 8 && rest[8] == '.' {
		end = 9
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
	}
	tod, err := parseTime(rest[:end])
	if err != nil {
		return 0, 0, false, err
	}
	sec = days*86400 + tod/1e9
	nanos = tod % 1e9
	zone := rest[end:]
	switch {
	case len(zone) == 0:
		return sec, nanos, false, nil
	case len(zone) == 1 && (zone[0] == 'Z' || zone[0] == 'z'):
		return sec, nanos, true, nil
	case zone[0] == '+' || zone[0] == '-':
		var zh, zm int
		var ok bool
		switch len(zone) {
		case 3: // ±HH
			zh, ok = digits2(zone[1:3])
		case 5: // ±HHMM
			var ok2 bool
			zh, ok = digits2(zone[1:3])
			zm, ok2 = digits2(zone[3:5])
			ok = ok && ok2
		case 6: // ±HH:MM
			var ok2 bool
			zh, ok = digits2(zone[1:3])
			zm, ok2 = digits2(zone[4:6])
			ok = ok && ok2 && zone[3] == ':'
		}
		if !ok || zh > 18 || zm > 59 {
			return 0, 0, false, errTimestampFormat
		}
		off := int64(zh*3600 + zm*60)
		if zone[0] == '+' {
			off = -off
		}
		return sec + off, nanos, true, nil
	}
	return 0, 0, false, errTimestampFormat
}

// unitsPerSecond of the Arrow unit Fluss uses for a TIME/TIMESTAMP precision.
func unitsPerSecond(precision int) int64 {
	switch {
	case precision == 0:
		return 1
	case precision <= 3:
		return 1e3
	case precision <= 6:
		return 1e6
	}
	return 1e9
}

var errPrecision = errors.New("has more fractional second digits than the column's precision")

// toUnit converts seconds and nanoseconds into the unit for precision,
// refusing digits beyond the precision and values the unit cannot hold.
func toUnit(sec, nanos int64, precision int) (int64, error) {
	if nanos%pow10i(9-precision) != 0 {
		return 0, errPrecision
	}
	ups := unitsPerSecond(precision)
	hi, lo := bits.Mul64(uint64(abs64(sec)), uint64(ups))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, errRange
	}
	v := int64(lo)
	if sec < 0 {
		v = -v
	}
	frac := nanos / (1e9 / ups)
	if frac > 0 && v > math.MaxInt64-frac {
		return 0, errRange
	}
	return v + frac, nil
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func pow10i(n int) int64 {
	p := int64(1)
	for ; n > 0; n-- {
		p *= 10
	}
	return p
}

// millisToSecNanos splits epoch (or time-of-day) milliseconds.
func millisToSecNanos(ms int64) (int64, int64) {
	sec := ms / 1000
	rem := ms % 1000
	if rem < 0 {
		sec--
		rem += 1000
	}
	return sec, rem * 1e6
}
