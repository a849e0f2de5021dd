// Package rebuild turns rows of a Fluss table back into Kafka records, per
// the topic's mapping (docs/mapping.md): the inverse of transcodesvc's
// conversion, for the read path (issue #14). The value is rebuilt in the
// table's value format (a JSON object of the value columns, framed or not,
// a framed Avro record or Protobuf message of them, or the raw or string
// column's bytes), and the key, timestamp and headers come from
// their mapped columns; a primary-key table without a key column gets its
// primary key as the key, as producers send it (kafka.key.format: a JSON
// object, or a framed Avro record, Protobuf message or JSON object), and
// a key column framed Avro or JSON Schema keys are served framed too.
package rebuild

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/recordbatch"
)

// Record is one rebuilt Kafka record, as services/recordbatch writes it;
// Rebuild leaves its OffsetDelta alone.
type Record = recordbatch.Record

// Header is one record header; a nil Value is a null one.
type Header = recordbatch.RecordHeader

// Plan is a topic mapping compiled for rebuilding. It is immutable.
type Plan struct {
	columns []types.Field
	format  catalogv1.ValueFormat
	// Column indexes; -1 when the part is not stored.
	key, timestamp, headers, value int
	// valueColumns are the columns a JSON value holds, in table order.
	valueColumns []int
	// pkKey are the primary-key columns whose JSON object is the key of a
	// primary-key table without a key column.
	pkKey []int
	// avro writes AVRO values; set by WithAvro.
	avro *avroValue
	// proto writes PROTOBUF values; set by WithProtobuf.
	proto *protoValue
	// jsonHeader frames JSON_SCHEMA values; set by WithJSONSchema.
	jsonHeader []byte
	// keyFormat is how keys are written (kafka.key.format); the framed
	// ones with keyAvro, keyProto or keyJSONHeader, set by WithAvroKey,
	// WithProtobufKey and WithJSONSchemaKey.
	keyFormat     catalogv1.ValueFormat
	keyAvro       *avroValue
	keyProto      *protoValue
	keyJSONHeader []byte
}

// Compile builds the plan of m with the table's columns.
func Compile(m *catalogv1.TopicMapping, columns []types.Field) (*Plan, error) {
	cm := m.GetMapping()
	if cm == nil {
		return nil, errors.New("rebuild: mapping has no column mapping")
	}
	p := &Plan{columns: columns, format: cm.GetValueFormat(), keyFormat: cm.GetKeyFormat(), key: -1, timestamp: -1, headers: -1, value: -1}
	index := func(role, name string) (int, error) {
		if name == "" {
			return -1, nil
		}
		i := slices.IndexFunc(columns, func(f types.Field) bool { return f.Name == name })
		if i < 0 {
			return -1, fmt.Errorf("rebuild: %s column %q is not a column of the table", role, name)
		}
		return i, nil
	}
	var err error
	if p.key, err = index("key", cm.GetKeyColumn()); err != nil {
		return nil, err
	}
	if p.timestamp, err = index("timestamp", cm.GetTimestampColumn()); err != nil {
		return nil, err
	}
	if p.headers, err = index("headers", cm.GetHeadersColumn()); err != nil {
		return nil, err
	}
	switch p.format {
	case catalogv1.ValueFormat_VALUE_FORMAT_JSON, catalogv1.ValueFormat_VALUE_FORMAT_AVRO, catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF,
		catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA:
		for i := range columns {
			if i != p.key && i != p.timestamp && i != p.headers {
				p.valueColumns = append(p.valueColumns, i)
			}
		}
	case catalogv1.ValueFormat_VALUE_FORMAT_RAW, catalogv1.ValueFormat_VALUE_FORMAT_STRING:
		if p.value, err = index("value", cm.GetValueColumn()); err != nil {
			return nil, err
		}
		if p.value < 0 {
			return nil, errors.New("rebuild: raw and string values need a value column")
		}
	default:
		return nil, fmt.Errorf("rebuild: value format %v is not supported", p.format)
	}
	if m.GetKind() == catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY && p.key < 0 {
		for _, k := range m.GetPrimaryKeys() {
			i, err := index("primary key", k)
			if err != nil {
				return nil, err
			}
			p.pkKey = append(p.pkKey, i)
		}
	}
	return p, nil
}

// Rebuild fills r from row of rec (the table's columns in order), reusing
// r's buffers. commitTimestamp stands in for the record timestamp when the
// mapping stores none: the time Fluss appended the row's batch.
func (p *Plan) Rebuild(r *Record, rec arrow.RecordBatch, row int, commitTimestamp int64) error {
	var err error
	r.Key, r.Value, r.Headers = r.Key[:0], r.Value[:0], r.Headers[:0]
	if r.Key, err = p.appendKey(r.Key, rec, row); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	switch {
	case p.value >= 0:
		r.Value = bytesOf(rec.Column(p.value), row, r.Value)
	case p.format == catalogv1.ValueFormat_VALUE_FORMAT_AVRO:
		if p.avro == nil {
			return errors.New("value: no Avro schema to write the value with")
		}
		if r.Value, err = p.avro.appendAvro(r.Value, rec, row); err != nil {
			return fmt.Errorf("value: %w", err)
		}
	case p.format == catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF:
		if p.proto == nil {
			return errors.New("value: no Protobuf schema to write the value with")
		}
		if r.Value, err = p.proto.appendProto(r.Value, rec, row); err != nil {
			return fmt.Errorf("value: %w", err)
		}
	default:
		if p.format == catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA {
			if p.jsonHeader == nil {
				return errors.New("value: no JSON Schema id to frame the value with")
			}
			r.Value = append(r.Value, p.jsonHeader...)
		}
		if r.Value, err = p.appendObject(r.Value, rec, row, p.valueColumns); err != nil {
			return fmt.Errorf("value: %w", err)
		}
	}
	r.Timestamp = commitTimestamp
	if p.timestamp >= 0 {
		if r.Timestamp, err = timestampOf(rec.Column(p.timestamp), row, commitTimestamp); err != nil {
			return err
		}
	}
	if p.headers >= 0 {
		if r.Headers, err = headersOf(r.Headers, rec.Column(p.headers), row, p.columns[p.headers].Type); err != nil {
			return err
		}
	}
	return nil
}

// appendKey appends the key of row in the key format; nil when the table
// stores no key or the key column is NULL.
func (p *Plan) appendKey(dst []byte, rec arrow.RecordBatch, row int) ([]byte, error) {
	framedColumn := p.key >= 0 && (p.keyFormat == catalogv1.ValueFormat_VALUE_FORMAT_AVRO || p.keyFormat == catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA)
	switch {
	case p.key >= 0 && rec.Column(p.key).IsNull(row):
		return nil, nil
	case p.key >= 0 && !framedColumn:
		return bytesOf(rec.Column(p.key), row, dst), nil
	case p.key < 0 && p.pkKey == nil:
		return nil, nil
	}
	switch p.keyFormat {
	case catalogv1.ValueFormat_VALUE_FORMAT_AVRO:
		if p.keyAvro == nil {
			return dst, errors.New("no Avro schema to write the key with")
		}
		return p.keyAvro.appendAvro(dst, rec, row)
	case catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF:
		if p.keyProto == nil {
			return dst, errors.New("no Protobuf schema to write the key with")
		}
		return p.keyProto.appendProto(dst, rec, row)
	case catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA:
		if p.keyJSONHeader == nil {
			return dst, errors.New("no JSON Schema id to frame the key with")
		}
		dst = append(dst, p.keyJSONHeader...)
		if p.key >= 0 {
			return AppendJSON(dst, rec.Column(p.key), row, p.columns[p.key].Type)
		}
	}
	return p.appendObject(dst, rec, row, p.pkKey)
}

// FramedKeys is the schema language keys are written in (AVRO,
// PROTOBUF or JSON_SCHEMA, then one of WithAvroKey, WithProtobufKey or
// WithJSONSchemaKey must give the schema), or UNSPECIFIED when keys are
// not framed.
func (p *Plan) FramedKeys() catalogv1.ValueFormat {
	if p.key < 0 && p.pkKey == nil {
		return catalogv1.ValueFormat_VALUE_FORMAT_UNSPECIFIED
	}
	switch p.keyFormat {
	case catalogv1.ValueFormat_VALUE_FORMAT_AVRO, catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF, catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA:
		return p.keyFormat
	}
	return catalogv1.ValueFormat_VALUE_FORMAT_UNSPECIFIED
}

// WithJSONSchemaKey returns a plan that frames JSON Schema keys with id.
func (p *Plan) WithJSONSchemaKey(id int32) *Plan {
	q := *p
	q.keyJSONHeader = binary.BigEndian.AppendUint32([]byte{0}, uint32(id))
	return &q
}

// WithJSONSchema returns a plan that frames JSON values with the id of a
// registered JSON Schema, as Schema Registry deserializers expect.
func (p *Plan) WithJSONSchema(id int32) *Plan {
	q := *p
	q.jsonHeader = binary.BigEndian.AppendUint32([]byte{0}, uint32(id))
	return &q
}

// RebuildDelete fills r as the tombstone of row of rec: a primary-key
// table's delete is a record with the key and a null value.
func (p *Plan) RebuildDelete(r *Record, rec arrow.RecordBatch, row int, commitTimestamp int64) error {
	if err := p.Rebuild(r, rec, row, commitTimestamp); err != nil {
		return err
	}
	r.Value = nil
	return nil
}

// appendObject writes the named columns of row as a JSON object.
func (p *Plan) appendObject(dst []byte, rec arrow.RecordBatch, row int, cols []int) ([]byte, error) {
	dst = append(dst, '{')
	for n, i := range cols {
		if n > 0 {
			dst = append(dst, ',')
		}
		f := p.columns[i]
		dst = append(appendString(dst, f.Name), ':')
		var err error
		if dst, err = AppendJSON(dst, rec.Column(i), row, f.Type); err != nil {
			return dst, fmt.Errorf("column %s: %w", f.Name, err)
		}
	}
	return append(dst, '}'), nil
}

// bytesOf is a BYTES or STRING cell's bytes copied to dst: nil for NULL,
// never nil otherwise (an empty key is not a null key).
func bytesOf(col arrow.Array, row int, dst []byte) []byte {
	if col.IsNull(row) {
		return nil
	}
	var out []byte
	switch c := col.(type) {
	case *array.String:
		out = append(dst, c.Value(row)...)
	case *array.Binary:
		out = append(dst, c.Value(row)...)
	default:
		return nil
	}
	if out == nil {
		out = []byte{}
	}
	return out
}

// timestampOf reads a timestamp column (TIMESTAMP, TIMESTAMP_LTZ or BIGINT
// epoch milliseconds); NULL falls back to the commit timestamp.
func timestampOf(col arrow.Array, row int, fallback int64) (int64, error) {
	if col.IsNull(row) {
		return fallback, nil
	}
	switch c := col.(type) {
	case *array.Int64:
		return c.Value(row), nil
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return c.Value(row).ToTime(unit).UnixNano() / int64(time.Millisecond), nil
	}
	return 0, fmt.Errorf("rebuild: timestamp column is %s", col.DataType())
}

// headersOf reads a headers column: MAP<STRING, BYTES|STRING> or
// ARRAY<ROW<STRING, BYTES|STRING>>.
func headersOf(dst []Header, col arrow.Array, row int, t types.DataType) ([]Header, error) {
	if col.IsNull(row) {
		return dst, nil
	}
	switch c := col.(type) {
	case *array.Map:
		start, end := c.ValueOffsets(row)
		keys := c.Keys().(*array.String)
		for i := start; i < end; i++ {
			dst = append(dst, Header{Key: keys.Value(int(i)), Value: bytesOf(c.Items(), int(i), nil)})
		}
		return dst, nil
	case *array.List:
		start, end := c.ValueOffsets(row)
		s := c.ListValues().(*array.Struct)
		keys := s.Field(0).(*array.String)
		for i := start; i < end; i++ {
			if s.IsNull(int(i)) || keys.IsNull(int(i)) {
				continue
			}
			dst = append(dst, Header{Key: keys.Value(int(i)), Value: bytesOf(s.Field(1), int(i), nil)})
		}
		return dst, nil
	}
	return dst, fmt.Errorf("rebuild: headers column of type %s", t)
}
