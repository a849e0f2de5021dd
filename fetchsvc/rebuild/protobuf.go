package rebuild

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/protoschema"
)

// pbEnc appends the value at row of col in the wire form of one value of
// its field (no tag). A NULL reaches it only where Protobuf has no null (a
// list element, a map value): it writes the type's default value.
type pbEnc func(dst []byte, col arrow.Array, row int) ([]byte, error)

// protoValue writes a row's value columns as a framed Protobuf message of
// one registered schema.
type protoValue struct {
	header []byte // magic byte 0, the schema id, the message indexes
	msg    *pbMsgEnc
}

// pbMsgEnc writes the fields of a message that have a column, in field
// number order.
type pbMsgEnc struct {
	fields []pbFieldEnc
}

// pbFieldEnc is one field: its column (an index into the table's or a
// ROW's columns) and how it is written.
type pbFieldEnc struct {
	column int
	write  func(dst []byte, col arrow.Array, row int) ([]byte, error)
}

// WithProtobuf returns a plan that writes values as messages of file, the
// schema registered under id, framed as Schema Registry deserializers
// expect. The message is the file's first (message indexes [0]), the one
// the registry checks against the table. Every field takes the value
// column of its name; fields without one, and NULL columns, are left out.
func (p *Plan) WithProtobuf(id int32, file protoreflect.FileDescriptor) (*Plan, error) {
	v, err := p.newProtoValue(id, file, p.valueColumns)
	if err != nil {
		return nil, err
	}
	q := *p
	q.proto = v
	return &q, nil
}

// WithProtobufKey returns a plan that writes the primary key of a table
// without key column (see FramedKeys) as messages of file, registered
// under id, as WithProtobuf writes values.
func (p *Plan) WithProtobufKey(id int32, file protoreflect.FileDescriptor) (*Plan, error) {
	if p.pkKey == nil {
		return nil, fmt.Errorf("rebuild: key schema id %d: only a primary key is written as a Protobuf message", id)
	}
	v, err := p.newProtoValue(id, file, p.pkKey)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	q := *p
	q.keyProto = v
	return &q, nil
}

// newProtoValue compiles the first message of file, registered under id,
// over the columns at indexes cols.
func (p *Plan) newProtoValue(id int32, file protoreflect.FileDescriptor, cols []int) (*protoValue, error) {
	if file.Messages().Len() == 0 {
		return nil, fmt.Errorf("rebuild: schema id %d has no message", id)
	}
	md := file.Messages().Get(0)
	fs := make([]types.Field, len(cols))
	for n, i := range cols {
		fs[n] = p.columns[i]
	}
	msg, err := compilePbMsgEnc(md, fs)
	if err != nil {
		return nil, fmt.Errorf("rebuild: schema id %d (message %s) does not fit the table: %w", id, md.FullName(), err)
	}
	for n := range msg.fields {
		msg.fields[n].column = cols[msg.fields[n].column]
	}
	v := &protoValue{msg: msg}
	// Magic byte, the id, and 0: the message-index shorthand for [0].
	v.header = append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), 0)
	return v, nil
}

// appendProto appends the framed message of row.
func (v *protoValue) appendProto(dst []byte, rec arrow.RecordBatch, row int) ([]byte, error) {
	dst = append(dst, v.header...)
	return v.msg.append(dst, rec.Column, row)
}

func (m *pbMsgEnc) append(dst []byte, column func(int) arrow.Array, row int) ([]byte, error) {
	var err error
	for _, f := range m.fields {
		if dst, err = f.write(dst, column(f.column), row); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func compilePbMsgEnc(md protoreflect.MessageDescriptor, cols []types.Field) (*pbMsgEnc, error) {
	fds := make([]protoreflect.FieldDescriptor, 0, md.Fields().Len())
	for i := range md.Fields().Len() {
		fds = append(fds, md.Fields().Get(i))
	}
	slices.SortFunc(fds, func(a, b protoreflect.FieldDescriptor) int { return int(a.Number() - b.Number()) })
	m := &pbMsgEnc{}
	for _, fd := range fds {
		i := slices.IndexFunc(cols, func(c types.Field) bool { return c.Name == string(fd.Name()) })
		if i < 0 {
			continue
		}
		w, err := pbFieldWriter(fd, cols[i])
		if err != nil {
			return nil, err
		}
		m.fields = append(m.fields, pbFieldEnc{column: i, write: w})
	}
	return m, nil
}

func pbTypeErr(fd protoreflect.FieldDescriptor, col types.Field) error {
	what := fd.Kind().String()
	switch {
	case fd.IsMap():
		what = "map"
	case fd.Kind() == protoreflect.MessageKind:
		what = string(fd.Message().FullName())
	}
	if fd.IsList() {
		what = "repeated " + what
	}
	return fmt.Errorf("field %s: column %s of type %s cannot be written as Protobuf %s", fd.Name(), col.Name, col.Type, what)
}

// wireType is how one value of kind k is written.
func wireType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return protowire.BytesType
	}
	return protowire.VarintType
}

// pbFieldWriter compiles writing column col as field fd, tag included.
func pbFieldWriter(fd protoreflect.FieldDescriptor, col types.Field) (func([]byte, arrow.Array, int) ([]byte, error), error) {
	t := col.Type
	num := fd.Number()
	switch {
	case fd.IsMap():
		if t.Root != types.Map {
			return nil, pbTypeErr(fd, col)
		}
		kfd, vfd := fd.MapKey(), fd.MapValue()
		key, err := pbValueEnc(kfd, types.Field{Name: col.Name + " (key)", Type: *t.Key})
		if err != nil {
			return nil, err
		}
		val, err := pbValueEnc(vfd, types.Field{Name: col.Name + " (value)", Type: *t.Value})
		if err != nil {
			return nil, err
		}
		kwt, vwt := wireType(kfd.Kind()), wireType(vfd.Kind())
		return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
			if c.IsNull(row) {
				return dst, nil
			}
			m := c.(*array.Map)
			start, end := m.ValueOffsets(row)
			var err error
			for i := int(start); i < int(end); i++ {
				dst = protowire.AppendTag(dst, num, protowire.BytesType)
				dst, err = appendLenPrefixed(dst, func(dst []byte) ([]byte, error) {
					dst, err := key(protowire.AppendTag(dst, 1, kwt), m.Keys(), i)
					if err != nil || m.Items().IsNull(i) {
						return dst, err // a NULL value is left out: the default
					}
					return val(protowire.AppendTag(dst, 2, vwt), m.Items(), i)
				})
				if err != nil {
					return dst, err
				}
			}
			return dst, nil
		}, nil

	case fd.IsList():
		if t.Root != types.Array {
			return nil, pbTypeErr(fd, col)
		}
		elem, err := pbValueEnc(fd, types.Field{Name: col.Name + "[]", Type: *t.Element})
		if err != nil {
			return nil, err
		}
		wt := wireType(fd.Kind())
		packed := fd.IsPacked()
		return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
			if c.IsNull(row) {
				return dst, nil
			}
			l := c.(*array.List)
			start, end := l.ValueOffsets(row)
			if start == end {
				return dst, nil
			}
			values := l.ListValues()
			if packed {
				dst = protowire.AppendTag(dst, num, protowire.BytesType)
				return appendLenPrefixed(dst, func(dst []byte) ([]byte, error) {
					var err error
					for i := int(start); i < int(end); i++ {
						if dst, err = elem(dst, values, i); err != nil {
							return dst, err
						}
					}
					return dst, nil
				})
			}
			var err error
			for i := int(start); i < int(end); i++ {
				if dst, err = elem(protowire.AppendTag(dst, num, wt), values, i); err != nil {
					return dst, err
				}
			}
			return dst, nil
		}, nil
	}
	enc, err := pbValueEnc(fd, col)
	if err != nil {
		return nil, err
	}
	wt := wireType(fd.Kind())
	return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
		if c.IsNull(row) {
			return dst, nil // absent: NULL where the field has presence, else the default
		}
		return enc(protowire.AppendTag(dst, num, wt), c, row)
	}, nil
}

// appendLenPrefixed appends what fill appends, preceded by its length as a
// varint: fill writes in place, then its bytes move up by the length's size.
func appendLenPrefixed(dst []byte, fill func([]byte) ([]byte, error)) ([]byte, error) {
	start := len(dst)
	dst, err := fill(dst)
	if err != nil {
		return dst, err
	}
	n := len(dst) - start
	k := protowire.SizeVarint(uint64(n))
	dst = append(dst, make([]byte, k)...)
	copy(dst[start+k:], dst[start:start+n])
	protowire.AppendVarint(dst[start:start], uint64(n))
	return dst, nil
}

// pbValueEnc compiles one value of fd's kind (ignoring whether it is
// repeated) from a column of col's type. Whether the column fits the field
// at all is protoschema's rule table; this picks the conversion.
func pbValueEnc(fd protoreflect.FieldDescriptor, col types.Field) (pbEnc, error) {
	t := col.Type
	bad := func() (pbEnc, error) { return nil, pbTypeErr(fd, col) }
	v, wrapped := protoschema.ValueTypeOf(fd)
	if protoschema.FitOf(v, t.Root) == protoschema.NoFit {
		return bad()
	}
	if wrapped {
		inner := fd.Message().Fields().ByName("value")
		enc, err := pbValueEnc(inner, col)
		if err != nil {
			return nil, fmt.Errorf("field %s: column %s of type %s cannot be written as Protobuf %s", fd.Name(), col.Name, t, fd.Message().FullName())
		}
		wt := wireType(inner.Kind())
		return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
			return appendLenPrefixed(dst, func(dst []byte) ([]byte, error) {
				if c.IsNull(row) {
					return dst, nil
				}
				return enc(protowire.AppendTag(dst, 1, wt), c, row)
			})
		}, nil
	}
	k := fd.Kind()
	switch v {
	case protoschema.Bool:
		return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
			return protowire.AppendVarint(dst, protowire.EncodeBool(!c.IsNull(row) && c.(*array.Boolean).Value(row))), nil
		}, nil

	case protoschema.Int32, protoschema.Uint32, protoschema.Int64, protoschema.Uint64, protoschema.Enum:
		get, ok := intGetter(t.Root)
		if !ok {
			if v == protoschema.Enum {
				return pbEnumByName(fd, col), nil
			}
			return bad()
		}
		put := pbIntWriter(k)
		return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
			var v int64
			if !c.IsNull(row) {
				v = get(c, row)
			}
			dst, ok := put(dst, v)
			if !ok {
				return dst, fmt.Errorf("column %s: %d does not fit Protobuf %s", col.Name, v, k)
			}
			return dst, nil
		}, nil

	case protoschema.Float:
		if t.Root == types.Double {
			// Only a DOUBLE that is a float exactly goes back into one.
			return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
				var v float64
				if !c.IsNull(row) {
					v = c.(*array.Float64).Value(row)
				}
				f := float32(v)
				if float64(f) != v && !math.IsNaN(v) {
					return dst, fmt.Errorf("column %s: %v is not a Protobuf float exactly", col.Name, v)
				}
				return protowire.AppendFixed32(dst, math.Float32bits(f)), nil
			}, nil
		}
		return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
			var v float32
			if !c.IsNull(row) {
				v = c.(*array.Float32).Value(row)
			}
			return protowire.AppendFixed32(dst, math.Float32bits(v)), nil
		}, nil

	case protoschema.Double:
		return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
			var v float64
			if !c.IsNull(row) {
				v = c.(*array.Float64).Value(row)
			}
			return protowire.AppendFixed64(dst, math.Float64bits(v)), nil
		}, nil

	case protoschema.String:
		return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
			if c.IsNull(row) {
				return protowire.AppendVarint(dst, 0), nil
			}
			return protowire.AppendString(dst, c.(*array.String).Value(row)), nil
		}, nil

	case protoschema.Bytes:
		if t.Root == types.Binary {
			return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
				if c.IsNull(row) {
					return protowire.AppendVarint(dst, 0), nil
				}
				return protowire.AppendBytes(dst, c.(*array.FixedSizeBinary).Value(row)), nil
			}, nil
		}
		return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
			if c.IsNull(row) {
				return protowire.AppendVarint(dst, 0), nil
			}
			return protowire.AppendBytes(dst, c.(*array.Binary).Value(row)), nil
		}, nil

	case protoschema.Timestamp:
		ups := unitsPerSecond(t.Precision)
		return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
			if c.IsNull(row) {
				return protowire.AppendVarint(dst, 0), nil
			}
			v := int64(c.(*array.Timestamp).Value(row))
			sec, frac := v/ups, v%ups
			if frac < 0 {
				sec, frac = sec-1, frac+ups
			}
			return appendLenPrefixed(dst, func(dst []byte) ([]byte, error) {
				if sec != 0 {
					dst = protowire.AppendVarint(protowire.AppendTag(dst, 1, protowire.VarintType), uint64(sec))
				}
				if nanos := frac * (1e9 / ups); nanos != 0 {
					dst = protowire.AppendVarint(protowire.AppendTag(dst, 2, protowire.VarintType), uint64(nanos))
				}
				return dst, nil
			})
		}, nil
	case protoschema.Decimal:
		return pbDecimalEnc(col), nil
	case protoschema.Date:
		return pbDateEnc(col), nil
	case protoschema.TimeOfDay:
		return pbTimeOfDayEnc(col), nil
	case protoschema.Message:
		sub, err := compilePbMsgEnc(fd.Message(), t.Fields)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", fd.Name(), err)
		}
		return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
			return appendLenPrefixed(dst, func(dst []byte) ([]byte, error) {
				if c.IsNull(row) {
					return dst, nil // an empty message: the default
				}
				st := c.(*array.Struct)
				return sub.append(dst, st.Field, row)
			})
		}, nil
	}
	return bad()
}

// pbIntWriter appends v as an integer kind's wire value; false when v is
// out of the kind's range.
func pbIntWriter(k protoreflect.Kind) func(dst []byte, v int64) ([]byte, bool) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.EnumKind:
		return func(dst []byte, v int64) ([]byte, bool) {
			return protowire.AppendVarint(dst, uint64(v)), v >= math.MinInt32 && v <= math.MaxInt32
		}
	case protoreflect.Sint32Kind:
		return func(dst []byte, v int64) ([]byte, bool) {
			return protowire.AppendVarint(dst, protowire.EncodeZigZag(v)), v >= math.MinInt32 && v <= math.MaxInt32
		}
	case protoreflect.Sfixed32Kind:
		return func(dst []byte, v int64) ([]byte, bool) {
			return protowire.AppendFixed32(dst, uint32(v)), v >= math.MinInt32 && v <= math.MaxInt32
		}
	case protoreflect.Uint32Kind:
		return func(dst []byte, v int64) ([]byte, bool) {
			return protowire.AppendVarint(dst, uint64(v)), v >= 0 && v <= math.MaxUint32
		}
	case protoreflect.Fixed32Kind:
		return func(dst []byte, v int64) ([]byte, bool) {
			return protowire.AppendFixed32(dst, uint32(v)), v >= 0 && v <= math.MaxUint32
		}
	case protoreflect.Sint64Kind:
		return func(dst []byte, v int64) ([]byte, bool) {
			return protowire.AppendVarint(dst, protowire.EncodeZigZag(v)), true
		}
	case protoreflect.Sfixed64Kind:
		return func(dst []byte, v int64) ([]byte, bool) { return protowire.AppendFixed64(dst, uint64(v)), true }
	case protoreflect.Fixed64Kind:
		return func(dst []byte, v int64) ([]byte, bool) { return protowire.AppendFixed64(dst, uint64(v)), v >= 0 }
	case protoreflect.Uint64Kind:
		return func(dst []byte, v int64) ([]byte, bool) { return protowire.AppendVarint(dst, uint64(v)), v >= 0 }
	}
	return func(dst []byte, v int64) ([]byte, bool) { return protowire.AppendVarint(dst, uint64(v)), true } // int64
}

// pbEnumByName writes a STRING column as the number of the enum value of
// that name.
func pbEnumByName(fd protoreflect.FieldDescriptor, col types.Field) pbEnc {
	values := fd.Enum().Values()
	enum := fd.Enum().FullName()
	return func(dst []byte, c arrow.Array, row int) ([]byte, error) {
		if c.IsNull(row) {
			return protowire.AppendVarint(dst, 0), nil
		}
		name := c.(*array.String).Value(row)
		ev := values.ByName(protoreflect.Name(name))
		if ev == nil {
			return dst, fmt.Errorf("column %s: %q is not a value of the Protobuf enum %s", col.Name, name, enum)
		}
		return protowire.AppendVarint(dst, uint64(int64(ev.Number()))), nil
	}
}
