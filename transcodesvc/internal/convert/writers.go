package convert

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// fieldError is a conversion error with the path to the failing value. The
// path is built while the error unwinds, innermost segment first, so the
// success path never formats anything.
type fieldError struct {
	rev []string
	msg string
}

func (e *fieldError) Error() string {
	if len(e.rev) == 0 {
		return e.msg
	}
	var b strings.Builder
	b.WriteString("field ")
	for i := len(e.rev) - 1; i >= 0; i-- {
		seg := e.rev[i]
		if i < len(e.rev)-1 && seg[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	b.WriteString(": ")
	b.WriteString(e.msg)
	return b.String()
}

// at adds a path segment ("name" or "[3]") to err on its way up.
func at(err error, seg string) error {
	var fe *fieldError
	if !errors.As(err, &fe) {
		fe = &fieldError{msg: err.Error()}
	}
	fe.rev = append(fe.rev, seg)
	return fe
}

// valueErr describes a value of the right JSON kind that the type refuses.
func valueErr(lit []byte, t types.DataType, err error) error {
	shown := string(lit)
	if len(shown) > 64 {
		shown = shown[:61] + "..."
	}
	return &fieldError{msg: fmt.Sprintf("%s %q %v for %s", "value", shown, err, t)}
}

func kindErr(t types.DataType, want string, got byte) error {
	return &fieldError{msg: fmt.Sprintf("expected %s for %s, got %s", want, t, kind(got))}
}

// writer appends values of one Fluss type to one Arrow builder.
type writer interface {
	// value appends the JSON value at the scanner, known not to be null.
	value(s *scanner) error
	// null appends a null.
	null()
	dataType() types.DataType
}

// readValue appends the next JSON value through w, handling null.
func readValue(w writer, s *scanner) error {
	if s.peek() == 'n' {
		if err := s.literal("null"); err != nil {
			return err
		}
		if !w.dataType().Nullable {
			return &fieldError{msg: fmt.Sprintf("is null but the type is %s", w.dataType())}
		}
		w.null()
		return nil
	}
	return w.value(s)
}

// newWriter builds the writer for type t over builder b, which must be the
// builder arrow made for types.ArrowField(t).
func newWriter(t types.DataType, b array.Builder, rejectUnknown bool) writer {
	switch t.Root {
	case types.Boolean:
		return &boolWriter{t: t, b: b.(*array.BooleanBuilder)}
	case types.TinyInt:
		return &intWriter{t: t, b8: b.(*array.Int8Builder), lo: math.MinInt8, hi: math.MaxInt8}
	case types.SmallInt:
		return &intWriter{t: t, b16: b.(*array.Int16Builder), lo: math.MinInt16, hi: math.MaxInt16}
	case types.Int:
		return &intWriter{t: t, b32: b.(*array.Int32Builder), lo: math.MinInt32, hi: math.MaxInt32}
	case types.BigInt:
		return &intWriter{t: t, b64: b.(*array.Int64Builder), lo: math.MinInt64, hi: math.MaxInt64}
	case types.Float:
		return &floatWriter{t: t, b32: b.(*array.Float32Builder)}
	case types.Double:
		return &floatWriter{t: t, b64: b.(*array.Float64Builder)}
	case types.Decimal:
		return &decimalWriter{t: t, b: b.(*array.Decimal128Builder)}
	case types.Char, types.String:
		return &stringWriter{t: t, b: b.(*array.StringBuilder)}
	case types.Bytes:
		return &bytesWriter{t: t, b: b.(*array.BinaryBuilder)}
	case types.Binary:
		return &bytesWriter{t: t, fixed: b.(*array.FixedSizeBinaryBuilder)}
	case types.Date:
		return &dateWriter{t: t, b: b.(*array.Date32Builder)}
	case types.Time:
		w := &timeWriter{t: t}
		if tb, ok := b.(*array.Time32Builder); ok {
			w.b32 = tb
		} else {
			w.b64 = b.(*array.Time64Builder)
		}
		return w
	case types.TimestampNTZ, types.TimestampLTZ:
		return &timestampWriter{t: t, b: b.(*array.TimestampBuilder)}
	case types.Array:
		lb := b.(*array.ListBuilder)
		return &listWriter{t: t, b: lb, elem: newWriter(*t.Element, lb.ValueBuilder(), rejectUnknown)}
	case types.Map:
		mb := b.(*array.MapBuilder)
		return &mapWriter{t: t, b: mb,
			key:  newWriter(*t.Key, mb.KeyBuilder(), rejectUnknown),
			val:  newWriter(*t.Value, mb.ItemBuilder(), rejectUnknown),
			keys: newKeySet(*t.Key, mb.KeyBuilder(), rejectUnknown)}
	case types.Row:
		sb := b.(*array.StructBuilder)
		ws := make([]writer, len(t.Fields))
		for i, f := range t.Fields {
			ws[i] = newWriter(f.Type, sb.FieldBuilder(i), rejectUnknown)
		}
		return &structWriter{t: t, b: sb, obj: newObjectDecoder(t.Fields, ws, rejectUnknown)}
	}
	panic(fmt.Sprintf("convert: no writer for %s", t)) // Compile validated every type
}

type boolWriter struct {
	t types.DataType
	b *array.BooleanBuilder
}

func (w *boolWriter) dataType() types.DataType { return w.t }
func (w *boolWriter) null()                    { w.b.AppendNull() }
func (w *boolWriter) value(s *scanner) error {
	switch s.peek() {
	case 't':
		if err := s.literal("true"); err != nil {
			return err
		}
		w.b.Append(true)
	case 'f':
		if err := s.literal("false"); err != nil {
			return err
		}
		w.b.Append(false)
	default:
		return kindErr(w.t, "true or false", s.peek())
	}
	return nil
}

// intWriter takes JSON numbers with an integral value, and strings holding
// one (JavaScript producers quote 64-bit integers).
type intWriter struct {
	t      types.DataType
	b8     *array.Int8Builder
	b16    *array.Int16Builder
	b32    *array.Int32Builder
	b64    *array.Int64Builder
	lo, hi int64
}

func (w *intWriter) dataType() types.DataType { return w.t }
func (w *intWriter) null() {
	switch {
	case w.b8 != nil:
		w.b8.AppendNull()
	case w.b16 != nil:
		w.b16.AppendNull()
	case w.b32 != nil:
		w.b32.AppendNull()
	default:
		w.b64.AppendNull()
	}
}

func (w *intWriter) value(s *scanner) error {
	var lit []byte
	var err error
	switch c := s.peek(); {
	case c == '"':
		if lit, err = s.str(); err == nil && !isJSONNumber(lit) {
			return valueErr(lit, w.t, errNotJSONNumber)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		lit, err = s.number()
	default:
		return kindErr(w.t, "an integer", c)
	}
	if err != nil {
		return err
	}
	v, err := parseInt(lit, w.lo, w.hi)
	if err != nil {
		return valueErr(lit, w.t, err)
	}
	switch {
	case w.b8 != nil:
		w.b8.Append(int8(v))
	case w.b16 != nil:
		w.b16.Append(int16(v))
	case w.b32 != nil:
		w.b32.Append(int32(v))
	default:
		w.b64.Append(v)
	}
	return nil
}

// floatWriter takes JSON numbers, and the strings "NaN", "Infinity" and
// "-Infinity" that JSON itself cannot express.
type floatWriter struct {
	t   types.DataType
	b32 *array.Float32Builder
	b64 *array.Float64Builder
}

func (w *floatWriter) dataType() types.DataType { return w.t }
func (w *floatWriter) null() {
	if w.b32 != nil {
		w.b32.AppendNull()
	} else {
		w.b64.AppendNull()
	}
}

func (w *floatWriter) value(s *scanner) error {
	var f float64
	switch c := s.peek(); {
	case c == '"':
		lit, err := s.str()
		if err != nil {
			return err
		}
		switch string(lit) {
		case "NaN":
			f = math.NaN()
		case "Infinity":
			f = math.Inf(1)
		case "-Infinity":
			f = math.Inf(-1)
		default:
			return valueErr(lit, w.t, errors.New("is not a number (strings may only be NaN, Infinity, -Infinity)"))
		}
	case c == '-' || (c >= '0' && c <= '9'):
		lit, err := s.number()
		if err != nil {
			return err
		}
		if w.b32 != nil {
			f, err = strconv.ParseFloat(bstr(lit), 32)
		} else {
			f, err = parseFloat64(lit)
		}
		if err != nil {
			return valueErr(lit, w.t, errRange)
		}
	default:
		return kindErr(w.t, "a number", c)
	}
	if w.b32 != nil {
		w.b32.Append(float32(f))
	} else {
		w.b64.Append(f)
	}
	return nil
}

// decimalWriter takes JSON numbers or strings and converts them exactly:
// digits beyond the scale or the precision are an error, never rounded.
type decimalWriter struct {
	t types.DataType
	b *array.Decimal128Builder
	x decimalDigits
}

func (w *decimalWriter) dataType() types.DataType { return w.t }
func (w *decimalWriter) null()                    { w.b.AppendNull() }
func (w *decimalWriter) value(s *scanner) error {
	var lit []byte
	var err error
	switch c := s.peek(); {
	case c == '"':
		lit, err = s.str()
	case c == '-' || (c >= '0' && c <= '9'):
		lit, err = s.number()
	default:
		return kindErr(w.t, "a decimal number or string", c)
	}
	if err != nil {
		return err
	}
	n, err := parseDecimal(&w.x, lit, w.t.Precision, w.t.Scale)
	if err != nil {
		if errors.Is(err, errRange) {
			err = fmt.Errorf("has more than %d integer digits", w.t.Precision-w.t.Scale)
		}
		return valueErr(lit, w.t, err)
	}
	w.b.Append(n)
	return nil
}

// stringWriter takes JSON strings; CHAR(n) also checks the length in
// characters (shorter values are stored as they are, not padded).
type stringWriter struct {
	t types.DataType
	b *array.StringBuilder
}

func (w *stringWriter) dataType() types.DataType { return w.t }
func (w *stringWriter) null()                    { w.b.AppendNull() }
func (w *stringWriter) value(s *scanner) error {
	if c := s.peek(); c != '"' {
		return kindErr(w.t, "a string", c)
	}
	v, err := s.str()
	if err != nil {
		return err
	}
	return w.appendBytes(v)
}

func (w *stringWriter) appendBytes(v []byte) error {
	if w.t.Root == types.Char && len(v) > w.t.Length {
		if n := utf8.RuneCount(v); n > w.t.Length {
			return &fieldError{msg: fmt.Sprintf("string of %d characters is longer than %s", n, w.t)}
		}
	}
	// BinaryBuilder.Append copies from the slice; StringBuilder.Append would
	// first convert to a string and allocate.
	w.b.BinaryBuilder.Append(v)
	return nil
}

// bytesWriter takes base64 strings (standard alphabet, padding optional);
// BINARY(n) needs exactly n bytes.
type bytesWriter struct {
	t     types.DataType
	b     *array.BinaryBuilder
	fixed *array.FixedSizeBinaryBuilder
	buf   []byte
}

func (w *bytesWriter) dataType() types.DataType { return w.t }
func (w *bytesWriter) null() {
	if w.fixed != nil {
		w.fixed.AppendNull()
	} else {
		w.b.AppendNull()
	}
}

func (w *bytesWriter) value(s *scanner) error {
	if c := s.peek(); c != '"' {
		return kindErr(w.t, "a base64 string", c)
	}
	v, err := s.str()
	if err != nil {
		return err
	}
	enc := base64.StdEncoding
	if len(v)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	if cap(w.buf) < enc.DecodedLen(len(v)) {
		w.buf = make([]byte, enc.DecodedLen(len(v)))
	}
	n, err := enc.Decode(w.buf[:cap(w.buf)], v)
	if err != nil {
		return valueErr(v, w.t, errors.New("is not valid base64"))
	}
	if w.fixed != nil {
		if n != w.t.Length {
			return &fieldError{msg: fmt.Sprintf("%d bytes do not fit %s, which needs exactly %d", n, w.t, w.t.Length)}
		}
		w.fixed.Append(w.buf[:n])
	} else {
		w.b.Append(w.buf[:n])
	}
	return nil
}

// dateWriter takes "YYYY-MM-DD" or a number of days since 1970-01-01.
type dateWriter struct {
	t types.DataType
	b *array.Date32Builder
}

func (w *dateWriter) dataType() types.DataType { return w.t }
func (w *dateWriter) null()                    { w.b.AppendNull() }
func (w *dateWriter) value(s *scanner) error {
	var days int64
	switch c := s.peek(); {
	case c == '"':
		lit, err := s.str()
		if err != nil {
			return err
		}
		if days, err = parseDate(lit); err != nil {
			return valueErr(lit, w.t, err)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		lit, err := s.number()
		if err != nil {
			return err
		}
		if days, err = parseInt(lit, math.MinInt32, math.MaxInt32); err != nil {
			return valueErr(lit, w.t, fmt.Errorf("%w as days since 1970-01-01", err))
		}
	default:
		return kindErr(w.t, "a date string or days since the epoch", c)
	}
	w.b.Append(arrow.Date32(days))
	return nil
}

// timeWriter takes "HH:MM:SS[.f]" or milliseconds of the day.
type timeWriter struct {
	t   types.DataType
	b32 *array.Time32Builder
	b64 *array.Time64Builder
}

func (w *timeWriter) dataType() types.DataType { return w.t }
func (w *timeWriter) null() {
	if w.b32 != nil {
		w.b32.AppendNull()
	} else {
		w.b64.AppendNull()
	}
}

func (w *timeWriter) value(s *scanner) error {
	var nanos int64
	var lit []byte
	var err error
	switch c := s.peek(); {
	case c == '"':
		if lit, err = s.str(); err != nil {
			return err
		}
		if nanos, err = parseTime(lit); err != nil {
			return valueErr(lit, w.t, err)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if lit, err = s.number(); err != nil {
			return err
		}
		ms, err := parseInt(lit, 0, 86_399_999)
		if err != nil {
			return valueErr(lit, w.t, fmt.Errorf("%w as milliseconds of the day", err))
		}
		nanos = ms * 1e6
	default:
		return kindErr(w.t, "a time string or milliseconds of the day", c)
	}
	v, err := toUnit(nanos/1e9, nanos%1e9, w.t.Precision)
	if err != nil {
		return valueErr(lit, w.t, err)
	}
	if w.b32 != nil {
		w.b32.Append(arrow.Time32(v))
	} else {
		w.b64.Append(arrow.Time64(v))
	}
	return nil
}

// timestampWriter takes ISO-8601 strings or epoch milliseconds. TIMESTAMP
// (NTZ) strings must not carry a zone; TIMESTAMP_LTZ strings must.
type timestampWriter struct {
	t types.DataType
	b *array.TimestampBuilder
}

func (w *timestampWriter) dataType() types.DataType { return w.t }
func (w *timestampWriter) null()                    { w.b.AppendNull() }
func (w *timestampWriter) value(s *scanner) error {
	var sec, nanos int64
	var lit []byte
	var err error
	switch c := s.peek(); {
	case c == '"':
		if lit, err = s.str(); err != nil {
			return err
		}
		var zoned bool
		if sec, nanos, zoned, err = parseTimestamp(lit); err != nil {
			return valueErr(lit, w.t, err)
		}
		if w.t.Root == types.TimestampLTZ && !zoned {
			return valueErr(lit, w.t, errors.New("has no zone offset (Z or ±HH:MM), which an instant needs"))
		}
		if w.t.Root == types.TimestampNTZ && zoned {
			return valueErr(lit, w.t, errors.New("has a zone offset, but a TIMESTAMP without time zone takes local date-times only"))
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if lit, err = s.number(); err != nil {
			return err
		}
		ms, err := parseInt(lit, math.MinInt64, math.MaxInt64)
		if err != nil {
			return valueErr(lit, w.t, fmt.Errorf("%w as epoch milliseconds", err))
		}
		sec, nanos = millisToSecNanos(ms)
	default:
		return kindErr(w.t, "a timestamp string or epoch milliseconds", c)
	}
	v, err := toUnit(sec, nanos, w.t.Precision)
	if err != nil {
		return valueErr(lit, w.t, err)
	}
	if sec < 0 && nanos%1e6 != 0 {
		// Fluss 0.9 splits micro/nanosecond values into milliseconds and a
		// remainder with Java's truncating % (ArrowTimestamp*ColumnVector),
		// so a negative remainder makes every reader of the bucket fail.
		// Refuse the one record rather than write a batch nobody can read.
		return valueErr(lit, w.t, errors.New("is before 1970 with sub-millisecond digits, which Fluss 0.9 cannot read back"))
	}
	w.b.Append(arrow.Timestamp(v))
	return nil
}

type listWriter struct {
	t    types.DataType
	b    *array.ListBuilder
	elem writer
}

func (w *listWriter) dataType() types.DataType { return w.t }
func (w *listWriter) null()                    { w.b.AppendNull() }
func (w *listWriter) value(s *scanner) error {
	if c := s.peek(); c != '[' {
		return kindErr(w.t, "an array", c)
	}
	s.pos++
	w.b.Append(true)
	for i := 0; ; i++ {
		more, err := s.arrayNext(i == 0)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		if err := readValue(w.elem, s); err != nil {
			return at(err, "["+strconv.Itoa(i)+"]")
		}
	}
}

// mapWriter takes a JSON object when the key type is STRING or CHAR, and,
// for any key type, an array of [key, value] pairs. A key may appear only
// once (keySet says why).
type mapWriter struct {
	t    types.DataType
	b    *array.MapBuilder
	key  writer
	val  writer
	keys *keySet
}

func (w *mapWriter) dataType() types.DataType { return w.t }
func (w *mapWriter) null()                    { w.b.AppendNull() }
func (w *mapWriter) value(s *scanner) error {
	switch c := s.peek(); {
	case c == '{' && (w.t.Key.Root == types.String || w.t.Key.Root == types.Char):
		s.pos++
		w.b.Append(true)
		w.keys.reset()
		sw := w.key.(*stringWriter)
		for i := 0; ; i++ {
			k, done, err := s.objectNext(i == 0)
			if err != nil {
				return err
			}
			if done {
				if again, first, ok := w.keys.repeated(); ok {
					return at(w.keys.repeatedErr(s, again, first), "["+strconv.Quote(string(w.keys.ids[again.off:again.end]))+"]")
				}
				return nil
			}
			if err := sw.appendBytes(k); err != nil {
				return at(err, "{key}")
			}
			if err := w.keys.add(s, s.pos, i, false); err != nil {
				return at(err, "{key}")
			}
			if err := readValue(w.val, s); err != nil {
				return at(err, "["+strconv.Quote(string(k))+"]")
			}
		}
	case c == '[':
		s.pos++
		w.b.Append(true)
		w.keys.reset()
		for i := 0; ; i++ {
			more, err := s.arrayNext(i == 0)
			if err != nil {
				return err
			}
			if !more {
				if again, first, ok := w.keys.repeated(); ok {
					return at(w.keys.repeatedErr(s, again, first), "["+strconv.Itoa(again.entry)+"]")
				}
				return nil
			}
			if err := w.pair(s, i); err != nil {
				return at(err, "["+strconv.Itoa(i)+"]")
			}
		}
	case c == '{':
		return kindErr(w.t, "an array of [key, value] pairs (objects only suit string keys)", c)
	default:
		return kindErr(w.t, "an object or an array of [key, value] pairs", c)
	}
}

func (w *mapWriter) pair(s *scanner, entry int) error {
	if c := s.peek(); c != '[' {
		return &fieldError{msg: "map entry must be a [key, value] array, got " + kind(c)}
	}
	s.pos++
	if more, err := s.arrayNext(true); err != nil || !more {
		if err == nil {
			err = &fieldError{msg: "map entry [] has no key"}
		}
		return err
	}
	if s.peek() == 'n' {
		return &fieldError{msg: "map key is null; map keys cannot be null"}
	}
	start := s.pos
	if err := w.key.value(s); err != nil {
		return at(err, "{key}")
	}
	if err := w.keys.add(s, start, entry, true); err != nil {
		return at(err, "{key}")
	}
	if more, err := s.arrayNext(false); err != nil || !more {
		if err == nil {
			err = &fieldError{msg: "map entry has no value"}
		}
		return err
	}
	if err := readValue(w.val, s); err != nil {
		return err
	}
	if more, err := s.arrayNext(false); err != nil || more {
		if err == nil {
			err = &fieldError{msg: "map entry has more than a key and a value"}
		}
		return err
	}
	return nil
}

type structWriter struct {
	t   types.DataType
	b   *array.StructBuilder
	obj *objectDecoder
}

func (w *structWriter) dataType() types.DataType { return w.t }
func (w *structWriter) null()                    { w.b.AppendNull() }
func (w *structWriter) value(s *scanner) error {
	if c := s.peek(); c != '{' {
		return kindErr(w.t, "an object", c)
	}
	w.b.Append(true)
	return w.obj.decode(s)
}

// objectDecoder fills a set of named fields from a JSON object: the table's
// JSON columns, or a ROW's fields.
type objectDecoder struct {
	names []string
	// quoted[i] is names[i] as quotedKey writes it: the guess for the key
	// after field i-1 (producers usually write fields in schema order).
	quoted        [][]byte
	writers       []writer
	index         map[string]int
	seen          []bool
	rejectUnknown bool
}

func newObjectDecoder(fields []types.Field, ws []writer, rejectUnknown bool) *objectDecoder {
	o := &objectDecoder{writers: ws, index: make(map[string]int, len(fields)), seen: make([]bool, len(fields)), rejectUnknown: rejectUnknown}
	for i, f := range fields {
		o.names = append(o.names, f.Name)
		o.quoted = append(o.quoted, quotedKey(f.Name))
		o.index[f.Name] = i
	}
	return o
}

func (o *objectDecoder) decode(s *scanner) error {
	if c := s.peek(); c != '{' {
		// Say "malformed" rather than "got null" for text like "not json".
		if err := s.skip(0); err != nil {
			return err
		}
		return &fieldError{msg: "expected a JSON object, got " + kind(c)}
	}
	s.pos++
	clear(o.seen)
	next := 0
	for first := true; ; first = false {
		var guess []byte
		if next < len(o.quoted) {
			guess = o.quoted[next]
		}
		key, guessed, done, err := s.objectNextGuess(first, guess)
		if err != nil {
			return err
		}
		if done {
			break
		}
		// Producers usually write fields in schema order: try the field
		// after the previous one before the map.
		i := -1
		if guessed || next < len(o.names) && o.names[next] == bstr(key) {
			i = next
		} else if j, ok := o.index[bstr(key)]; ok {
			i = j
		}
		if i < 0 {
			if o.rejectUnknown {
				return &fieldError{msg: fmt.Sprintf("unknown field %q: the table has no such column", key)}
			}
			if err := s.skip(0); err != nil {
				return err
			}
			continue
		}
		if o.seen[i] {
			return at(&fieldError{msg: "appears twice in the object"}, o.names[i])
		}
		o.seen[i] = true
		if err := readValue(o.writers[i], s); err != nil {
			return at(err, o.names[i])
		}
		next = i + 1
	}
	for i, ok := range o.seen {
		if ok {
			continue
		}
		w := o.writers[i]
		if !w.dataType().Nullable {
			return at(&fieldError{msg: fmt.Sprintf("is missing but the type is %s", w.dataType())}, o.names[i])
		}
		w.null()
	}
	return nil
}
