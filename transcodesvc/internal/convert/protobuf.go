package convert

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/protoschema"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

// maxProtoSchemas bounds the writer schemas one converter keeps compiled
// readers for, as maxAvroDecoders does for Avro.
const maxProtoSchemas = 64

// protoValues decodes framed Protobuf values into the value columns of one
// converter. The wire format is walked with protowire and each field's
// value appended straight to its column's builder: no message is built.
// Each (schema id, message) is compiled once per converter.
type protoValues struct {
	topic    string
	fields   []types.Field
	builders []array.Builder

	schemas  map[int32]*schemas.Schema
	compiled map[int32]*protoSchema
	indexes  []int // the record's message indexes, reused
}

// protoSchema is one writer schema's compiled messages.
type protoSchema struct {
	err   error // the schema cannot be used: every record fails
	file  protoreflect.FileDescriptor
	first *protoReader            // message indexes [0], the common case
	other map[string]*protoReader // other message indexes, by their text
}

// protoReader is a message compiled against the value columns.
type protoReader struct {
	msg *pbMsg
	err error // the message does not fit the table
}

func newProtoValues(topic string, fields []types.Field, builders []array.Builder) *protoValues {
	return &protoValues{topic: topic, fields: fields, builders: builders, compiled: map[int32]*protoSchema{}}
}

func (v *protoValues) decodeValue(value []byte) error {
	if value == nil {
		return &fieldError{msg: "record value is null (a tombstone); a Protobuf topic needs a framed Protobuf message"}
	}
	id, payload, err := schemas.Frame(value)
	if err != nil {
		return &fieldError{msg: err.Error()}
	}
	ps, err := v.schema(id)
	if err != nil {
		return err
	}
	idx, body, err := schemas.MessageIndexes(v.indexes[:0], payload)
	v.indexes = idx
	if err != nil {
		return &fieldError{msg: err.Error()}
	}
	r := v.reader(id, ps, idx)
	if r.err != nil {
		return r.err
	}
	return r.msg.decode(body)
}

// schema is the compiled state of writer schema id.
func (v *protoValues) schema(id int32) (*protoSchema, error) {
	if ps, ok := v.compiled[id]; ok {
		return ps, ps.err
	}
	s, ok := v.schemas[id]
	if !ok {
		return nil, &fieldError{msg: fmt.Sprintf("unknown schema id %d: the schema registry has no schema with this id", id)}
	}
	if len(v.compiled) >= maxProtoSchemas {
		clear(v.compiled)
	}
	ps := &protoSchema{}
	switch {
	case s.Type != schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF:
		ps.err = &fieldError{msg: fmt.Sprintf("schema id %d is of type %s, not Protobuf: topic %s takes Protobuf values", id, s.TypeName(), v.topic)}
	case s.Err != nil:
		ps.err = &fieldError{msg: s.Err.Error()}
	default:
		ps.file = s.Proto
	}
	v.compiled[id] = ps
	return ps, ps.err
}

// reader is the compiled message the indexes name.
func (v *protoValues) reader(id int32, ps *protoSchema, idx []int) *protoReader {
	if len(idx) == 1 && idx[0] == 0 {
		if ps.first == nil {
			ps.first = v.compile(id, ps.file, idx)
		}
		return ps.first
	}
	key := indexText(idx)
	if r, ok := ps.other[key]; ok {
		return r
	}
	if ps.other == nil || len(ps.other) >= maxProtoSchemas {
		ps.other = map[string]*protoReader{}
	}
	r := v.compile(id, ps.file, idx)
	ps.other[key] = r
	return r
}

func indexText(idx []int) string {
	var b strings.Builder
	for i, x := range idx {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

func (v *protoValues) compile(id int32, file protoreflect.FileDescriptor, idx []int) *protoReader {
	md, err := protoschema.MessageAt(file, idx)
	if err != nil {
		return &protoReader{err: &fieldError{msg: fmt.Sprintf("schema id %d: %v", id, err)}}
	}
	msg, err := compilePbMsg(md, v.fields, v.builders)
	if err != nil {
		return &protoReader{err: &fieldError{msg: fmt.Sprintf("schema id %d does not fit topic %s: message %s: %v", id, v.topic, md.FullName(), err)}}
	}
	return &protoReader{msg: msg}
}

// pbOcc is one occurrence of a field on the wire: a varint or fixed value
// in v, or the bytes of a length-delimited one in b (a sub-slice of the
// record's value).
type pbOcc struct {
	v  uint64
	b  []byte
	wt protowire.Type
}

// consumeOcc reads one value of wire type wt (checked by the caller) from
// b; l < 0 is protowire's error.
func consumeOcc(wt protowire.Type, b []byte) (v pbOcc, l int) {
	v.wt = wt
	switch wt {
	case protowire.VarintType:
		v.v, l = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var x uint32
		x, l = protowire.ConsumeFixed32(b)
		v.v = uint64(x)
	case protowire.Fixed64Type:
		v.v, l = protowire.ConsumeFixed64(b)
	default:
		v.b, l = protowire.ConsumeBytes(b)
	}
	return v, l
}

// last is the occurrence that counts for a singular scalar (the last one,
// as Protobuf parsers take it); the zero occurrence, which every kind reads
// as its default value, when there is none.
func last(occ []pbOcc) pbOcc {
	if len(occ) == 0 {
		return pbOcc{}
	}
	return occ[len(occ)-1]
}

// pbValue appends one value made of a field's occurrences to a builder:
// the last one for scalars, all of them merged for messages. No
// occurrence at all gives the default value.
type pbValue func(occ []pbOcc) error

// pbSlot is one field of a message that fills a column. While a message
// is read it collects the field's occurrences.
type pbSlot struct {
	name     string
	wt       protowire.Type // the wire type of one value
	packable bool           // a repeated number: also packed (length-delimited)
	keepAll  bool           // repeated, map or message: every occurrence counts
	occ      []pbOcc
	write    func(occ []pbOcc) error
}

// pbMsg is a message compiled against the columns it fills (the table's
// value columns, or a ROW's fields).
type pbMsg struct {
	slotOf  []int32 // by field number: slot index + 1, 0 for fields without a column
	slotMap map[protowire.Number]int32
	slots   []*pbSlot
	nulls   []array.Builder // columns without a field
}

// maxDenseFieldNumber bounds the field numbers looked up by slice; larger
// ones (rare) go through a map.
const maxDenseFieldNumber = 1024

func compilePbMsg(md protoreflect.MessageDescriptor, cols []types.Field, bs []array.Builder) (*pbMsg, error) {
	m := &pbMsg{}
	for i, c := range cols {
		fd := md.Fields().ByName(protoreflect.Name(c.Name))
		if fd == nil {
			if !c.Type.Nullable {
				return nil, fmt.Errorf("column %s is %s but the message has no field %s", c.Name, c.Type, c.Name)
			}
			m.nulls = append(m.nulls, bs[i])
			continue
		}
		s, err := compilePbSlot(fd, c, bs[i])
		if err != nil {
			return nil, err
		}
		m.slots = append(m.slots, s)
		n, slot := fd.Number(), int32(len(m.slots))
		if n <= maxDenseFieldNumber {
			for len(m.slotOf) <= int(n) {
				m.slotOf = append(m.slotOf, 0)
			}
			m.slotOf[n] = slot
		} else {
			if m.slotMap == nil {
				m.slotMap = map[protowire.Number]int32{}
			}
			m.slotMap[n] = slot
		}
	}
	return m, nil
}

func (m *pbMsg) slot(n protowire.Number) *pbSlot {
	var i int32
	if n >= 0 && int(n) < len(m.slotOf) {
		i = m.slotOf[n]
	} else if m.slotMap != nil {
		i = m.slotMap[n]
	}
	if i == 0 {
		return nil
	}
	return m.slots[i-1]
}

// decode reads one message and appends its columns.
func (m *pbMsg) decode(b []byte) error {
	m.reset()
	if err := m.scan(b); err != nil {
		return err
	}
	return m.finish()
}

func (m *pbMsg) reset() {
	for _, s := range m.slots {
		s.occ = s.occ[:0]
	}
}

// scan collects the occurrences of the fields with a column; others are
// skipped. Scanning several encoded messages before finish merges them, as
// Protobuf merges a message field that occurs more than once.
func (m *pbMsg) scan(b []byte) error {
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return pbParseErr(n, "a field tag")
		}
		b = b[n:]
		s := m.slot(num)
		if s == nil {
			if n = protowire.ConsumeFieldValue(num, wt, b); n < 0 {
				return pbParseErr(n, fmt.Sprintf("field number %d", num))
			}
			b = b[n:]
			continue
		}
		o := pbOcc{wt: wt}
		switch wt {
		case protowire.VarintType:
			o.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			o.v = uint64(v)
		case protowire.Fixed64Type:
			o.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			o.b, n = protowire.ConsumeBytes(b)
		default:
			return &fieldError{msg: fmt.Sprintf("malformed Protobuf: field %s has wire type %d, which its type is never written with", s.name, wt)}
		}
		if n < 0 {
			return at(pbParseErr(n, "the value"), s.name)
		}
		b = b[n:]
		if wt != s.wt && !(s.packable && wt == protowire.BytesType) {
			return &fieldError{msg: fmt.Sprintf("malformed Protobuf: field %s has wire type %d, its type is written with wire type %d", s.name, wt, s.wt)}
		}
		if s.keepAll || len(s.occ) == 0 {
			s.occ = append(s.occ, o)
		} else {
			s.occ[0] = o
		}
	}
	return nil
}

// finish appends the collected fields to their columns and NULL to the
// columns without a field.
func (m *pbMsg) finish() error {
	for _, s := range m.slots {
		if err := s.write(s.occ); err != nil {
			return at(err, s.name)
		}
	}
	for _, b := range m.nulls {
		b.AppendNull()
	}
	return nil
}

func pbParseErr(n int, what string) error {
	err := protowire.ParseError(n)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &fieldError{msg: fmt.Sprintf("truncated payload: the Protobuf message ends inside %s", what)}
	}
	return &fieldError{msg: fmt.Sprintf("malformed Protobuf: %s: %v", what, err)}
}

// wireType is how one value of kind k is written.
func wireType(k protoreflect.Kind) (protowire.Type, bool) {
	switch k {
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return protowire.VarintType, true
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type, true
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type, true
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType, true
	}
	return 0, false // groups
}

func pbTypeErr(fd protoreflect.FieldDescriptor, col string, t types.DataType) error {
	what := fd.Kind().String()
	switch {
	case fd.IsMap():
		what = "map"
	case fd.Kind() == protoreflect.MessageKind:
		what = string(fd.Message().FullName())
	case fd.Kind() == protoreflect.EnumKind:
		what = "enum " + string(fd.Enum().FullName())
	}
	if fd.IsList() {
		what = "repeated " + what
	}
	return fmt.Errorf("field %s: Protobuf %s cannot fill column %s of type %s", fd.Name(), what, col, t)
}

func compilePbSlot(fd protoreflect.FieldDescriptor, col types.Field, b array.Builder) (*pbSlot, error) {
	t := col.Type
	s := &pbSlot{name: string(fd.Name())}
	switch {
	case fd.IsMap():
		if t.Root != types.Map {
			return nil, pbTypeErr(fd, col.Name, t)
		}
		w, err := pbMap(fd, col, b.(*array.MapBuilder))
		if err != nil {
			return nil, err
		}
		s.wt, s.keepAll, s.write = protowire.BytesType, true, w
		return s, nil
	case fd.IsList():
		if t.Root != types.Array {
			return nil, pbTypeErr(fd, col.Name, t)
		}
		lb := b.(*array.ListBuilder)
		elem, err := pbElem(fd, types.Field{Name: col.Name + "[]", Type: *t.Element}, lb.ValueBuilder())
		if err != nil {
			return nil, err
		}
		wt, _ := wireType(fd.Kind())
		s.wt, s.keepAll = wt, true
		s.packable = wt != protowire.BytesType
		var one [1]pbOcc
		s.write = func(occ []pbOcc) error {
			lb.Append(true)
			n := 0
			for _, o := range occ {
				if o.wt != protowire.BytesType || !s.packable {
					if err := elem(append(one[:0], o)); err != nil {
						return at(err, fmt.Sprintf("[%d]", n))
					}
					n++
					continue
				}
				// Packed: the values one after another, without tags.
				for p := o.b; len(p) > 0; n++ {
					e := pbOcc{wt: wt}
					var l int
					switch wt {
					case protowire.VarintType:
						e.v, l = protowire.ConsumeVarint(p)
					case protowire.Fixed32Type:
						var v uint32
						v, l = protowire.ConsumeFixed32(p)
						e.v = uint64(v)
					default:
						e.v, l = protowire.ConsumeFixed64(p)
					}
					if l < 0 {
						return pbParseErr(l, fmt.Sprintf("packed element %d", n))
					}
					p = p[l:]
					if err := elem(append(one[:0], e)); err != nil {
						return at(err, fmt.Sprintf("[%d]", n))
					}
				}
			}
			return nil
		}
		return s, nil
	}
	if !t.Nullable && protoschema.PresenceOf(fd) == protoschema.Declared {
		return nil, fmt.Errorf("field %s: declared with presence (optional, a wrapper or in a oneof), it may be absent, but column %s is %s", fd.Name(), col.Name, t)
	}
	elem, err := pbElem(fd, col, b)
	if err != nil {
		return nil, err
	}
	s.wt, _ = wireType(fd.Kind())
	s.keepAll = fd.Kind() == protoreflect.MessageKind
	presence := fd.HasPresence()
	s.write = func(occ []pbOcc) error {
		if len(occ) == 0 && presence {
			if !t.Nullable {
				return &fieldError{msg: fmt.Sprintf("the field is absent but column %s is %s", col.Name, t)}
			}
			b.AppendNull()
			return nil
		}
		return elem(occ)
	}
	return s, nil
}

// pbElem compiles one value of fd's kind (ignoring whether it is
// repeated) filling column col through b. Whether it fits at all is
// protoschema's rule table; this picks the conversion.
func pbElem(fd protoreflect.FieldDescriptor, col types.Field, b array.Builder) (pbValue, error) {
	t := col.Type
	bad := func() (pbValue, error) { return nil, pbTypeErr(fd, col.Name, t) }
	v, wrapped := protoschema.ValueTypeOf(fd)
	if protoschema.FitOf(v, t.Root) == protoschema.NoFit {
		return bad()
	}
	if wrapped {
		return pbWrapper(fd, col, b)
	}
	switch v {
	case protoschema.Bool:
		bb := b.(*array.BooleanBuilder)
		return func(occ []pbOcc) error { bb.Append(last(occ).v != 0); return nil }, nil

	case protoschema.Int32, protoschema.Uint32, protoschema.Int64, protoschema.Uint64:
		put, ok := pbInt(col, b)
		if !ok {
			return bad()
		}
		read := pbIntReader(fd.Kind())
		return func(occ []pbOcc) error {
			v, err := read(last(occ).v)
			if err != nil {
				return err
			}
			return put(v)
		}, nil

	case protoschema.Enum:
		if put, ok := pbInt(col, b); ok {
			return func(occ []pbOcc) error { return put(int64(int32(last(occ).v))) }, nil
		}
		values := fd.Enum().Values()
		names := make(map[int32][]byte, values.Len())
		for i := range values.Len() {
			ev := values.Get(i)
			if _, dup := names[int32(ev.Number())]; !dup { // an alias keeps the first name
				names[int32(ev.Number())] = []byte(ev.Name())
			}
		}
		sw := &stringWriter{t: t, b: b.(*array.StringBuilder)}
		enum := fd.Enum().FullName()
		return func(occ []pbOcc) error {
			n := int32(last(occ).v)
			name, ok := names[n]
			if !ok {
				return &fieldError{msg: fmt.Sprintf("enum value %d is not a value of %s, so it has no name for column %s (%s)", n, enum, col.Name, t)}
			}
			return sw.appendBytes(name)
		}, nil

	case protoschema.Float:
		if t.Root == types.Double {
			fb := b.(*array.Float64Builder)
			return func(occ []pbOcc) error { fb.Append(float64(math.Float32frombits(uint32(last(occ).v)))); return nil }, nil
		}
		fb := b.(*array.Float32Builder)
		return func(occ []pbOcc) error { fb.Append(math.Float32frombits(uint32(last(occ).v))); return nil }, nil

	case protoschema.Double:
		fb := b.(*array.Float64Builder)
		return func(occ []pbOcc) error { fb.Append(math.Float64frombits(last(occ).v)); return nil }, nil

	case protoschema.String:
		sw := &stringWriter{t: t, b: b.(*array.StringBuilder)}
		return func(occ []pbOcc) error {
			v := last(occ).b
			if !utf8.Valid(v) {
				return &fieldError{msg: fmt.Sprintf("string is not valid UTF-8 but column %s is %s", col.Name, t)}
			}
			return sw.appendBytes(v)
		}, nil

	case protoschema.Bytes:
		if t.Root == types.Binary {
			fb := b.(*array.FixedSizeBinaryBuilder)
			return func(occ []pbOcc) error {
				v := last(occ).b
				if len(v) != t.Length {
					return &fieldError{msg: fmt.Sprintf("%d bytes do not fit column %s (%s), which needs exactly %d", len(v), col.Name, t, t.Length)}
				}
				fb.Append(v)
				return nil
			}, nil
		}
		bb := b.(*array.BinaryBuilder)
		return func(occ []pbOcc) error {
			v := last(occ).b
			if v == nil {
				v = []byte{} // empty, not NULL
			}
			bb.Append(v)
			return nil
		}, nil

	case protoschema.Timestamp:
		return pbTimestamp(col, b.(*array.TimestampBuilder)), nil
	case protoschema.Decimal:
		return pbDecimal(col, b.(*array.Decimal128Builder)), nil
	case protoschema.Date:
		return pbDate(col, b.(*array.Date32Builder)), nil
	case protoschema.TimeOfDay:
		return pbTimeOfDay(col, b), nil
	case protoschema.Message:
		return pbRow(fd, col, b.(*array.StructBuilder))
	}
	return bad()
}

// pbIntReader turns a varint or fixed value of an integer kind into the
// number it is.
func pbIntReader(k protoreflect.Kind) func(v uint64) (int64, error) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sfixed32Kind:
		return func(v uint64) (int64, error) { return int64(int32(v)), nil }
	case protoreflect.Sint32Kind:
		return func(v uint64) (int64, error) { return int64(int32(protowire.DecodeZigZag(uint64(uint32(v))))), nil }
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return func(v uint64) (int64, error) { return int64(uint32(v)), nil }
	case protoreflect.Sint64Kind:
		return func(v uint64) (int64, error) { return protowire.DecodeZigZag(v), nil }
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return func(v uint64) (int64, error) {
			if v > math.MaxInt64 {
				return 0, &fieldError{msg: fmt.Sprintf("value %d does not fit a signed 64-bit column", v)}
			}
			return int64(v), nil
		}
	}
	return func(v uint64) (int64, error) { return int64(v), nil } // int64, sfixed64
}

// pbInt appends integers to a TINYINT to BIGINT column, checking its range.
func pbInt(col types.Field, b array.Builder) (func(int64) error, bool) {
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
		return func(v int64) error { ib.Append(v); return nil }, true
	case types.Int:
		return narrowed(b.(*array.Int32Builder).Append, math.MinInt32, math.MaxInt32, fits), true
	case types.SmallInt:
		return narrowed(b.(*array.Int16Builder).Append, math.MinInt16, math.MaxInt16, fits), true
	case types.TinyInt:
		return narrowed(b.(*array.Int8Builder).Append, math.MinInt8, math.MaxInt8, fits), true
	}
	return nil, false
}

// narrowed appends a value to a narrower integer column once it fits.
func narrowed[T int8 | int16 | int32](appendTo func(T), lo, hi int64, fits func(v, lo, hi int64) error) func(int64) error {
	return func(v int64) error {
		if err := fits(v, lo, hi); err != nil {
			return err
		}
		appendTo(T(v))
		return nil
	}
}

// pbWrapper compiles a google.protobuf wrapper (Int64Value, ...): its
// field "value" filling the column.
func pbWrapper(fd protoreflect.FieldDescriptor, col types.Field, b array.Builder) (pbValue, error) {
	inner := fd.Message().Fields().ByName("value")
	elem, err := pbElem(inner, col, b)
	if err != nil {
		return nil, fmt.Errorf("field %s: Protobuf %s cannot fill column %s of type %s", fd.Name(), fd.Message().FullName(), col.Name, col.Type)
	}
	wt, _ := wireType(inner.Kind())
	var one [1]pbOcc
	return func(occ []pbOcc) error {
		found, err := pbLastField(occ, 1, wt, &one[0])
		if err != nil {
			return err
		}
		if !found {
			return elem(nil) // a wrapper without its value holds the default
		}
		return elem(one[:])
	}, nil
}

// pbRow compiles a message filling a ROW by field name.
func pbRow(fd protoreflect.FieldDescriptor, col types.Field, sb *array.StructBuilder) (pbValue, error) {
	t := col.Type
	bs := make([]array.Builder, len(t.Fields))
	for i := range bs {
		bs[i] = sb.FieldBuilder(i)
	}
	sub, err := compilePbMsg(fd.Message(), t.Fields, bs)
	if err != nil {
		return nil, fmt.Errorf("field %s: %w", fd.Name(), err)
	}
	return func(occ []pbOcc) error {
		sb.Append(true)
		sub.reset()
		for _, o := range occ {
			if err := sub.scan(o.b); err != nil {
				return err
			}
		}
		return sub.finish()
	}, nil
}

// pbLastField reads the last field num of the merged messages occ into
// into, for the small well-known messages; false when there is none.
func pbLastField(occ []pbOcc, num protowire.Number, want protowire.Type, into *pbOcc) (bool, error) {
	found := false
	for _, o := range occ {
		b := o.b
		for len(b) > 0 {
			n, wt, l := protowire.ConsumeTag(b)
			if l < 0 {
				return false, pbParseErr(l, "a field tag")
			}
			b = b[l:]
			if n != num {
				if l = protowire.ConsumeFieldValue(n, wt, b); l < 0 {
					return false, pbParseErr(l, fmt.Sprintf("field number %d", n))
				}
				b = b[l:]
				continue
			}
			if wt != want {
				return false, &fieldError{msg: fmt.Sprintf("malformed Protobuf: field number %d has wire type %d, its type is written with wire type %d", n, wt, want)}
			}
			v, l := consumeOcc(wt, b)
			if l < 0 {
				return false, pbParseErr(l, fmt.Sprintf("field number %d", n))
			}
			b = b[l:]
			*into, found = v, true
		}
	}
	return found, nil
}

// pbTimestamp reads google.protobuf.Timestamp (seconds and nanoseconds
// since the epoch) into a TIMESTAMP or TIMESTAMP_LTZ column.
func pbTimestamp(col types.Field, tb *array.TimestampBuilder) pbValue {
	t := col.Type
	return func(occ []pbOcc) error {
		var sec, nanos int64
		for _, o := range occ {
			b := o.b
			for len(b) > 0 {
				n, wt, l := protowire.ConsumeTag(b)
				if l < 0 {
					return pbParseErr(l, "a field tag")
				}
				b = b[l:]
				if (n == 1 || n == 2) && wt == protowire.VarintType {
					v, l := protowire.ConsumeVarint(b)
					if l < 0 {
						return pbParseErr(l, "a Timestamp field")
					}
					b = b[l:]
					if n == 1 {
						sec = int64(v)
					} else {
						nanos = int64(int32(v))
					}
					continue
				}
				if n == 1 || n == 2 {
					return &fieldError{msg: fmt.Sprintf("malformed Protobuf: Timestamp field %d has wire type %d, not a varint", n, wt)}
				}
				if l = protowire.ConsumeFieldValue(n, wt, b); l < 0 {
					return pbParseErr(l, fmt.Sprintf("field number %d", n))
				}
				b = b[l:]
			}
		}
		if nanos < 0 || nanos >= 1e9 {
			return &fieldError{msg: fmt.Sprintf("Timestamp nanos %d is not between 0 and 999999999", nanos)}
		}
		u, err := toUnit(sec, nanos, t.Precision)
		if err != nil {
			return &fieldError{msg: fmt.Sprintf("Timestamp %ds %dns does not fit column %s (%s): %v", sec, nanos, col.Name, t, err)}
		}
		if sec < 0 && nanos%1e6 != 0 {
			return &fieldError{msg: fmt.Sprintf("Timestamp %ds %dns does not fit column %s (%s): before 1970 with sub-millisecond digits, which Fluss 0.9 cannot read back", sec, nanos, col.Name, t)}
		}
		tb.Append(arrow.Timestamp(u))
		return nil
	}
}

// pbEntry is one map entry as read: its key and the range of its value's
// occurrences in the map's scratch list.
type pbEntry struct {
	key          pbOcc
	valLo, valHi int
}

// pbMap compiles map<K, V> into a MAP column. Of repeated keys the last
// entry wins, as Protobuf parsers keep it.
func pbMap(fd protoreflect.FieldDescriptor, col types.Field, mb *array.MapBuilder) (func([]pbOcc) error, error) {
	t := col.Type
	kfd, vfd := fd.MapKey(), fd.MapValue()
	key, err := pbElem(kfd, types.Field{Name: col.Name + " (key)", Type: *t.Key}, mb.KeyBuilder())
	if err != nil {
		return nil, err
	}
	val, err := pbElem(vfd, types.Field{Name: col.Name + " (value)", Type: *t.Value}, mb.ItemBuilder())
	if err != nil {
		return nil, err
	}
	kwt, _ := wireType(kfd.Kind())
	vwt, _ := wireType(vfd.Kind())
	valueIsMessage := vfd.Kind() == protoreflect.MessageKind
	var entries []pbEntry
	var vals []pbOcc
	var seen map[string]bool
	var one [1]pbOcc
	return func(occ []pbOcc) error {
		entries, vals = entries[:0], vals[:0]
		for _, o := range occ {
			e := pbEntry{valLo: len(vals)}
			b := o.b
			for len(b) > 0 {
				n, wt, l := protowire.ConsumeTag(b)
				if l < 0 {
					return pbParseErr(l, "a map entry tag")
				}
				b = b[l:]
				if n != 1 && n != 2 {
					if l = protowire.ConsumeFieldValue(n, wt, b); l < 0 {
						return pbParseErr(l, "a map entry")
					}
					b = b[l:]
					continue
				}
				want := kwt
				if n == 2 {
					want = vwt
				}
				if wt != want {
					return &fieldError{msg: fmt.Sprintf("malformed Protobuf: map entry field %d has wire type %d, its type is written with wire type %d", n, wt, want)}
				}
				v, l := consumeOcc(wt, b)
				if l < 0 {
					return pbParseErr(l, "a map entry")
				}
				b = b[l:]
				switch {
				case n == 1:
					e.key = v
				case valueIsMessage || len(vals) == e.valLo:
					vals = append(vals, v)
				default:
					vals[len(vals)-1] = v
				}
			}
			e.valHi = len(vals)
			entries = append(entries, e)
		}
		// Drop every entry whose key comes again later.
		keep := entries[:0]
		if len(entries) <= 16 {
			for i, e := range entries {
				later := false
				for _, f := range entries[i+1:] {
					if f.key.v == e.key.v && bytes.Equal(f.key.b, e.key.b) {
						later = true
						break
					}
				}
				if !later {
					keep = append(keep, e)
				}
			}
		} else {
			if seen == nil {
				seen = map[string]bool{}
			}
			clear(seen)
			for i := len(entries) - 1; i >= 0; i-- {
				e := entries[i]
				k := strconv.FormatUint(e.key.v, 36) + ":" + string(e.key.b)
				if seen[k] {
					entries[i].valLo = -1
					continue
				}
				seen[k] = true
			}
			for _, e := range entries {
				if e.valLo >= 0 {
					keep = append(keep, e)
				}
			}
		}
		mb.Append(true)
		for _, e := range keep {
			if err := key(append(one[:0], e.key)); err != nil {
				return err
			}
			if err := val(vals[e.valLo:e.valHi]); err != nil {
				return err
			}
		}
		return nil
	}, nil
}
