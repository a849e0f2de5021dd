package convert

import (
	"encoding/binary"
	"math"
	"unicode/utf8"

	"github.com/hamba/avro/v2"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// Framed Avro values of the common shapes go straight into the own
// columns of fastcolumns.go, as compact JSON does: a writer schema whose
// fields all fill flat columns (or are skipped) also compiles to a plan,
// a list of steps read by one loop through hamba/avro's Reader, with no
// closure or builder call per value. Like the fast JSON decoder, the plan
// only ever says "not mine": a record it cannot take whole (a value out of
// range, a branch that is not the union's, bad UTF-8, a decimal wider than
// 64 bits, a truncated record...) is not counted, the rows so far are
// spilled to the builders and the closures of avro.go read the record
// again, so they decide what it means and word every error.

// avroOp is how one field of a writer schema is read.
type avroOp uint8

const (
	avroSkip        avroOp = iota // a field without a column
	avroBool                      // boolean into BOOLEAN
	avroInt                       // int into an integer column or DATE
	avroLong                      // long into an integer or TIMESTAMP column
	avroLong64                    // long into BIGINT or TIMESTAMP, nothing to check
	avroFloat                     // float into FLOAT
	avroFloatDouble               // float into DOUBLE
	avroDouble                    // double into DOUBLE
	avroString                    // string into STRING
	avroChar                      // string into CHAR
	avroEnum                      // enum into STRING or CHAR
	avroBytes                     // bytes (or fixed: size) into BYTES
	avroDecimal                   // decimal bytes (or fixed: size) into DECIMAL
)

// avroStep reads one field of the writer schema into a column.
type avroStep struct {
	op avroOp
	// union: the field is ["null", T]; null and value are the branch
	// numbers as written: zigzag varints of one byte, 0 and 2.
	union       bool
	null, value byte
	f           *fastField // the column; nil for avroSkip
	skip        avroFn     // avroSkip
	// lo and hi bound an integer or a decimal's unscaled value; mul
	// scales a decimal up to the column's scale.
	lo, hi, mul int64
	// size is a fixed's bytes, -1 for bytes read with their length.
	size int
	// micros: a timestamp-micros, refused before 1970 with sub-millisecond
	// digits as the closures refuse it.
	micros  bool
	symbols [][]byte
}

// avroPlan reads a record of one writer schema into the own columns.
type avroPlan struct {
	steps []avroStep
	nulls []*fastField // the columns the schema has no field for
}

// fastPlan compiles rs into the own columns cols, or returns nil when a
// field is of a kind the plan does not read (the closures read it). The
// schema compiled with record first, so it fits the table.
func (k *avroCompiler) fastPlan(rs *avro.RecordSchema, cols *fastDecoder) *avroPlan {
	index := make(map[string]int, len(k.a.fields))
	for i, c := range k.a.fields {
		index[c.Name] = i
	}
	filled := make([]bool, len(cols.fields))
	p := &avroPlan{}
	for _, fl := range rs.Fields() {
		i, ok := index[fl.Name()]
		if !ok {
			fn, err := k.skip(fl.Type())
			if err != nil {
				return nil
			}
			p.steps = append(p.steps, avroStep{op: avroSkip, skip: fn})
			continue
		}
		filled[i] = true
		st, ok := fastStep(fl.Type(), &cols.fields[i])
		if !ok {
			return nil
		}
		p.steps = append(p.steps, st)
	}
	for i := range filled {
		if !filled[i] {
			p.nulls = append(p.nulls, &cols.fields[i])
		}
	}
	return p
}

// fastStep compiles the Avro schema s filling column f, as value does.
func fastStep(s avro.Schema, f *fastField) (avroStep, bool) {
	st := avroStep{f: f, size: -1}
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		ts := u.Types()
		if len(ts) != 2 || !u.Nullable() {
			return st, false
		}
		n, v := u.Indices()
		st.union, st.null, st.value = true, byte(2*n), byte(2*v)
		s = deref(ts[v])
	}
	t := f.t
	logical := logicalOf(s)
	switch s.Type() {
	case avro.Boolean:
		st.op = avroBool
		return st, f.kind == fastBool
	case avro.Int, avro.Long:
		st.op, st.lo, st.hi = avroLong, math.MinInt64, math.MaxInt64
		if s.Type() == avro.Int {
			st.op, st.lo, st.hi = avroInt, math.MinInt32, math.MaxInt32
		}
		ok := false
		switch logical {
		case "":
			st.lo, st.hi = max(st.lo, f.lo), min(st.hi, f.hi)
			ok = f.kind == fastInt
		case avro.Date:
			ok = f.kind == fastDate && s.Type() == avro.Int
		case avro.TimestampMillis, avro.TimestampMicros, avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			if f.kind == fastInt {
				ok = t.Root == types.BigInt
				break
			}
			local := logical == avro.LocalTimestampMillis || logical == avro.LocalTimestampMicros
			st.micros = logical == avro.TimestampMicros || logical == avro.LocalTimestampMicros
			sameUnit := st.micros && t.Precision > 3 && t.Precision <= 6 || !st.micros && t.Precision == 3
			ok = sameUnit && (t.Root == types.TimestampLTZ && !local || t.Root == types.TimestampNTZ && local)
		}
		if st.op == avroLong && f.width == 8 && st.lo == math.MinInt64 && st.hi == math.MaxInt64 && !st.micros {
			st.op = avroLong64
		}
		return st, ok
	case avro.Float:
		st.op = avroFloat
		if t.Root == types.Double {
			st.op = avroFloatDouble
		}
		return st, t.Root == types.Float || t.Root == types.Double
	case avro.Double:
		st.op = avroDouble
		return st, t.Root == types.Double
	case avro.String:
		st.op = avroString
		if t.Root == types.Char {
			st.op = avroChar
		}
		return st, f.kind == fastString
	case avro.Enum:
		st.op = avroEnum
		for _, v := range s.(*avro.EnumSchema).Symbols() {
			st.symbols = append(st.symbols, []byte(v))
		}
		return st, f.kind == fastString
	case avro.Bytes, avro.Fixed:
		if fs, ok := s.(*avro.FixedSchema); ok {
			st.size = fs.Size()
		}
		switch logical {
		case "":
			st.op = avroBytes
			return st, f.kind == fastBytes
		case avro.Decimal:
			ls := s.(avro.LogicalTypeSchema).Logical().(*avro.DecimalLogicalSchema)
			up := t.Scale - ls.Scale()
			if f.kind != fastDecimal || up < 0 || up > 18 || st.size > 16 {
				return st, false
			}
			// The unscaled value times 10^up must fit the column's
			// precision and an int64 (the own column's decimals do).
			st.op, st.mul = avroDecimal, pow10i(up)
			st.hi = math.MaxInt64 / st.mul
			if d := t.Precision - up; d <= 18 {
				st.hi = min(st.hi, pow10i(d)-1)
			}
			st.lo = -st.hi
			return st, true
		}
	}
	return st, false
}

// decodeRow reads the Avro record payload with plan p into row cols.rows
// of the own columns and reports whether it fitted; the row counts only
// then.
func (a *avroValues) decodeRow(p *avroPlan, payload []byte) bool {
	row := a.cols.rows
	r := a.reader.Reset(payload)
	r.Error = nil
	limit := int64(len(payload))
	for i := range p.steps {
		st := &p.steps[i]
		f := st.f
		if st.union {
			// The branch number is a long of one byte: Peek and SkipBool
			// read it without ReadLong's loop (at the end of the
			// payload, Peek's zero is caught by the reader's error).
			switch r.Peek() {
			case st.value:
				r.SkipBool()
			case st.null:
				r.SkipBool()
				if !f.nullable {
					return false
				}
				f.storeNull(row)
				continue
			default:
				return false
			}
		}
		switch st.op {
		case avroSkip:
			if st.skip(r) != nil {
				return false
			}
		case avroBool:
			if r.ReadBool() {
				setBit(f.vals.b, row)
			}
		case avroLong64:
			binary.LittleEndian.PutUint64(f.vals.b[row*8:], uint64(r.ReadLong()))
		case avroInt, avroLong:
			var v int64
			if st.op == avroInt {
				v = int64(r.ReadInt())
			} else {
				v = r.ReadLong()
			}
			if v < st.lo || v > st.hi || st.micros && v < 0 && v%1000 != 0 {
				return false
			}
			b := f.vals.b
			switch f.width {
			case 8:
				binary.LittleEndian.PutUint64(b[row*8:], uint64(v))
			case 4:
				binary.LittleEndian.PutUint32(b[row*4:], uint32(v))
			case 2:
				binary.LittleEndian.PutUint16(b[row*2:], uint16(v))
			default:
				b[row] = byte(v)
			}
		case avroFloat:
			binary.LittleEndian.PutUint32(f.vals.b[row*4:], math.Float32bits(r.ReadFloat()))
		case avroFloatDouble:
			binary.LittleEndian.PutUint64(f.vals.b[row*8:], math.Float64bits(float64(r.ReadFloat())))
		case avroDouble:
			binary.LittleEndian.PutUint64(f.vals.b[row*8:], math.Float64bits(r.ReadDouble()))
		case avroString, avroChar, avroBytes:
			n := int64(st.size)
			if n < 0 {
				n = r.ReadLong()
			}
			if n < 0 || n > limit {
				return false
			}
			// Read straight into the values buffer.
			start := int(binary.LittleEndian.Uint32(f.offs.b[row*4:]))
			end := start + int(n)
			if end > len(f.vals.b) {
				f.vals.grow(end)
			}
			v := f.vals.b[start:end]
			r.Read(v)
			switch st.op {
			case avroChar:
				if len(v) > f.t.Length {
					return false
				}
				fallthrough
			case avroString:
				if !validUTF8(v) {
					return false
				}
			}
			binary.LittleEndian.PutUint32(f.offs.b[row*4+4:], uint32(end))
		case avroEnum:
			j := r.ReadInt()
			if j < 0 || int(j) >= len(st.symbols) {
				return false
			}
			v := st.symbols[j]
			if f.t.Root == types.Char && len(v) > f.t.Length {
				return false
			}
			f.putBytes(row, v)
		case avroDecimal:
			n := int64(st.size)
			if n < 0 {
				n = r.ReadLong()
			}
			if n < 0 || n > 16 {
				return false
			}
			var buf [16]byte
			r.Read(buf[:n])
			v, ok := bigEndianInt64(buf[:n])
			if !ok || v < st.lo || v > st.hi {
				return false
			}
			v *= st.mul
			// Decimal128, low word first.
			binary.LittleEndian.PutUint64(f.vals.b[row*16:], uint64(v))
			binary.LittleEndian.PutUint64(f.vals.b[row*16+8:], uint64(v>>63))
		}
	}
	if r.Error != nil {
		return false
	}
	if r.Peek(); r.Error == nil {
		return false // data after the record
	}
	for _, f := range p.nulls {
		f.storeNull(row)
	}
	a.cols.rows++
	return true
}

// bigEndianInt64 reads b, big-endian two's complement, as an int64; false
// when it does not fit one.
func bigEndianInt64(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	v := int64(int8(b[0]))
	for _, c := range b[1:] {
		if v > math.MaxInt64>>8 || v < math.MinInt64>>8 {
			return 0, false
		}
		v = v<<8 | int64(c)
	}
	return v, true
}

// validUTF8 is utf8.Valid with the check of ASCII strings of 8 to 16 bytes
// (names, codes, ids) inlined: two words without a high bit.
func validUTF8(v []byte) bool {
	if n := len(v); n >= 8 && n <= 16 {
		if (binary.LittleEndian.Uint64(v)|binary.LittleEndian.Uint64(v[n-8:]))&0x8080808080808080 == 0 {
			return true
		}
	}
	return utf8.Valid(v)
}
