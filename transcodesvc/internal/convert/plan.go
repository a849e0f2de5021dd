// Package convert turns the records of a decoded Kafka batch into one Arrow
// record batch with a Fluss table's schema, following the topic's column
// mapping: JSON values are decoded field by field against the schema, raw
// and string values fill a single column, and the record key, timestamp and
// headers can each fill a column of their own.
package convert

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// source is where a column's values come from.
type source uint8

const (
	srcJSONField source = iota // the JSON object's, Avro record's or Protobuf message's field with the column's name
	srcValue                   // the whole value (RAW, STRING)
	srcKey
	srcTimestamp
	srcHeaders
	srcNone // nothing maps onto it: always null
)

// headersShape is how a headers column holds the record headers.
type headersShape uint8

const (
	headersMap  headersShape = iota + 1 // MAP<STRING, BYTES>
	headersList                         // ARRAY<ROW<key STRING, value BYTES>>
)

// Plan is a topic mapping compiled once: the Arrow schema and, per column,
// where its values come from. It is immutable and shared by every Converter
// built from it.
type Plan struct {
	MappingID string
	Topic     string
	Columns   []types.Field
	Schema    *arrow.Schema
	// LogRecords is how the table's log batches are compressed
	// (Compression and ZSTDLevel; see Converter.Append).
	LogRecords logbatch.Options

	format        catalogv1.ValueFormat
	rejectUnknown bool
	sources       []source
	headers       headersShape
	// jsonFields are the columns a JSON value fills, in table order.
	jsonFields []int
	// single: the framed value is one Avro or JSON value filling the one
	// column of jsonFields, not a record of fields (the key plan of a
	// primary-key table whose kafka.key.column takes framed keys).
	single bool
}

// Compile validates a topic mapping and compiles it into a Plan. Its errors
// describe a mapping Ferry cannot serve; they are not the records' fault.
func Compile(m *catalogv1.TopicMapping) (*Plan, error) {
	if m == nil {
		return nil, errors.New("no topic mapping")
	}
	cm := m.GetMapping()
	if cm == nil {
		return nil, fmt.Errorf("topic %s: mapping has no column mapping", m.GetTopic())
	}
	if len(m.GetColumns()) == 0 {
		return nil, fmt.Errorf("topic %s: table has no columns", m.GetTopic())
	}
	p := &Plan{MappingID: m.GetMappingId(), Topic: m.GetTopic(), format: cm.GetValueFormat()}
	comp, ok := logbatch.CompressionOf(m.GetArrowCompression())
	if !ok {
		return nil, fmt.Errorf("topic %s: arrow compression %v is not supported", p.Topic, m.GetArrowCompression())
	}
	p.LogRecords = logbatch.Options{Compression: comp, ZSTDLevel: int(m.GetArrowCompressionLevel())}
	if err := p.LogRecords.Validate(); err != nil {
		return nil, fmt.Errorf("topic %s: %w", p.Topic, err)
	}
	switch cm.GetUnknownFields() {
	case catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT:
		p.rejectUnknown = true
	case catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_UNSPECIFIED:
	default:
		return nil, fmt.Errorf("topic %s: unknown_fields policy %v is not supported", p.Topic, cm.GetUnknownFields())
	}

	index := map[string]int{}
	for i, c := range m.GetColumns() {
		t, err := TypeFromProto(c.GetType())
		if err != nil {
			return nil, fmt.Errorf("topic %s: column %s: %w", p.Topic, c.GetName(), err)
		}
		if _, dup := index[c.GetName()]; dup {
			return nil, fmt.Errorf("topic %s: column %s appears twice", p.Topic, c.GetName())
		}
		index[c.GetName()] = i
		p.Columns = append(p.Columns, types.Field{Name: c.GetName(), Type: t})
	}
	schema, err := types.ArrowSchema(p.Columns)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", p.Topic, err)
	}
	p.Schema = schema

	p.sources = make([]source, len(p.Columns))
	for i := range p.sources {
		p.sources[i] = srcNone
	}
	assign := func(role, name string, src source, check func(types.DataType) error) error {
		if name == "" {
			return nil
		}
		i, ok := index[name]
		if !ok {
			return fmt.Errorf("topic %s: %s column %q is not a column of the table", p.Topic, role, name)
		}
		if p.sources[i] != srcNone {
			return fmt.Errorf("topic %s: column %q is mapped twice", p.Topic, name)
		}
		if err := check(p.Columns[i].Type); err != nil {
			return fmt.Errorf("topic %s: %s column %q: %w", p.Topic, role, name, err)
		}
		p.sources[i] = src
		return nil
	}
	if err := assign("key", cm.GetKeyColumn(), srcKey, rootIn("BYTES or STRING", types.Bytes, types.String)); err != nil {
		return nil, err
	}
	if err := assign("timestamp", cm.GetTimestampColumn(), srcTimestamp, func(t types.DataType) error {
		if err := rootIn("TIMESTAMP_LTZ(p), TIMESTAMP(p) or BIGINT", types.TimestampLTZ, types.TimestampNTZ, types.BigInt)(t); err != nil {
			return err
		}
		if t.Root != types.BigInt && t.Precision < 3 {
			return fmt.Errorf("has type %s: precision below 3 would truncate Kafka's millisecond timestamps", t)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := assign("headers", cm.GetHeadersColumn(), srcHeaders, func(t types.DataType) error {
		var err error
		p.headers, err = headersShapeOf(t)
		return err
	}); err != nil {
		return nil, err
	}

	switch p.format {
	case catalogv1.ValueFormat_VALUE_FORMAT_JSON, catalogv1.ValueFormat_VALUE_FORMAT_AVRO, catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF,
		catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA:
		if vc := cm.GetValueColumn(); vc != "" {
			if p.format != catalogv1.ValueFormat_VALUE_FORMAT_AVRO && p.format != catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA {
				return nil, fmt.Errorf("topic %s: value_column %q is only for RAW and STRING values, and single framed Avro or JSON Schema values", p.Topic, vc)
			}
			// The decoders of the format check the column's type per
			// writer schema.
			if err := assign("value", vc, srcJSONField, func(types.DataType) error { return nil }); err != nil {
				return nil, err
			}
			p.single = true
			p.jsonFields = []int{index[vc]}
			break
		}
		for i := range p.sources {
			if p.sources[i] == srcNone {
				p.sources[i] = srcJSONField
				p.jsonFields = append(p.jsonFields, i)
			}
		}
		if len(p.jsonFields) == 0 {
			return nil, fmt.Errorf("topic %s: %v values need at least one column not taken by key, timestamp or headers", p.Topic, p.format)
		}
	case catalogv1.ValueFormat_VALUE_FORMAT_RAW:
		if err := assign("value", cm.GetValueColumn(), srcValue, rootIn("BYTES", types.Bytes)); err != nil {
			return nil, err
		}
	case catalogv1.ValueFormat_VALUE_FORMAT_STRING:
		if err := assign("value", cm.GetValueColumn(), srcValue, rootIn("STRING", types.String)); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("topic %s: value format %v is not supported", p.Topic, p.format)
	}
	if !p.Framed() && !p.isJSON() && cm.GetValueColumn() == "" {
		return nil, fmt.Errorf("topic %s: %v values need a value_column", p.Topic, p.format)
	}
	for i, s := range p.sources {
		if s == srcNone && !p.Columns[i].Type.Nullable {
			return nil, fmt.Errorf("topic %s: column %s is NOT NULL but nothing in a Kafka record maps onto it", p.Topic, p.Columns[i].Name)
		}
	}
	return p, nil
}

// CompileFramedKeys compiles how the framed keys of m are read when they
// fill its key column (kafka.key.column with kafka.key.format avro or
// json-schema): a plan of that column alone whose values are the keys (see
// Converter.UnframeKeys). It is nil when m's keys are not of that kind.
func CompileFramedKeys(m *catalogv1.TopicMapping) (*Plan, error) {
	cm := m.GetMapping()
	kc, f := cm.GetKeyColumn(), cm.GetKeyFormat()
	if kc == "" || (f != catalogv1.ValueFormat_VALUE_FORMAT_AVRO && f != catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA) {
		return nil, nil
	}
	km := &catalogv1.TopicMapping{Topic: m.GetTopic(), MappingId: m.GetMappingId(),
		Mapping: &catalogv1.ColumnMapping{ValueFormat: f, ValueColumn: kc}}
	for _, c := range m.GetColumns() {
		if c.GetName() == kc {
			km.Columns = append(km.Columns, c)
		}
	}
	p, err := Compile(km)
	if err != nil {
		return nil, fmt.Errorf("record keys: %w", err)
	}
	return p, nil
}

func rootIn(want string, roots ...types.Root) func(types.DataType) error {
	return func(t types.DataType) error {
		for _, r := range roots {
			if t.Root == r {
				return nil
			}
		}
		return fmt.Errorf("has type %s, want %s", t, want)
	}
}

func headersShapeOf(t types.DataType) (headersShape, error) {
	bad := fmt.Errorf("has type %s, want MAP<STRING, BYTES|STRING> or ARRAY<ROW<STRING, BYTES|STRING>>", t)
	value := func(v types.DataType) bool { return v.Root == types.Bytes || v.Root == types.String }
	switch t.Root {
	case types.Map:
		if t.Key.Root == types.String && value(*t.Value) {
			return headersMap, nil
		}
	case types.Array:
		e := t.Element
		if e.Root == types.Row && len(e.Fields) == 2 &&
			e.Fields[0].Type.Root == types.String && value(e.Fields[1].Type) {
			return headersList, nil
		}
	}
	return 0, bad
}

// TypeFromProto converts a catalog DataType into Ferry's type model and
// validates its parameters.
func TypeFromProto(pt *catalogv1.DataType) (types.DataType, error) {
	t, err := typeFromProto(pt, 0)
	if err != nil {
		return t, err
	}
	return t, t.Validate()
}

func typeFromProto(pt *catalogv1.DataType, depth int) (types.DataType, error) {
	if pt == nil {
		return types.DataType{}, errors.New("missing type")
	}
	if depth > 64 {
		return types.DataType{}, errors.New("type nested more than 64 levels")
	}
	root := pt.GetRoot()
	if root <= catalogv1.TypeRoot_TYPE_ROOT_UNSPECIFIED || root > catalogv1.TypeRoot_TYPE_ROOT_ROW {
		return types.DataType{}, fmt.Errorf("type root %v is not supported", root)
	}
	// The proto enum lists the roots in the order of types.Root.
	t := types.DataType{
		Root:      types.Root(root),
		Nullable:  pt.GetNullable(),
		Length:    int(pt.GetLength()),
		Precision: int(pt.GetPrecision()),
		Scale:     int(pt.GetScale()),
	}
	sub := func(p *catalogv1.DataType, what string) (*types.DataType, error) {
		s, err := typeFromProto(p, depth+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return &s, nil
	}
	var err error
	switch t.Root {
	case types.Array:
		t.Element, err = sub(pt.GetElement(), "element")
	case types.Map:
		if t.Key, err = sub(pt.GetKey(), "key"); err == nil {
			t.Value, err = sub(pt.GetValue(), "value")
		}
	case types.Row:
		seen := map[string]bool{}
		for _, f := range pt.GetFields() {
			if seen[f.GetName()] {
				return t, fmt.Errorf("ROW field %s appears twice", f.GetName())
			}
			seen[f.GetName()] = true
			ft, ferr := typeFromProto(f.GetType(), depth+1)
			if ferr != nil {
				return t, fmt.Errorf("field %s: %w", f.GetName(), ferr)
			}
			t.Fields = append(t.Fields, types.Field{Name: f.GetName(), Type: ft})
		}
	}
	return t, err
}
