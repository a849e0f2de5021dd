package convert

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/hamba/avro/v2"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/transcodesvc/internal/kafkabatch"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

// maxAvroDecoders bounds the writer schemas one converter keeps compiled
// decoders for; a topic written with more schemas than that recompiles.
const maxAvroDecoders = 64

// avroFn reads one Avro value and appends it to its builder (or skips it).
type avroFn func(r *avro.Reader) error

// avroDecoder is a writer schema compiled against the plan's value columns
// and bound to one converter's builders.
type avroDecoder struct {
	decode avroFn
	err    error // the schema does not fit the table: every record fails
	// fast reads a record into the own columns (avrofast.go); nil when a
	// field's kind has no step there.
	fast *avroPlan
}

// avroValues decodes framed Avro values into the value columns of one
// converter. The writer schemas of a batch are handed in by UseSchemas;
// each is compiled once per converter and kept while its builders live.
type avroValues struct {
	topic    string
	fields   []types.Field
	builders []array.Builder

	schemas  map[int32]*schemas.Schema
	decoders map[int32]*avroDecoder
	reader   *avro.Reader
	buf      []byte // string and bytes values, reused
	limit    int    // the payload's length: no length or count read may exceed it
	// single: a schema is one value of the one column, not a record of
	// the columns (Plan.single).
	single bool
	// cols are the own columns of the values (fastcolumns.go), used while
	// the converter has begun a batch in them; nil when a column's type
	// has none, or for a single value.
	cols *fastDecoder
	// The decoder of the last id looked up: a batch's values mostly share
	// their writer schema.
	lastID  int32
	lastDec *avroDecoder
}

func newAvroValues(topic string, fields []types.Field, builders []array.Builder) *avroValues {
	return &avroValues{topic: topic, fields: fields, builders: builders,
		decoders: map[int32]*avroDecoder{}, reader: avro.NewReader(nil, 0),
		cols: newFastColumns(fields, builders)}
}

// UseSchemas hands the converter the writer schemas of the next batches'
// framed values, by id; a value framed with an id not in m fails as an
// unknown schema id. The map is read, not copied.
func (c *Converter) UseSchemas(m map[int32]*schemas.Schema) {
	c.known = m
	if c.avro != nil {
		c.avro.schemas = m
	}
	if c.proto != nil {
		c.proto.schemas = m
	}
}

// Framed reports whether the plan's values are Schema Registry framed, so
// their writer schemas must be resolved (SchemaIDs, UseSchemas) first.
func (p *Plan) Framed() bool { return p.isAvro() || p.isProtobuf() || p.isJSONSchema() }

// unframeJSON checks the framing of a JSON Schema value and returns its
// JSON text. The schema must be a registered JSON Schema; the value's
// fields are then checked against the table's columns, as plain JSON's
// are (the serializer validated the JSON Schema's own constraints).
func (c *Converter) unframeJSON(v []byte) ([]byte, error) {
	if v == nil {
		return nil, &fieldError{msg: "record value is null (a tombstone); a JSON Schema topic needs a framed JSON object"}
	}
	id, payload, err := schemas.Frame(v)
	if err != nil {
		return nil, &fieldError{msg: err.Error()}
	}
	s, ok := c.known[id]
	switch {
	case !ok:
		return nil, &fieldError{msg: fmt.Sprintf("unknown schema id %d: the schema registry has no schema with this id", id)}
	case s.Type != schemav1.SchemaType_SCHEMA_TYPE_JSON:
		return nil, &fieldError{msg: fmt.Sprintf("schema id %d is of type %s, not a JSON Schema: topic %s takes JSON Schema values", id, s.TypeName(), c.plan.Topic)}
	}
	return payload, nil
}

// SchemaIDs appends to dst the distinct schema ids the framed values of b
// name; values without valid framing are left to fail in the conversion.
func (p *Plan) SchemaIDs(b *kafkabatch.Batch, dst []int32) []int32 {
	return appendSchemaIDs(b, false, dst)
}

// KeySchemaIDs is SchemaIDs of the records' keys, for a key plan (whose
// values are the keys of b's records).
func (p *Plan) KeySchemaIDs(b *kafkabatch.Batch, dst []int32) []int32 {
	return appendSchemaIDs(b, true, dst)
}

func appendSchemaIDs(b *kafkabatch.Batch, keys bool, dst []int32) []int32 {
next:
	for i := range b.Records {
		v := b.Records[i].Value
		if keys {
			v = b.Records[i].Key
		}
		id, _, err := schemas.Frame(v)
		if err != nil {
			continue
		}
		for _, seen := range dst {
			if seen == id {
				continue next
			}
		}
		dst = append(dst, id)
	}
	return dst
}

func (a *avroValues) decodeValue(v []byte) error {
	if v == nil {
		return &fieldError{msg: "record value is null (a tombstone); an Avro topic needs a framed Avro record"}
	}
	id, payload, err := schemas.Frame(v)
	if err != nil {
		return &fieldError{msg: err.Error()}
	}
	d, err := a.decoder(id)
	if err != nil {
		return err
	}
	a.limit = len(payload)
	if a.cols != nil && a.cols.columnar {
		if d.fast != nil && a.decodeRow(d.fast, payload) {
			return nil
		}
		// The closures append to the builders: the rows so far go there
		// first.
		a.cols.spill()
	}
	r := a.reader.Reset(payload)
	r.Error = nil
	if err := d.decode(r); err != nil {
		return err
	}
	if err := readerErr(r); err != nil {
		return err
	}
	if r.Peek(); r.Error == nil {
		return &fieldError{msg: fmt.Sprintf("the Avro record of schema id %d ends before the value does: data after the record", id)}
	}
	return nil
}

// readerErr turns the reader's sticky error into a record error.
func readerErr(r *avro.Reader) error {
	switch {
	case r.Error == nil:
		return nil
	case errors.Is(r.Error, io.ErrUnexpectedEOF) || errors.Is(r.Error, io.EOF):
		return &fieldError{msg: "truncated payload: the Avro record ends early"}
	}
	return &fieldError{msg: "malformed Avro: " + r.Error.Error()}
}

func (a *avroValues) decoder(id int32) (*avroDecoder, error) {
	if a.lastDec != nil && id == a.lastID {
		return a.lastDec, nil
	}
	if d, ok := a.decoders[id]; ok {
		if d.err != nil {
			return nil, d.err
		}
		a.lastID, a.lastDec = id, d
		return d, nil
	}
	s, ok := a.schemas[id]
	if !ok {
		return nil, &fieldError{msg: fmt.Sprintf("unknown schema id %d: the schema registry has no schema with this id", id)}
	}
	if len(a.decoders) >= maxAvroDecoders {
		clear(a.decoders)
	}
	d := &avroDecoder{}
	if !s.IsAvro() {
		d.err = &fieldError{msg: fmt.Sprintf("schema id %d is of type %s, not Avro: topic %s takes Avro values", id, s.TypeName(), a.topic)}
	} else if s.Err != nil {
		d.err = &fieldError{msg: s.Err.Error()}
	} else if a.single {
		k := &avroCompiler{a: a, skips: map[string]*avroFn{}}
		d.decode, d.err = k.value(s.Avro, a.fields[0], a.builders[0])
		if d.err != nil {
			d.err = &fieldError{msg: fmt.Sprintf("schema id %d does not fit topic %s: %v", id, a.topic, d.err)}
		}
	} else if rs, ok := deref(s.Avro).(*avro.RecordSchema); !ok {
		d.err = &fieldError{msg: fmt.Sprintf("schema id %d is an Avro %s, not a record: topic %s takes records whose fields fill its columns", id, s.Avro.Type(), a.topic)}
	} else {
		k := &avroCompiler{a: a, skips: map[string]*avroFn{}}
		d.decode, d.err = k.record(rs, a.fields, a.builders)
		if d.err != nil {
			d.err = &fieldError{msg: fmt.Sprintf("schema id %d does not fit topic %s: %v", id, a.topic, d.err)}
		} else if a.cols != nil {
			d.fast = k.fastPlan(rs, a.cols)
		}
	}
	a.decoders[id] = d
	if d.err != nil {
		return nil, d.err
	}
	a.lastID, a.lastDec = id, d
	return d, nil
}

func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// readLen reads a string, bytes or block length and checks it against what
// is left of the payload, so that a corrupt length cannot make the decoder
// allocate or loop for long.
func (a *avroValues) readLen(r *avro.Reader) (int, error) {
	n := r.ReadLong()
	if r.Error != nil {
		return 0, readerErr(r)
	}
	if n < 0 || n > int64(a.limit) {
		return 0, &fieldError{msg: fmt.Sprintf("truncated payload: a length of %d does not fit the %d-byte Avro record", n, a.limit)}
	}
	return int(n), nil
}

// readBytes reads a string or bytes value into the reused buffer.
func (a *avroValues) readBytes(r *avro.Reader) ([]byte, error) {
	n, err := a.readLen(r)
	if err != nil {
		return nil, err
	}
	if cap(a.buf) < n {
		a.buf = make([]byte, n, max(n, 2*cap(a.buf)))
	}
	b := a.buf[:n]
	r.Read(b)
	if r.Error != nil {
		return nil, readerErr(r)
	}
	return b, nil
}

// avroCompiler compiles one writer schema.
type avroCompiler struct {
	a     *avroValues
	skips map[string]*avroFn // named types being skipped, for recursive schemas
}

// typeErr says that an Avro type cannot fill a column.
func typeErr(s avro.Schema, col string, t types.DataType) error {
	return fmt.Errorf("field %s: Avro %s cannot fill column %s of type %s", col, avroTypeName(s), col, t)
}

func avroTypeName(s avro.Schema) string {
	s = deref(s)
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		return fmt.Sprintf("%s (%s)", s.Type(), l.Logical().Type())
	}
	return string(s.Type())
}

func logicalOf(s avro.Schema) avro.LogicalType {
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		return l.Logical().Type()
	}
	return ""
}

// record compiles an Avro record filling cols (the table's value columns
// or a ROW's fields) by field name: fields without a column are skipped,
// columns without a field are NULL.
func (k *avroCompiler) record(rs *avro.RecordSchema, cols []types.Field, bs []array.Builder) (avroFn, error) {
	index := make(map[string]int, len(cols))
	for i, c := range cols {
		index[c.Name] = i
	}
	filled := make([]bool, len(cols))
	type step struct {
		name string
		fn   avroFn
	}
	var steps []step
	for _, f := range rs.Fields() {
		i, ok := index[f.Name()]
		if !ok {
			fn, err := k.skip(f.Type())
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name(), err)
			}
			steps = append(steps, step{f.Name(), fn})
			continue
		}
		filled[i] = true
		fn, err := k.value(f.Type(), cols[i], bs[i])
		if err != nil {
			return nil, err
		}
		steps = append(steps, step{f.Name(), fn})
	}
	var nulls []array.Builder
	for i, c := range cols {
		if filled[i] {
			continue
		}
		if !c.Type.Nullable {
			return nil, fmt.Errorf("column %s is %s but the schema has no field %s", c.Name, c.Type, c.Name)
		}
		nulls = append(nulls, bs[i])
	}
	return func(r *avro.Reader) error {
		for i := range steps {
			if err := steps[i].fn(r); err != nil {
				return at(err, steps[i].name)
			}
		}
		for _, b := range nulls {
			b.AppendNull()
		}
		return nil
	}, nil
}

// value compiles the Avro schema s filling column col through builder b.
func (k *avroCompiler) value(s avro.Schema, col types.Field, b array.Builder) (avroFn, error) {
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		return k.union(u, col, b)
	}
	t := col.Type
	bad := func() (avroFn, error) { return nil, typeErr(s, col.Name, t) }
	a := k.a
	logical := logicalOf(s)
	switch s.Type() {
	case avro.Boolean:
		if t.Root != types.Boolean {
			return bad()
		}
		bb := b.(*array.BooleanBuilder)
		return func(r *avro.Reader) error { bb.Append(r.ReadBool()); return nil }, nil

	case avro.Int, avro.Long:
		read := func(r *avro.Reader) int64 { return r.ReadLong() }
		if s.Type() == avro.Int {
			read = func(r *avro.Reader) int64 { return int64(r.ReadInt()) }
		}
		switch logical {
		case avro.Date:
			if t.Root != types.Date {
				return bad()
			}
			db := b.(*array.Date32Builder)
			return func(r *avro.Reader) error { db.Append(arrow.Date32(r.ReadInt())); return nil }, nil
		case avro.TimeMillis, avro.TimeMicros:
			if t.Root != types.Time {
				return bad()
			}
			perUnit := int64(1e6)
			if logical == avro.TimeMicros {
				perUnit = 1e3
			}
			return timeFn(read, perUnit, col, b), nil
		case avro.TimestampMillis, avro.TimestampMicros, avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			local := logical == avro.LocalTimestampMillis || logical == avro.LocalTimestampMicros
			if t.Root == types.BigInt {
				break // the number itself
			}
			if !(t.Root == types.TimestampLTZ && !local || t.Root == types.TimestampNTZ && local) {
				return bad()
			}
			micros := logical == avro.TimestampMicros || logical == avro.LocalTimestampMicros
			return timestampFn(read, micros, col, b), nil
		case "":
		default:
			return bad()
		}
		return intFn(read, col, b)

	case avro.Float, avro.Double:
		switch {
		case t.Root == types.Double && s.Type() == avro.Float:
			fb := b.(*array.Float64Builder)
			return func(r *avro.Reader) error { fb.Append(float64(r.ReadFloat())); return nil }, nil
		case t.Root == types.Double:
			fb := b.(*array.Float64Builder)
			return func(r *avro.Reader) error { fb.Append(r.ReadDouble()); return nil }, nil
		case t.Root == types.Float && s.Type() == avro.Float:
			fb := b.(*array.Float32Builder)
			return func(r *avro.Reader) error { fb.Append(r.ReadFloat()); return nil }, nil
		}
		return bad()

	case avro.String:
		if t.Root != types.String && t.Root != types.Char {
			return bad()
		}
		sw := &stringWriter{t: t, b: b.(*array.StringBuilder)}
		return func(r *avro.Reader) error {
			v, err := a.readBytes(r)
			if err != nil {
				return err
			}
			if !utf8.Valid(v) {
				return &fieldError{msg: fmt.Sprintf("string is not valid UTF-8 but column %s is %s", col.Name, t)}
			}
			return sw.appendBytes(v)
		}, nil

	case avro.Enum:
		if t.Root != types.String && t.Root != types.Char {
			return bad()
		}
		symbols := s.(*avro.EnumSchema).Symbols()
		sw := &stringWriter{t: t, b: b.(*array.StringBuilder)}
		sym := make([][]byte, len(symbols))
		for i, v := range symbols {
			sym[i] = []byte(v)
		}
		return func(r *avro.Reader) error {
			i := r.ReadInt()
			if r.Error != nil {
				return readerErr(r)
			}
			if i < 0 || int(i) >= len(sym) {
				return &fieldError{msg: fmt.Sprintf("enum index %d is not one of the %d symbols", i, len(sym))}
			}
			return sw.appendBytes(sym[i])
		}, nil

	case avro.Bytes, avro.Fixed:
		size := -1
		if f, ok := s.(*avro.FixedSchema); ok {
			size = f.Size()
		}
		read := func(r *avro.Reader) ([]byte, error) { return a.readBytes(r) }
		if size >= 0 {
			read = func(r *avro.Reader) ([]byte, error) {
				if cap(a.buf) < size {
					a.buf = make([]byte, size)
				}
				v := a.buf[:size]
				r.Read(v)
				return v, readerErr(r)
			}
		}
		if logical == avro.Decimal {
			if t.Root != types.Decimal {
				return bad()
			}
			return decimalFn(read, s.(avro.LogicalTypeSchema).Logical().(*avro.DecimalLogicalSchema), col, b)
		}
		if logical != "" {
			return bad()
		}
		switch t.Root {
		case types.Bytes:
			bb := b.(*array.BinaryBuilder)
			return func(r *avro.Reader) error {
				v, err := read(r)
				if err != nil {
					return err
				}
				bb.Append(v)
				return nil
			}, nil
		case types.Binary:
			if size >= 0 && size != t.Length {
				return bad()
			}
			fb := b.(*array.FixedSizeBinaryBuilder)
			return func(r *avro.Reader) error {
				v, err := read(r)
				if err != nil {
					return err
				}
				if len(v) != t.Length {
					return &fieldError{msg: fmt.Sprintf("%d bytes do not fit column %s (%s), which needs exactly %d", len(v), col.Name, t, t.Length)}
				}
				fb.Append(v)
				return nil
			}, nil
		}
		return bad()

	case avro.Array:
		if t.Root != types.Array {
			return bad()
		}
		lb := b.(*array.ListBuilder)
		elem, err := k.value(s.(*avro.ArraySchema).Items(), types.Field{Name: col.Name + "[]", Type: *t.Element}, lb.ValueBuilder())
		if err != nil {
			return nil, err
		}
		return func(r *avro.Reader) error {
			lb.Append(true)
			return a.blocks(r, func(r *avro.Reader) error { return elem(r) })
		}, nil

	case avro.Map:
		if t.Root != types.Map || (t.Key.Root != types.String && t.Key.Root != types.Char) {
			return bad()
		}
		mb := b.(*array.MapBuilder)
		key := &stringWriter{t: *t.Key, b: mb.KeyBuilder().(*array.StringBuilder)}
		val, err := k.value(s.(*avro.MapSchema).Values(), types.Field{Name: col.Name + "{}", Type: *t.Value}, mb.ItemBuilder())
		if err != nil {
			return nil, err
		}
		return func(r *avro.Reader) error {
			mb.Append(true)
			return a.blocks(r, func(r *avro.Reader) error {
				kb, err := a.readBytes(r)
				if err != nil {
					return err
				}
				if !utf8.Valid(kb) {
					return &fieldError{msg: "map key is not valid UTF-8"}
				}
				if err := key.appendBytes(kb); err != nil {
					return err
				}
				return val(r)
			})
		}, nil

	case avro.Record:
		if t.Root != types.Row {
			return bad()
		}
		sb := b.(*array.StructBuilder)
		bs := make([]array.Builder, len(t.Fields))
		for i := range bs {
			bs[i] = sb.FieldBuilder(i)
		}
		rec, err := k.record(s.(*avro.RecordSchema), t.Fields, bs)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", col.Name, err)
		}
		return func(r *avro.Reader) error {
			sb.Append(true)
			return rec(r)
		}, nil
	}
	return bad()
}

// union compiles ["null", T] (either order) as a nullable T.
func (k *avroCompiler) union(u *avro.UnionSchema, col types.Field, b array.Builder) (avroFn, error) {
	ts := u.Types()
	if len(ts) != 2 || !u.Nullable() {
		return nil, fmt.Errorf("field %s: the union %s is not [\"null\", T]: only nullable unions fill a column", col.Name, u)
	}
	nullIdx, typIdx := u.Indices()
	inner, err := k.value(ts[typIdx], col, b)
	if err != nil {
		return nil, err
	}
	nullable := col.Type.Nullable
	return func(r *avro.Reader) error {
		switch i := r.ReadLong(); {
		case r.Error != nil:
			return readerErr(r)
		case i == int64(nullIdx):
			if !nullable {
				return &fieldError{msg: fmt.Sprintf("value is null but column %s is %s", col.Name, col.Type)}
			}
			b.AppendNull()
			return nil
		case i == int64(typIdx):
			return inner(r)
		default:
			return &fieldError{msg: fmt.Sprintf("union index %d is not one of the union's 2 branches", i)}
		}
	}, nil
}

// blocks reads the blocks of an Avro array or map, calling item per item.
func (a *avroValues) blocks(r *avro.Reader, item avroFn) error {
	for {
		n := r.ReadLong()
		if r.Error != nil {
			return readerErr(r)
		}
		if n == 0 {
			return nil
		}
		if n < 0 {
			n = -n
			r.SkipLong() // the block's size in bytes
		}
		if n > int64(a.limit) {
			return &fieldError{msg: fmt.Sprintf("truncated payload: a block of %d items does not fit the %d-byte Avro record", n, a.limit)}
		}
		for j := int64(0); j < n; j++ {
			if err := item(r); err != nil {
				return at(err, fmt.Sprintf("[%d]", j))
			}
			if r.Error != nil {
				return readerErr(r)
			}
		}
	}
}

func intFn(read func(*avro.Reader) int64, col types.Field, b array.Builder) (avroFn, error) {
	t := col.Type
	fits := func(v, lo, hi int64) error {
		if v < lo || v > hi {
			return &fieldError{msg: fmt.Sprintf("value %d does not fit column %s (%s)", v, col.Name, t)}
		}
		return nil
	}
	switch t.Root {
	case types.BigInt:
		ib := b.(*array.Int64Builder)
		return func(r *avro.Reader) error { ib.Append(read(r)); return nil }, nil
	case types.Int:
		ib := b.(*array.Int32Builder)
		return func(r *avro.Reader) error {
			v := read(r)
			if err := fits(v, math.MinInt32, math.MaxInt32); err != nil {
				return err
			}
			ib.Append(int32(v))
			return nil
		}, nil
	case types.SmallInt:
		ib := b.(*array.Int16Builder)
		return func(r *avro.Reader) error {
			v := read(r)
			if err := fits(v, math.MinInt16, math.MaxInt16); err != nil {
				return err
			}
			ib.Append(int16(v))
			return nil
		}, nil
	case types.TinyInt:
		ib := b.(*array.Int8Builder)
		return func(r *avro.Reader) error {
			v := read(r)
			if err := fits(v, math.MinInt8, math.MaxInt8); err != nil {
				return err
			}
			ib.Append(int8(v))
			return nil
		}, nil
	}
	return nil, fmt.Errorf("field %s: Avro int or long cannot fill column %s of type %s", col.Name, col.Name, t)
}

// timeFn reads a time of day in units of nanosPerUnit nanoseconds.
func timeFn(read func(*avro.Reader) int64, nanosPerUnit int64, col types.Field, b array.Builder) avroFn {
	t := col.Type
	b32, _ := b.(*array.Time32Builder)
	b64, _ := b.(*array.Time64Builder)
	return func(r *avro.Reader) error {
		v := read(r)
		if v < 0 || v >= 86_400_000_000_000/nanosPerUnit {
			return &fieldError{msg: fmt.Sprintf("value %d does not fit column %s (%s): not a time of day", v, col.Name, t)}
		}
		nanos := v * nanosPerUnit
		u, err := toUnit(nanos/1e9, nanos%1e9, t.Precision)
		if err != nil {
			return &fieldError{msg: fmt.Sprintf("value %d does not fit column %s (%s): %v", v, col.Name, t, err)}
		}
		if b32 != nil {
			b32.Append(arrow.Time32(u))
		} else {
			b64.Append(arrow.Time64(u))
		}
		return nil
	}
}

// timestampFn reads epoch milliseconds or microseconds.
func timestampFn(read func(*avro.Reader) int64, micros bool, col types.Field, b array.Builder) avroFn {
	t := col.Type
	tb := b.(*array.TimestampBuilder)
	// The common case: the column's unit is the value's.
	if micros && t.Precision > 3 && t.Precision <= 6 || !micros && t.Precision == 3 {
		return func(r *avro.Reader) error {
			v := read(r)
			if v < 0 && micros && v%1000 != 0 {
				return negativeSubMillis(v, col)
			}
			tb.Append(arrow.Timestamp(v))
			return nil
		}
	}
	return func(r *avro.Reader) error {
		v := read(r)
		var sec, nanos int64
		if micros {
			sec, nanos = v/1e6, (v%1e6)*1e3
			if nanos < 0 {
				sec--
				nanos += 1e9
			}
		} else {
			sec, nanos = millisToSecNanos(v)
		}
		u, err := toUnit(sec, nanos, t.Precision)
		if err != nil {
			return &fieldError{msg: fmt.Sprintf("value %d does not fit column %s (%s): %v", v, col.Name, t, err)}
		}
		if sec < 0 && nanos%1e6 != 0 {
			return negativeSubMillis(v, col)
		}
		tb.Append(arrow.Timestamp(u))
		return nil
	}
}

// negativeSubMillis refuses what the JSON path refuses: Fluss 0.9 cannot
// read back instants before 1970 with sub-millisecond digits.
func negativeSubMillis(v int64, col types.Field) error {
	return &fieldError{msg: fmt.Sprintf("value %d does not fit column %s (%s): before 1970 with sub-millisecond digits, which Fluss 0.9 cannot read back", v, col.Name, col.Type)}
}

// decimalFn reads Avro decimals (big-endian two's complement unscaled
// values) into a DECIMAL column of the same or a larger scale.
func decimalFn(read func(*avro.Reader) ([]byte, error), ls *avro.DecimalLogicalSchema, col types.Field, b array.Builder) (avroFn, error) {
	t := col.Type
	up := t.Scale - ls.Scale()
	if up < 0 {
		return nil, fmt.Errorf("field %s: Avro decimal(%d, %d) has more fractional digits than column %s of type %s", col.Name, ls.Precision(), ls.Scale(), col.Name, t)
	}
	db := b.(*array.Decimal128Builder)
	return func(r *avro.Reader) error {
		v, err := read(r)
		if err != nil {
			return err
		}
		n, ok := decimalFromBytes(v)
		if !ok || !n.FitsInPrecision(int32(t.Precision-up)) {
			return &fieldError{msg: fmt.Sprintf("decimal value does not fit column %s (%s)", col.Name, t)}
		}
		if up > 0 {
			n = n.IncreaseScaleBy(int32(up))
		}
		db.Append(n)
		return nil
	}, nil
}

func decimalFromBytes(v []byte) (decimal128.Num, bool) {
	if len(v) == 0 {
		return decimal128.Num{}, true
	}
	sign := byte(0)
	if v[0]&0x80 != 0 {
		sign = 0xff
	}
	if len(v) > 16 {
		for _, c := range v[:len(v)-16] {
			if c != sign {
				return decimal128.Num{}, false
			}
		}
		v = v[len(v)-16:]
		if v[0]&0x80 != sign&0x80 {
			return decimal128.Num{}, false
		}
	}
	var buf [16]byte
	for i := range 16 - len(v) {
		buf[i] = sign
	}
	copy(buf[16-len(v):], v)
	return decimal128.New(int64(binary.BigEndian.Uint64(buf[:8])), binary.BigEndian.Uint64(buf[8:])), true
}

// skip compiles reading past a value of s (a field without a column).
func (k *avroCompiler) skip(s avro.Schema) (avroFn, error) {
	a := k.a
	if r, ok := s.(*avro.RefSchema); ok {
		name := r.Schema().FullName()
		if fn, ok := k.skips[name]; ok {
			// A recursive type: call through the pointer set below.
			return func(r *avro.Reader) error { return (*fn)(r) }, nil
		}
		return k.skip(r.Schema())
	}
	switch s.Type() {
	case avro.Null:
		return func(*avro.Reader) error { return nil }, nil
	case avro.Boolean:
		return func(r *avro.Reader) error { r.SkipBool(); return nil }, nil
	case avro.Int, avro.Long, avro.Enum:
		return func(r *avro.Reader) error { r.SkipLong(); return nil }, nil
	case avro.Float:
		return func(r *avro.Reader) error { r.SkipFloat(); return nil }, nil
	case avro.Double:
		return func(r *avro.Reader) error { r.SkipDouble(); return nil }, nil
	case avro.String, avro.Bytes:
		return func(r *avro.Reader) error {
			n, err := a.readLen(r)
			if err != nil {
				return err
			}
			r.SkipNBytes(n)
			return nil
		}, nil
	case avro.Fixed:
		size := s.(*avro.FixedSchema).Size()
		return func(r *avro.Reader) error { r.SkipNBytes(size); return nil }, nil
	case avro.Array:
		item, err := k.skip(s.(*avro.ArraySchema).Items())
		if err != nil {
			return nil, err
		}
		return func(r *avro.Reader) error { return a.blocks(r, item) }, nil
	case avro.Map:
		val, err := k.skip(s.(*avro.MapSchema).Values())
		if err != nil {
			return nil, err
		}
		return func(r *avro.Reader) error {
			return a.blocks(r, func(r *avro.Reader) error {
				n, err := a.readLen(r)
				if err != nil {
					return err
				}
				r.SkipNBytes(n)
				return val(r)
			})
		}, nil
	case avro.Union:
		ts := s.(*avro.UnionSchema).Types()
		branches := make([]avroFn, len(ts))
		for i, bt := range ts {
			var err error
			if branches[i], err = k.skip(bt); err != nil {
				return nil, err
			}
		}
		return func(r *avro.Reader) error {
			i := r.ReadLong()
			if r.Error != nil {
				return readerErr(r)
			}
			if i < 0 || i >= int64(len(branches)) {
				return &fieldError{msg: fmt.Sprintf("union index %d is not one of the union's %d branches", i, len(branches))}
			}
			return branches[i](r)
		}, nil
	case avro.Record, avro.Error:
		rs := s.(*avro.RecordSchema)
		var self avroFn
		k.skips[rs.FullName()] = &self
		fields := make([]avroFn, len(rs.Fields()))
		for i, f := range rs.Fields() {
			var err error
			if fields[i], err = k.skip(f.Type()); err != nil {
				return nil, err
			}
		}
		self = func(r *avro.Reader) error {
			for _, f := range fields {
				if err := f(r); err != nil {
					return err
				}
			}
			return nil
		}
		return self, nil
	}
	return nil, fmt.Errorf("Avro type %s cannot be read", s.Type())
}
