package rebuild

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/hamba/avro/v2"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// avroEnc writes the value at row of col as Avro.
type avroEnc func(w *avro.Writer, col arrow.Array, row int) error

// avroValue writes a row's value columns as a framed Avro record of one
// registered schema.
type avroValue struct {
	header [5]byte // magic byte 0 and the schema id
	fields []avroField
	// writers hold the encoding buffer; Plans are shared by concurrent
	// fetches.
	writers sync.Pool
}

// avroField is one field of the schema: the column it comes from (-1:
// none, the field is always null) and its encoder.
type avroField struct {
	column int
	enc    avroEnc
	null   func(w *avro.Writer) // writes a null field
}

// WithAvro returns a plan that writes values as Avro records of schema s,
// registered under id, framed as Schema Registry deserializers expect.
// Every field of s takes the value column of its name; a field without
// one must be nullable and is written as null; a column without a field
// is left out.
func (p *Plan) WithAvro(id int32, s avro.Schema) (*Plan, error) {
	v, err := p.newAvroValue(id, s, p.valueColumns)
	if err != nil {
		return nil, err
	}
	q := *p
	q.avro = v
	return &q, nil
}

// WithAvroKey returns a plan that writes keys (see FramedKeys) as Avro of
// schema s, registered under id: a record of the primary-key columns, or
// the key column's one value.
func (p *Plan) WithAvroKey(id int32, s avro.Schema) (*Plan, error) {
	var v *avroValue
	if p.key >= 0 {
		enc, err := avroEncoder(s, p.columns[p.key])
		if err != nil {
			return nil, fmt.Errorf("rebuild: key schema id %d does not fit the key column: %w", id, err)
		}
		// An Avro value that is not a record is written as a record of one
		// field would be: the value alone.
		v = &avroValue{fields: []avroField{{column: p.key, enc: enc}}}
		v.header[0] = 0
		binary.BigEndian.PutUint32(v.header[1:], uint32(id))
		v.writers.New = func() any { return avro.NewWriter(nil, 256) }
	} else {
		var err error
		if v, err = p.newAvroValue(id, s, p.pkKey); err != nil {
			return nil, fmt.Errorf("key: %w", err)
		}
	}
	q := *p
	q.keyAvro = v
	return &q, nil
}

// newAvroValue compiles record schema s, registered under id, over the
// columns at indexes cols.
func (p *Plan) newAvroValue(id int32, s avro.Schema, cols []int) (*avroValue, error) {
	rs, ok := derefSchema(s).(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("rebuild: schema id %d is an Avro %s, not a record", id, s.Type())
	}
	fs := make([]types.Field, len(cols))
	for n, i := range cols {
		fs[n] = p.columns[i]
	}
	v := &avroValue{}
	v.header[0] = 0
	binary.BigEndian.PutUint32(v.header[1:], uint32(id))
	fields, err := avroFields(rs, fs)
	if err != nil {
		return nil, fmt.Errorf("rebuild: schema id %d does not fit the table: %w", id, err)
	}
	for n := range fields {
		if fields[n].column >= 0 {
			fields[n].column = cols[fields[n].column]
		}
	}
	v.fields = fields
	v.writers.New = func() any { return avro.NewWriter(nil, 256) }
	return v, nil
}

func derefSchema(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// avroFields compiles the fields of rs from cols (indexes into cols).
func avroFields(rs *avro.RecordSchema, cols []types.Field) ([]avroField, error) {
	var out []avroField
	for _, f := range rs.Fields() {
		i := -1
		for j, c := range cols {
			if c.Name == f.Name() {
				i = j
				break
			}
		}
		if i < 0 {
			null, ok := nullWriter(f.Type())
			if !ok {
				return nil, fmt.Errorf("field %s has no column and is not nullable", f.Name())
			}
			out = append(out, avroField{column: -1, null: null})
			continue
		}
		enc, err := avroEncoder(f.Type(), cols[i])
		if err != nil {
			return nil, err
		}
		out = append(out, avroField{column: i, enc: enc})
	}
	return out, nil
}

// nullWriter writes null for a ["null", T] union (or the null type).
func nullWriter(s avro.Schema) (func(*avro.Writer), bool) {
	s = derefSchema(s)
	if s.Type() == avro.Null {
		return func(*avro.Writer) {}, true
	}
	u, ok := s.(*avro.UnionSchema)
	if !ok || !u.Nullable() {
		return nil, false
	}
	nullIdx, _ := u.Indices()
	return func(w *avro.Writer) { w.WriteLong(int64(nullIdx)) }, true
}

// appendAvro appends the framed Avro record of row.
func (v *avroValue) appendAvro(dst []byte, rec arrow.RecordBatch, row int) ([]byte, error) {
	w := v.writers.Get().(*avro.Writer)
	defer v.writers.Put(w)
	w.Reset(nil)
	for _, f := range v.fields {
		if f.column < 0 {
			f.null(w)
			continue
		}
		if err := f.enc(w, rec.Column(f.column), row); err != nil {
			return dst, err
		}
	}
	dst = append(dst, v.header[:]...)
	return append(dst, w.Buffer()...), nil
}

func logicalType(s avro.Schema) avro.LogicalType {
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		return l.Logical().Type()
	}
	return ""
}

// avroEncoder compiles writing column col as Avro type s.
func avroEncoder(s avro.Schema, col types.Field) (avroEnc, error) {
	s = derefSchema(s)
	t := col.Type
	bad := fmt.Errorf("field %s: column %s of type %s cannot be written as Avro %s", col.Name, col.Name, t, s.Type())
	if u, ok := s.(*avro.UnionSchema); ok {
		if len(u.Types()) != 2 || !u.Nullable() {
			return nil, fmt.Errorf("field %s: the union %s is not [\"null\", T]", col.Name, u)
		}
		nullIdx, typIdx := u.Indices()
		inner, err := avroEncoder(u.Types()[typIdx], col)
		if err != nil {
			return nil, err
		}
		return func(w *avro.Writer, c arrow.Array, row int) error {
			if c.IsNull(row) {
				w.WriteLong(int64(nullIdx))
				return nil
			}
			w.WriteLong(int64(typIdx))
			return inner(w, c, row)
		}, nil
	}
	notNull := func(enc avroEnc) avroEnc {
		return func(w *avro.Writer, c arrow.Array, row int) error {
			if c.IsNull(row) {
				return fmt.Errorf("column %s is NULL but its Avro field is not nullable", col.Name)
			}
			return enc(w, c, row)
		}
	}
	logical := logicalType(s)
	switch s.Type() {
	case avro.Boolean:
		if t.Root == types.Boolean {
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				w.WriteBool(c.(*array.Boolean).Value(row))
				return nil
			}), nil
		}
	case avro.Int, avro.Long:
		long := s.Type() == avro.Long
		switch {
		case logical == "" || t.Root == types.BigInt && long:
			get, ok := intGetter(t.Root)
			if !ok {
				break
			}
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				v := get(c, row)
				if long {
					w.WriteLong(v)
					return nil
				}
				if v < math.MinInt32 || v > math.MaxInt32 {
					return fmt.Errorf("column %s: %d does not fit an Avro int", col.Name, v)
				}
				w.WriteInt(int32(v))
				return nil
			}), nil
		case logical == avro.Date && t.Root == types.Date:
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				w.WriteInt(int32(c.(*array.Date32).Value(row)))
				return nil
			}), nil
		case (logical == avro.TimeMillis || logical == avro.TimeMicros) && t.Root == types.Time:
			to := int64(1e3)
			if logical == avro.TimeMicros {
				to = 1e6
			}
			from := unitsPerSecond(t.Precision)
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				var v int64
				switch a := c.(type) {
				case *array.Time32:
					v = int64(a.Value(row))
				case *array.Time64:
					v = int64(a.Value(row))
				}
				v = convertUnit(v, from, to)
				if long {
					w.WriteLong(v)
				} else {
					w.WriteInt(int32(v))
				}
				return nil
			}), nil
		case long && (t.Root == types.TimestampLTZ || t.Root == types.TimestampNTZ) &&
			(logical == avro.TimestampMillis || logical == avro.TimestampMicros || logical == avro.LocalTimestampMillis || logical == avro.LocalTimestampMicros):
			to := int64(1e3)
			if logical == avro.TimestampMicros || logical == avro.LocalTimestampMicros {
				to = 1e6
			}
			from := unitsPerSecond(t.Precision)
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				w.WriteLong(convertUnit(int64(c.(*array.Timestamp).Value(row)), from, to))
				return nil
			}), nil
		}
	case avro.Float:
		if t.Root == types.Float {
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				w.WriteFloat(c.(*array.Float32).Value(row))
				return nil
			}), nil
		}
	case avro.Double:
		switch t.Root {
		case types.Double:
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				w.WriteDouble(c.(*array.Float64).Value(row))
				return nil
			}), nil
		case types.Float:
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				w.WriteDouble(float64(c.(*array.Float32).Value(row)))
				return nil
			}), nil
		}
	case avro.String:
		if t.Root == types.String || t.Root == types.Char {
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				w.WriteString(c.(*array.String).Value(row))
				return nil
			}), nil
		}
	case avro.Enum:
		if t.Root == types.String || t.Root == types.Char {
			symbols := map[string]int32{}
			for i, v := range s.(*avro.EnumSchema).Symbols() {
				symbols[v] = int32(i)
			}
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				v := c.(*array.String).Value(row)
				i, ok := symbols[v]
				if !ok {
					return fmt.Errorf("column %s: %q is not a symbol of the Avro enum", col.Name, v)
				}
				w.WriteInt(i)
				return nil
			}), nil
		}
	case avro.Bytes, avro.Fixed:
		size := -1
		if f, ok := s.(*avro.FixedSchema); ok {
			size = f.Size()
		}
		put := func(w *avro.Writer, b []byte) error {
			if size < 0 {
				w.WriteBytes(b)
				return nil
			}
			if len(b) != size {
				return fmt.Errorf("column %s: %d bytes do not fit Avro fixed(%d)", col.Name, len(b), size)
			}
			_, err := w.Write(b)
			return err
		}
		if logical == avro.Decimal {
			ls := s.(avro.LogicalTypeSchema).Logical().(*avro.DecimalLogicalSchema)
			if t.Root != types.Decimal || ls.Scale() < t.Scale {
				break
			}
			up := int32(ls.Scale() - t.Scale)
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				n := c.(*array.Decimal128).Value(row)
				if up > 0 {
					n = n.IncreaseScaleBy(up)
				}
				var buf [16]byte
				b := decimalBytes(&buf, n)
				if size > len(b) {
					var wide [64]byte
					sign := byte(0)
					if n.Sign() < 0 {
						sign = 0xff
					}
					for i := range size - len(b) {
						wide[i] = sign
					}
					b = append(wide[:size-len(b)], b...)
				}
				return put(w, b)
			}), nil
		}
		if logical != "" {
			break
		}
		switch t.Root {
		case types.Bytes:
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error { return put(w, c.(*array.Binary).Value(row)) }), nil
		case types.Binary:
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				return put(w, c.(*array.FixedSizeBinary).Value(row))
			}), nil
		}
	case avro.Array:
		if t.Root == types.Array {
			elem, err := avroEncoder(s.(*avro.ArraySchema).Items(), types.Field{Name: col.Name + "[]", Type: *t.Element})
			if err != nil {
				return nil, err
			}
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				l := c.(*array.List)
				start, end := l.ValueOffsets(row)
				if end > start {
					w.WriteBlockHeader(end-start, 0)
					for i := start; i < end; i++ {
						if err := elem(w, l.ListValues(), int(i)); err != nil {
							return err
						}
					}
				}
				w.WriteBlockHeader(0, 0)
				return nil
			}), nil
		}
	case avro.Map:
		if t.Root == types.Map && (t.Key.Root == types.String || t.Key.Root == types.Char) {
			val, err := avroEncoder(s.(*avro.MapSchema).Values(), types.Field{Name: col.Name + "{}", Type: *t.Value})
			if err != nil {
				return nil, err
			}
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				m := c.(*array.Map)
				start, end := m.ValueOffsets(row)
				keys := m.Keys().(*array.String)
				if end > start {
					w.WriteBlockHeader(end-start, 0)
					for i := start; i < end; i++ {
						w.WriteString(keys.Value(int(i)))
						if err := val(w, m.Items(), int(i)); err != nil {
							return err
						}
					}
				}
				w.WriteBlockHeader(0, 0)
				return nil
			}), nil
		}
	case avro.Record:
		if t.Root == types.Row {
			fields, err := avroFields(s.(*avro.RecordSchema), t.Fields)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", col.Name, err)
			}
			return notNull(func(w *avro.Writer, c arrow.Array, row int) error {
				st := c.(*array.Struct)
				for _, f := range fields {
					if f.column < 0 {
						f.null(w)
						continue
					}
					if err := f.enc(w, st.Field(f.column), row); err != nil {
						return err
					}
				}
				return nil
			}), nil
		}
	}
	return nil, bad
}

// intGetter reads an integer column of any width.
func intGetter(r types.Root) (func(arrow.Array, int) int64, bool) {
	switch r {
	case types.TinyInt:
		return func(c arrow.Array, i int) int64 { return int64(c.(*array.Int8).Value(i)) }, true
	case types.SmallInt:
		return func(c arrow.Array, i int) int64 { return int64(c.(*array.Int16).Value(i)) }, true
	case types.Int:
		return func(c arrow.Array, i int) int64 { return int64(c.(*array.Int32).Value(i)) }, true
	case types.BigInt:
		return func(c arrow.Array, i int) int64 { return c.(*array.Int64).Value(i) }, true
	}
	return nil, false
}

// unitsPerSecond of the Arrow unit Fluss uses for a TIME or TIMESTAMP
// precision.
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

// convertUnit converts v from one unit per second to another, flooring.
func convertUnit(v, from, to int64) int64 {
	switch {
	case from == to:
		return v
	case from < to:
		return v * (to / from)
	}
	d := from / to
	q := v / d
	if v%d < 0 {
		q--
	}
	return q
}

// decimalBytes is n as the shortest big-endian two's complement bytes, as
// Avro decimals are written.
func decimalBytes(buf *[16]byte, n decimal128.Num) []byte {
	binary.BigEndian.PutUint64(buf[:8], uint64(n.HighBits()))
	binary.BigEndian.PutUint64(buf[8:], n.LowBits())
	b := buf[:]
	for len(b) > 1 && (b[0] == 0 && b[1]&0x80 == 0 || b[0] == 0xff && b[1]&0x80 != 0) {
		b = b[1:]
	}
	return b
}
