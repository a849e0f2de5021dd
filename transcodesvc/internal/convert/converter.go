package convert

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/transcodesvc/internal/kafkabatch"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

// MaxRecordErrors bounds how many record errors one failure lists; a batch
// of a million bad records should not produce a million-line answer.
const MaxRecordErrors = 100

// RecordError is one record that could not be converted.
type RecordError struct {
	// BatchIndex is the record's position in its batch (its offset delta).
	BatchIndex int
	Message    string
}

// Failure is a batch that must not be written at all.
type Failure struct {
	Code    int16 // Kafka error code
	Message string
	Records []RecordError
}

func (f *Failure) Error() string { return f.Message }

// Converter turns decoded batches into Arrow IPC for one Plan. It reuses its
// builders and output buffer from batch to batch, so it must not be used
// concurrently: the server pools them per plan, one per running job.
type Converter struct {
	plan *Plan
	mem  memory.Allocator

	rb      *array.RecordBuilder
	obj     *objectDecoder            // the JSON columns
	single  writer                    // the one column of a single framed JSON value (Plan.single)
	fast    *fastDecoder              // the JSON columns' common shape, or the Avro values' own columns; nil when a type has no fast path
	avro    *avroValues               // the Avro columns
	proto   *protoValues              // the Protobuf columns
	known   map[int32]*schemas.Schema // the batch's writer schemas (UseSchemas)
	columns []func(r *kafkabatch.Record, b *kafkabatch.Batch) error
	scan    scanner
	out     []byte            // the last ConvertTo's answer, reused
	keyBuf  []byte            // the keys UnframeKeys gave last, reused
	logb    *logbatch.Builder // made on first use: IPC callers never need it
	// dataPerRow is, per column, the value bytes per row of the last batch
	// (STRING and BYTES columns; 0 for others), to size the next one.
	dataPerRow []int
	broken     bool // builders hold a half-converted batch
}

// NewConverter builds a Converter for p allocating Arrow buffers from mem.
func (p *Plan) NewConverter(mem memory.Allocator) *Converter {
	c := &Converter{plan: p, mem: mem}
	c.build()
	return c
}

// build (re)creates the builders and the writers bound to them.
func (c *Converter) build() {
	if c.rb != nil {
		c.rb.Release()
	}
	p := c.plan
	c.rb = array.NewRecordBuilder(c.mem, p.Schema)
	c.columns = c.columns[:0]
	rejectUnknown := p.rejectUnknown
	var jsonFields []types.Field
	var jsonWriters []writer
	var valueBuilders []array.Builder
	for i, src := range p.sources {
		col := p.Columns[i]
		b := c.rb.Field(i)
		switch src {
		case srcJSONField:
			jsonFields = append(jsonFields, col)
			valueBuilders = append(valueBuilders, b)
			if p.jsonValues() {
				jsonWriters = append(jsonWriters, newWriter(col.Type, b, rejectUnknown))
			}
		case srcNone:
			c.columns = append(c.columns, func(*kafkabatch.Record, *kafkabatch.Batch) error { b.AppendNull(); return nil })
		case srcKey:
			c.columns = append(c.columns, keyColumn(col, b))
		case srcTimestamp:
			c.columns = append(c.columns, timestampColumn(col, b))
		case srcHeaders:
			c.columns = append(c.columns, headersColumn(col, b, p.headers))
		case srcValue:
			c.columns = append(c.columns, valueColumn(col, b))
		}
	}
	c.obj, c.fast = nil, nil
	c.single = nil
	switch {
	case p.jsonValues() && p.single:
		c.single = jsonWriters[0]
	case p.jsonValues():
		c.obj = newObjectDecoder(jsonFields, jsonWriters, rejectUnknown)
		c.fast = newFastDecoder(jsonFields, valueBuilders)
	}
	if p.isAvro() {
		// New builders: the decoders compiled for the old ones go; the
		// batch's schemas stay.
		var known map[int32]*schemas.Schema
		if c.avro != nil {
			known = c.avro.schemas
		}
		c.avro = newAvroValues(p.Topic, jsonFields, valueBuilders)
		c.avro.single = p.single
		c.avro.schemas = known
		if p.single {
			c.avro.cols = nil // one value, not a record: the closures read it
		}
		c.fast = c.avro.cols
	}
	if p.isProtobuf() {
		c.proto = newProtoValues(p.Topic, jsonFields, valueBuilders)
		c.proto.schemas = c.known
	}
	c.broken = false
}

// Encoding is the form a converted batch is given in.
type Encoding uint8

const (
	// EncodingIPC is an Arrow IPC stream: the schema message, then one
	// record batch.
	EncodingIPC Encoding = iota
	// EncodingLogRecords is the records section of a Fluss log batch
	// (logbatch.Builder.AppendRecords), compressed per Plan.LogRecords.
	EncodingLogRecords
)

// Output is a converted batch. Exactly one of IPC and LogRecords is set, as
// asked; it stays valid until the next Convert.
type Output struct {
	IPC        []byte
	LogRecords []byte
	Rows       int
}

// Convert converts every record of b or none, as an Arrow IPC stream: any
// record error yields a *Failure listing the failing records
// (INVALID_RECORD) and no output.
func (c *Converter) Convert(b *kafkabatch.Batch) (Output, error) {
	return c.ConvertTo(b, EncodingIPC)
}

// ConvertTo is Convert giving the rows in enc.
func (c *Converter) ConvertTo(b *kafkabatch.Batch, enc Encoding) (Output, error) {
	rec, err := c.ConvertRecord(b, nil)
	if err != nil {
		return Output{}, err
	}
	defer rec.Release()
	if c.out, err = c.Append(c.out[:0], rec, enc); err != nil {
		return Output{}, err
	}
	out := Output{Rows: int(rec.NumRows())}
	if enc == EncodingLogRecords {
		out.LogRecords = c.out
	} else {
		out.IPC = c.out
	}
	return out, nil
}

// DetachOutput leaves the last ConvertTo's output to its holder: it stays
// valid for good, and the next ConvertTo writes into a new buffer of the
// same capacity.
func (c *Converter) DetachOutput() { c.out = make([]byte, 0, cap(c.out)) }

// appendLogRecords appends rec to dst as the records section of a Fluss
// log batch, compressed as the plan's table is.
func (c *Converter) appendLogRecords(dst []byte, rec arrow.RecordBatch) ([]byte, error) {
	if c.logb == nil {
		c.logb = logbatch.NewBuilder()
	}
	out, err := c.logb.AppendRecords(dst, rec, c.plan.LogRecords)
	if err != nil {
		return dst, fmt.Errorf("build Fluss log records: %w", err)
	}
	return out, nil
}

// Append appends rec to dst in enc.
func (c *Converter) Append(dst []byte, rec arrow.RecordBatch, enc Encoding) ([]byte, error) {
	if enc == EncodingLogRecords {
		return c.appendLogRecords(dst, rec)
	}
	return c.AppendIPC(dst, rec)
}

// ConvertRecord converts the records of b that include selects (all of
// them when include is nil), in order, into one Arrow record the caller
// releases. Record errors are as in Convert, indexed within b.
func (c *Converter) ConvertRecord(b *kafkabatch.Batch, include func(i int) bool) (arrow.RecordBatch, error) {
	if c.broken {
		c.build()
	}
	c.broken = true
	c.rb.Reserve(len(b.Records))
	c.reserveData(len(b.Records), b.RawSize)
	if c.fast != nil {
		c.fast.begin(c.mem, len(b.Records), b.RawSize)
	}
	var errs []RecordError
	failed, rows := 0, 0
	for i := range b.Records {
		if include != nil && !include(i) {
			continue
		}
		rows++
		if err := c.convertRecord(&b.Records[i], b); err != nil {
			failed++
			if len(errs) < MaxRecordErrors {
				errs = append(errs, RecordError{BatchIndex: i, Message: err.Error()})
			}
		}
	}
	if failed > 0 {
		msg := fmt.Sprintf("%d of %d records could not be converted for topic %s; the batch was not written", failed, rows, c.plan.Topic)
		if failed > len(errs) {
			msg += fmt.Sprintf(" (the first %d are listed)", len(errs))
		}
		// Builders are out of step after a failed record; the next call
		// rebuilds them.
		return nil, &Failure{Code: kerr.InvalidRecord.Code, Message: msg, Records: errs}
	}
	c.broken = false
	c.noteData(rows)
	return c.newRecordBatch(rows), nil
}

// newRecordBatch makes the converted batch of rows rows from the builders
// and, when the fast decoder kept every JSON value in its own columns,
// from those.
func (c *Converter) newRecordBatch(rows int) arrow.RecordBatch {
	if c.fast == nil || !c.fast.columnar {
		return c.rb.NewRecordBatch()
	}
	fast := c.fast.arrays()
	cols := make([]arrow.Array, len(c.plan.sources))
	for i, src := range c.plan.sources {
		if src == srcJSONField {
			cols[i], fast = fast[0], fast[1:]
		} else {
			cols[i] = c.rb.Field(i).NewArray()
		}
	}
	rec := array.NewRecordBatch(c.plan.Schema, cols, int64(rows))
	for _, col := range cols {
		col.Release()
	}
	return rec
}

// varWidth is what the STRING and BYTES column builders offer for sizing
// their value bytes.
type varWidth interface {
	ReserveData(int)
	DataLen() int
}

// reserveData sizes the value bytes of STRING and BYTES columns for rows
// rows at the last batch's bytes per row, so they do not grow (and copy)
// step by step while the batch is converted. A column's values cannot
// outgrow the batch's records (rawSize bytes), which bounds the guess after
// a batch of a few large values.
func (c *Converter) reserveData(rows, rawSize int) {
	if len(c.dataPerRow) == 0 {
		return
	}
	for i, f := range c.rb.Fields() {
		if per := c.dataPerRow[i]; per > 0 {
			f.(varWidth).ReserveData(min(per*rows, rawSize))
		}
	}
}

// noteData records the bytes per row of each STRING and BYTES column of
// the batch just converted, rounded up.
func (c *Converter) noteData(rows int) {
	if rows == 0 {
		return
	}
	if c.dataPerRow == nil {
		c.dataPerRow = make([]int, len(c.rb.Fields()))
	}
	for i, f := range c.rb.Fields() {
		if v, ok := f.(varWidth); ok {
			c.dataPerRow[i] = (v.DataLen() + rows - 1) / rows
		}
	}
}

// AppendIPC appends rec to dst as an Arrow IPC stream with the plan's
// schema.
func (c *Converter) AppendIPC(dst []byte, rec arrow.RecordBatch) ([]byte, error) {
	w := appendWriter{dst}
	iw := ipc.NewWriter(&w, ipc.WithSchema(c.plan.Schema), ipc.WithAllocator(c.mem))
	if err := iw.Write(rec); err != nil {
		iw.Close()
		return dst, fmt.Errorf("write Arrow IPC: %w", err)
	}
	if err := iw.Close(); err != nil {
		return dst, fmt.Errorf("close Arrow IPC stream: %w", err)
	}
	return w.buf, nil
}

type appendWriter struct{ buf []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (c *Converter) convertRecord(r *kafkabatch.Record, b *kafkabatch.Batch) error {
	for _, col := range c.columns {
		if err := col(r, b); err != nil {
			return err
		}
	}
	if c.avro != nil {
		return c.avro.decodeValue(r.Value)
	}
	if c.proto != nil {
		return c.proto.decodeValue(r.Value)
	}
	if c.single != nil {
		return c.decodeSingleJSON(r.Value)
	}
	if c.obj == nil {
		return nil
	}
	v := r.Value
	if c.plan.isJSONSchema() {
		var err error
		if v, err = c.unframeJSON(v); err != nil {
			return err
		}
	}
	if v == nil {
		return &fieldError{msg: "record value is null (a tombstone); a JSON topic needs a JSON object"}
	}
	if c.fast != nil {
		if c.fast.decode(v) {
			return nil
		}
		// The generic decoder appends to the builders: the rows so far go
		// there first.
		c.fast.spill()
	}
	c.scan.reset(v)
	if err := c.obj.decode(&c.scan); err != nil {
		return err
	}
	if !c.scan.atEnd() {
		return c.scan.fail("data after the JSON object")
	}
	return nil
}

// UnframeKeys returns b with each record's framed key replaced by the
// bytes of the one value it holds (UTF-8 text for a STRING column), for a
// Converter of a CompileFramedKeys plan: the batch then fills the key
// column as if the producer had sent those bytes. Null keys stay null.
// Keys that cannot be read fail as Convert's records do, each message
// prefixed "record key: ". b is not changed; the returned batch shares
// its values and stays valid until the next call.
func (c *Converter) UnframeKeys(b *kafkabatch.Batch) (*kafkabatch.Batch, error) {
	kb := &kafkabatch.Batch{Header: b.Header, RawSize: b.RawSize, Records: make([]kafkabatch.Record, len(b.Records))}
	for i := range b.Records {
		kb.Records[i] = kafkabatch.Record{OffsetDelta: b.Records[i].OffsetDelta, Value: b.Records[i].Key}
	}
	rec, err := c.ConvertRecord(kb, func(i int) bool { return b.Records[i].Key != nil })
	if err != nil {
		var f *Failure
		if errors.As(err, &f) {
			for i := range f.Records {
				f.Records[i].Message = "record key: " + f.Records[i].Message
			}
		}
		return nil, err
	}
	defer rec.Release()
	col, ok := rec.Column(0).(interface {
		ValueBytes() []byte
		ValueOffsets() []int32
	})
	if !ok {
		return nil, fmt.Errorf("topic %s: record keys convert to %s, not text or bytes", c.plan.Topic, rec.Column(0).DataType())
	}
	// One copy of every key's bytes: the record's buffers go back to the
	// allocator.
	c.keyBuf = append(c.keyBuf[:0], col.ValueBytes()...)
	offsets := col.ValueOffsets()
	out := &kafkabatch.Batch{Header: b.Header, RawSize: b.RawSize, Records: append([]kafkabatch.Record(nil), b.Records...)}
	row := 0
	for i := range out.Records {
		if out.Records[i].Key == nil {
			continue
		}
		// A framed null (Avro ["null", T], JSON null) is a null key.
		if rec.Column(0).IsNull(row) {
			out.Records[i].Key = nil
		} else {
			start, end := offsets[row]-offsets[0], offsets[row+1]-offsets[0]
			out.Records[i].Key = c.keyBuf[start:end:end]
			if out.Records[i].Key == nil {
				out.Records[i].Key = []byte{} // an empty key is not a null one
			}
		}
		row++
	}
	return out, nil
}

// decodeSingleJSON reads a framed JSON value that is one value of the
// plan's one column, by the JSON rules of its type.
func (c *Converter) decodeSingleJSON(v []byte) error {
	v, err := c.unframeJSON(v)
	if err != nil {
		return err
	}
	c.scan.reset(v)
	if err := readValue(c.single, &c.scan); err != nil {
		return at(err, c.plan.Columns[c.plan.jsonFields[0]].Name)
	}
	if !c.scan.atEnd() {
		return c.scan.fail("data after the JSON value")
	}
	return nil
}

func (p *Plan) isJSON() bool { return p.format == catalogv1.ValueFormat_VALUE_FORMAT_JSON }
func (p *Plan) isAvro() bool { return p.format == catalogv1.ValueFormat_VALUE_FORMAT_AVRO }
func (p *Plan) isProtobuf() bool {
	return p.format == catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF
}
func (p *Plan) isJSONSchema() bool {
	return p.format == catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA
}

// jsonValues: the value is a JSON object, framed (JSON Schema) or not.
func (p *Plan) jsonValues() bool { return p.isJSON() || p.isJSONSchema() }

func nullOr(col types.Field, b array.Builder, what string) error {
	if !col.Type.Nullable {
		return &fieldError{msg: fmt.Sprintf("record %s is null but column %s is %s", what, col.Name, col.Type)}
	}
	b.AppendNull()
	return nil
}

func keyColumn(col types.Field, b array.Builder) func(*kafkabatch.Record, *kafkabatch.Batch) error {
	if col.Type.Root == types.String {
		sb := b.(*array.StringBuilder)
		return func(r *kafkabatch.Record, _ *kafkabatch.Batch) error {
			if r.Key == nil {
				return nullOr(col, b, "key")
			}
			if !utf8.Valid(r.Key) {
				return &fieldError{msg: fmt.Sprintf("record key is not valid UTF-8 but column %s is STRING", col.Name)}
			}
			sb.BinaryBuilder.Append(r.Key)
			return nil
		}
	}
	bb := b.(*array.BinaryBuilder)
	return func(r *kafkabatch.Record, _ *kafkabatch.Batch) error {
		if r.Key == nil {
			return nullOr(col, b, "key")
		}
		bb.Append(r.Key)
		return nil
	}
}

func timestampColumn(col types.Field, b array.Builder) func(*kafkabatch.Record, *kafkabatch.Batch) error {
	if col.Type.Root == types.BigInt {
		ib := b.(*array.Int64Builder)
		return func(r *kafkabatch.Record, kb *kafkabatch.Batch) error {
			ib.Append(kb.Timestamp(r))
			return nil
		}
	}
	// TIMESTAMP_LTZ holds the instant; TIMESTAMP (NTZ) its UTC wall-clock
	// time, which is the same number. Compile refused precisions below 3.
	tb := b.(*array.TimestampBuilder)
	return func(r *kafkabatch.Record, kb *kafkabatch.Batch) error {
		sec, nanos := millisToSecNanos(kb.Timestamp(r))
		v, err := toUnit(sec, nanos, col.Type.Precision)
		if err != nil {
			return &fieldError{msg: fmt.Sprintf("record timestamp %d does not fit column %s (%s)", kb.Timestamp(r), col.Name, col.Type)}
		}
		tb.Append(arrow.Timestamp(v))
		return nil
	}
}

func valueColumn(col types.Field, b array.Builder) func(*kafkabatch.Record, *kafkabatch.Batch) error {
	if col.Type.Root == types.String {
		sb := b.(*array.StringBuilder)
		return func(r *kafkabatch.Record, _ *kafkabatch.Batch) error {
			if r.Value == nil {
				return nullOr(col, b, "value")
			}
			if !utf8.Valid(r.Value) {
				return &fieldError{msg: fmt.Sprintf("record value is not valid UTF-8 but column %s is STRING", col.Name)}
			}
			sb.BinaryBuilder.Append(r.Value)
			return nil
		}
	}
	bb := b.(*array.BinaryBuilder)
	return func(r *kafkabatch.Record, _ *kafkabatch.Batch) error {
		if r.Value == nil {
			return nullOr(col, b, "value")
		}
		bb.Append(r.Value)
		return nil
	}
}

// headerValues appends header values to a BYTES or a STRING builder.
type headerValues struct {
	col      types.Field
	bytes    *array.BinaryBuilder
	str      *array.StringBuilder
	nullable bool
}

func newHeaderValues(col types.Field, b array.Builder, t types.DataType) headerValues {
	hv := headerValues{col: col, nullable: t.Nullable}
	if t.Root == types.String {
		hv.str = b.(*array.StringBuilder)
	} else {
		hv.bytes = b.(*array.BinaryBuilder)
	}
	return hv
}

// check refuses a header the column cannot hold, before anything of the
// header is appended.
func (hv *headerValues) check(h kafkabatch.RecordHeader) error {
	if !utf8.Valid(h.Key) {
		return &fieldError{msg: fmt.Sprintf("header key %q is not valid UTF-8", h.Key)}
	}
	if h.Value == nil {
		if !hv.nullable {
			return &fieldError{msg: fmt.Sprintf("header %q has a null value but column %s is %s", h.Key, hv.col.Name, hv.col.Type)}
		}
		return nil
	}
	if hv.str != nil && !utf8.Valid(h.Value) {
		return &fieldError{msg: fmt.Sprintf("header %q has a value that is not valid UTF-8 but column %s holds STRING values", h.Key, hv.col.Name)}
	}
	return nil
}

func (hv *headerValues) append(v []byte) {
	switch {
	case v == nil && hv.str != nil:
		hv.str.AppendNull()
	case v == nil:
		hv.bytes.AppendNull()
	case hv.str != nil:
		hv.str.BinaryBuilder.Append(v)
	default:
		hv.bytes.Append(v)
	}
}

func headersColumn(col types.Field, b array.Builder, shape headersShape) func(*kafkabatch.Record, *kafkabatch.Batch) error {
	if shape == headersList {
		// Every header, in order, as one ROW each.
		lb := b.(*array.ListBuilder)
		sb := lb.ValueBuilder().(*array.StructBuilder)
		keys := sb.FieldBuilder(0).(*array.StringBuilder)
		vals := newHeaderValues(col, sb.FieldBuilder(1), col.Type.Element.Fields[1].Type)
		return func(r *kafkabatch.Record, _ *kafkabatch.Batch) error {
			for _, h := range r.Headers {
				if err := vals.check(h); err != nil {
					return err
				}
			}
			lb.Append(true)
			for _, h := range r.Headers {
				sb.Append(true)
				keys.BinaryBuilder.Append(h.Key)
				vals.append(h.Value)
			}
			return nil
		}
	}
	// A map holds each key once: a repeated header keeps its last value, as
	// a Java client reading Headers.lastHeader would see it.
	mb := b.(*array.MapBuilder)
	keys := mb.KeyBuilder().(*array.StringBuilder)
	vals := newHeaderValues(col, mb.ItemBuilder(), *col.Type.Value)
	return func(r *kafkabatch.Record, _ *kafkabatch.Batch) error {
		for _, h := range r.Headers {
			if err := vals.check(h); err != nil {
				return err
			}
		}
		mb.Append(true)
		for i, h := range r.Headers {
			if repeatedLater(r.Headers, i) {
				continue
			}
			keys.BinaryBuilder.Append(h.Key)
			vals.append(h.Value)
		}
		return nil
	}
}

// repeatedLater reports whether header i's key comes again after it. Records
// carry few headers, so the quadratic scan beats building a set.
func repeatedLater(hs []kafkabatch.RecordHeader, i int) bool {
	for _, h := range hs[i+1:] {
		if bytes.Equal(h.Key, hs[i].Key) {
			return true
		}
	}
	return false
}
