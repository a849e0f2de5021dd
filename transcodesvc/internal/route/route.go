// Package route splits the rows of one Kafka record batch into the pieces a
// Fluss table stores them in: for tables that place rows themselves (a
// primary key, partition columns or a bucket key), each row goes to the
// Fluss partition its partition columns name and to the bucket Fluss's own
// bucketing function gives its bucket key, exactly where the Java client
// would write it. Log-table pieces are Arrow IPC streams; primary-key-table
// pieces are KV records: upserts of whole rows and, for tombstones, deletes
// of the key the Kafka record key names.
package route

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kerr"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/bucketing"
	"github.com/ferrygw/ferry/services/fluss/compacted"
	"github.com/ferrygw/ferry/services/fluss/kvbatch"
	"github.com/ferrygw/ferry/services/fluss/partitioning"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/transcodesvc/internal/convert"
	"github.com/ferrygw/ferry/transcodesvc/internal/kafkabatch"
)

// Needed reports whether m's table places rows itself, so that batches of
// the topic must be split with a Router.
func Needed(m *catalogv1.TopicMapping) bool {
	return m.GetKind() == catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY || len(m.GetPartitionKeys()) > 0 || len(m.GetBucketKeys()) > 0
}

// Piece is the rows of one batch bound for one Fluss bucket.
type Piece struct {
	// PartitionName is empty when the table is not partitioned.
	PartitionName string
	Bucket        int32
	// ArrowIPC or LogRecords (log tables, as Split was asked) or KVRecords
	// (primary-key tables).
	ArrowIPC   []byte
	LogRecords []byte
	KVRecords  []byte
	Records    int
}

// Router is a topic mapping compiled for splitting. It is immutable and
// safe for concurrent use; the Converters it is given are not.
type Router struct {
	topic      string
	primaryKey bool
	numBuckets int
	// Encoders over the value record (every column).
	partitions *partitioning.Getter  // nil: not partitioned
	buckets    *bucketing.KeyEncoder // nil: the producer's partition is the bucket
	rows       *compacted.RowEncoder // primary-key tables
	kvKey      *bucketing.KeyEncoder // physical primary key
	fullKey    *bucketing.KeyEncoder // whole primary key, to compare with the record key
	auto       partitioning.AutoPartition
	// Primary-key tables: the record key's plan and encoders over the key
	// record (the primary-key columns only).
	keyPlan       *convert.Plan
	keyColumnMode bool // kafka.key.column is the primary key: nothing to compare
	keyPartitions *partitioning.Getter
	keyBuckets    *bucketing.KeyEncoder
	keyKVKey      *bucketing.KeyEncoder
	keyFullKey    *bucketing.KeyEncoder

	now func() time.Time
}

// Compile builds the router of m, whose value plan is plan.
func Compile(m *catalogv1.TopicMapping, plan *convert.Plan) (*Router, error) {
	r := &Router{topic: m.GetTopic(), numBuckets: int(m.GetPartitionCount()), now: time.Now,
		primaryKey: m.GetKind() == catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY}
	if r.numBuckets < 1 {
		return nil, fmt.Errorf("topic %s: %d buckets", r.topic, r.numBuckets)
	}
	cols := plan.Columns
	var err error
	pks := m.GetPrimaryKeys()
	parts := m.GetPartitionKeys()
	bucketKeys := m.GetBucketKeys()
	var physical []string
	for _, k := range pks {
		if !slices.Contains(parts, k) {
			physical = append(physical, k)
		}
	}
	if r.primaryKey {
		if len(physical) == 0 {
			return nil, fmt.Errorf("topic %s: primary key %v holds no column besides the partition keys", r.topic, pks)
		}
		if len(bucketKeys) == 0 {
			bucketKeys = physical
		}
		for _, k := range parts {
			if !slices.Contains(pks, k) {
				return nil, fmt.Errorf("topic %s: partition key %s is not part of the primary key %v", r.topic, k, pks)
			}
		}
	}
	if len(parts) > 0 {
		if r.partitions, err = partitioning.NewGetter(cols, parts); err != nil {
			return nil, fmt.Errorf("topic %s: %w", r.topic, err)
		}
		if r.auto, err = partitioning.ParseAutoPartition(m.GetAutoPartitionOptions(), parts); err != nil {
			return nil, fmt.Errorf("topic %s: %w", r.topic, err)
		}
	}
	if len(bucketKeys) > 0 {
		if r.buckets, err = bucketing.NewKeyEncoder(cols, bucketKeys); err != nil {
			return nil, fmt.Errorf("topic %s: %w", r.topic, err)
		}
	}
	if !r.primaryKey {
		return r, nil
	}
	if r.rows, err = compacted.NewRowEncoder(cols); err != nil {
		return nil, fmt.Errorf("topic %s: %w", r.topic, err)
	}
	if r.kvKey, err = bucketing.NewKeyEncoder(cols, physical); err != nil {
		return nil, fmt.Errorf("topic %s: %w", r.topic, err)
	}
	if r.fullKey, err = bucketing.NewKeyEncoder(cols, pks); err != nil {
		return nil, fmt.Errorf("topic %s: %w", r.topic, err)
	}
	// The key record holds the primary-key columns in table order, as the
	// key plan lays them out.
	var keyCols []types.Field
	for _, c := range cols {
		if slices.Contains(pks, c.Name) {
			keyCols = append(keyCols, c)
		}
	}
	if len(keyCols) != len(pks) {
		return nil, fmt.Errorf("topic %s: primary key %v names columns the table does not have", r.topic, pks)
	}
	km, err := keyMapping(m, keyCols)
	if err != nil {
		return nil, err
	}
	r.keyColumnMode = m.GetMapping().GetKeyColumn() != ""
	if r.keyPlan, err = convert.Compile(km); err != nil {
		return nil, fmt.Errorf("topic %s: record keys: %w", r.topic, err)
	}
	if len(parts) > 0 {
		if r.keyPartitions, err = partitioning.NewGetter(keyCols, parts); err != nil {
			return nil, fmt.Errorf("topic %s: %w", r.topic, err)
		}
	}
	if r.keyBuckets, err = bucketing.NewKeyEncoder(keyCols, bucketKeys); err != nil {
		return nil, fmt.Errorf("topic %s: bucket keys must be primary-key columns: %w", r.topic, err)
	}
	if r.keyKVKey, err = bucketing.NewKeyEncoder(keyCols, physical); err != nil {
		return nil, fmt.Errorf("topic %s: %w", r.topic, err)
	}
	if r.keyFullKey, err = bucketing.NewKeyEncoder(keyCols, pks); err != nil {
		return nil, fmt.Errorf("topic %s: %w", r.topic, err)
	}
	return r, nil
}

// keyMapping is how a primary-key table's record keys are read: as the
// values of a mapping of the primary-key columns alone. With
// kafka.key.column (the single primary-key column) the key bytes are that
// column (framed keys were unframed into those bytes before, see
// convert.CompileFramedKeys). Otherwise the key is an object of the
// primary-key fields in the key format (kafka.key.format): JSON (the
// default) or a framed record, read by the value decoders of its format.
func keyMapping(m *catalogv1.TopicMapping, keyCols []types.Field) (*catalogv1.TopicMapping, error) {
	km := &catalogv1.TopicMapping{Topic: m.GetTopic()}
	for _, c := range m.GetColumns() {
		if slices.ContainsFunc(keyCols, func(f types.Field) bool { return f.Name == c.GetName() }) {
			km.Columns = append(km.Columns, c)
		}
	}
	kc := m.GetMapping().GetKeyColumn()
	format := m.GetMapping().GetKeyFormat()
	switch {
	case kc == "":
		switch format {
		case catalogv1.ValueFormat_VALUE_FORMAT_UNSPECIFIED, catalogv1.ValueFormat_VALUE_FORMAT_JSON:
			format = catalogv1.ValueFormat_VALUE_FORMAT_JSON
		case catalogv1.ValueFormat_VALUE_FORMAT_AVRO, catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF, catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA:
		default:
			return nil, fmt.Errorf("topic %s: key format %v cannot name a primary key of %d columns without a key column", m.GetTopic(), format, len(keyCols))
		}
		// A key names the primary key and nothing else.
		km.Mapping = &catalogv1.ColumnMapping{ValueFormat: format, UnknownFields: catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT}
	case len(keyCols) != 1 || keyCols[0].Name != kc:
		return nil, fmt.Errorf("topic %s: key column %s must be the single primary-key column", m.GetTopic(), kc)
	case format == catalogv1.ValueFormat_VALUE_FORMAT_JSON || format == catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF:
		return nil, fmt.Errorf("topic %s: key format %v cannot fill key column %s", m.GetTopic(), format, kc)
	case keyCols[0].Type.Root == types.String:
		km.Mapping = &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_STRING, ValueColumn: kc}
	default:
		km.Mapping = &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_RAW, ValueColumn: kc}
	}
	return km, nil
}

// KeyPlan is the plan record keys of a primary-key table are converted
// with; nil for log tables.
func (r *Router) KeyPlan() *convert.Plan { return r.keyPlan }

// Split converts b with values (a Converter of the value plan) and, for
// primary-key tables, keys (one of KeyPlan) and splits its rows into
// pieces, in the order of their first row. partition is the Kafka
// partition the batch was produced to: the bucket of rows of tables
// without bucket keys. Any record that cannot be placed fails the whole
// batch (*convert.Failure), so nothing of it is written. A log table's
// pieces are given in enc.
func (r *Router) Split(b *kafkabatch.Batch, partition int32, values, keys *convert.Converter, enc convert.Encoding) ([]Piece, error) {
	if r.primaryKey {
		return r.splitKV(b, values, keys)
	}
	rec, err := values.ConvertRecord(b, nil)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	var fails failures
	var gs grouping
	var name []byte
	for i := range b.Records {
		t, err := r.target(rec, i, partition, r.partitions, r.buckets, &name)
		if err != nil {
			fails.add(i, err.Error())
			continue
		}
		gs.add(t, i)
	}
	groups := gs.groups
	r.checkPartitions(groups, &fails)
	if err := fails.failure(r.topic, len(b.Records)); err != nil {
		return nil, err
	}
	pieces := make([]Piece, len(groups))
	if len(groups) == 1 {
		data, err := values.Append(nil, rec, enc)
		if err != nil {
			return nil, err
		}
		pieces[0] = logPiece(groups[0].partition, groups[0].bucket, data, len(b.Records), enc)
		return pieces, nil
	}
	// Several pieces: convert the records again in piece order, so that
	// each piece is a contiguous slice of one record. (Selecting rows of
	// the first record would need arrow's compute kernels, which weigh
	// more than the service itself.)
	ordered := &kafkabatch.Batch{Header: b.Header, Records: make([]kafkabatch.Record, 0, len(b.Records))}
	for _, g := range groups {
		for _, i := range g.rows {
			ordered.Records = append(ordered.Records, b.Records[i])
		}
	}
	all, err := values.ConvertRecord(ordered, nil)
	if err != nil {
		return nil, fmt.Errorf("route: converting the records in piece order: %w", err)
	}
	defer all.Release()
	var buf []byte
	start := int64(0)
	for gi, g := range groups {
		end := start + int64(len(g.rows))
		part := all.NewSlice(start, end)
		at := len(buf)
		buf, err = values.Append(buf, part, enc)
		part.Release()
		if err != nil {
			return nil, err
		}
		pieces[gi] = logPiece(g.partition, g.bucket, buf[at:len(buf):len(buf)], len(g.rows), enc)
		start = end
	}
	return pieces, nil
}

func logPiece(partition string, bucket int32, data []byte, records int, enc convert.Encoding) Piece {
	p := Piece{PartitionName: partition, Bucket: bucket, Records: records}
	if enc == convert.EncodingLogRecords {
		p.LogRecords = data
	} else {
		p.ArrowIPC = data
	}
	return p
}

// splitKV splits a primary-key table's batch: a record with a value is an
// upsert of the row it converts to, a record without one (a tombstone) a
// delete of the primary key its key names.
func (r *Router) splitKV(b *kafkabatch.Batch, values, keys *convert.Converter) ([]Piece, error) {
	var fails failures
	valueRow := make([]int, len(b.Records))
	keyRow := make([]int, len(b.Records))
	nv, nk := 0, 0
	for i := range b.Records {
		valueRow[i], keyRow[i] = -1, -1
		if b.Records[i].Value != nil {
			valueRow[i] = nv
			nv++
		}
		if b.Records[i].Key != nil {
			keyRow[i] = nk
			nk++
		} else if b.Records[i].Value == nil {
			fails.add(i, "a tombstone (null value) needs a record key naming the primary key to delete")
		}
	}
	vrec, err := values.ConvertRecord(b, func(i int) bool { return b.Records[i].Value != nil })
	if err != nil {
		if !fails.absorb(err, "") {
			return nil, err
		}
	} else {
		defer vrec.Release()
	}
	// The keys are converted as the values of a batch of key-only records.
	kb := keyBatch(b)
	krec, err := keys.ConvertRecord(kb, func(i int) bool { return b.Records[i].Key != nil })
	if err != nil {
		if !fails.absorb(err, "record key: ") {
			return nil, err
		}
	} else {
		defer krec.Release()
	}
	if vrec == nil || krec == nil {
		return nil, fails.failure(r.topic, len(b.Records))
	}

	var gs grouping
	var builders []*kvbatch.Builder
	var name, kvKey, row, a, bk []byte
	for i := range b.Records {
		var t target
		var err error
		if v := valueRow[i]; v >= 0 {
			if k := keyRow[i]; k >= 0 && !r.keyColumnMode {
				if a, err = r.fullKey.Encode(a[:0], vrec, v); err == nil {
					bk, err = r.keyFullKey.Encode(bk[:0], krec, k)
				}
				if err == nil && string(a) != string(bk) {
					err = errors.New("the record key names another primary key than the value holds")
				}
			}
			if err == nil {
				t, err = r.target(vrec, v, 0, r.partitions, r.buckets, &name)
			}
			if err == nil {
				kvKey, err = r.kvKey.Encode(kvKey[:0], vrec, v)
			}
			if err == nil {
				row, err = r.rows.Append(row[:0], vrec, v)
			}
		} else if k := keyRow[i]; k >= 0 {
			t, err = r.target(krec, k, 0, r.keyPartitions, r.keyBuckets, &name)
			if err == nil {
				kvKey, err = r.keyKVKey.Encode(kvKey[:0], krec, k)
			}
			row = nil
		} else {
			continue // refused above
		}
		if err != nil {
			fails.add(i, err.Error())
			continue
		}
		g, added := gs.add(t, i)
		if added {
			builders = append(builders, kvbatch.NewBuilder())
		}
		if row == nil {
			err = builders[g].AppendDelete(kvKey)
		} else {
			err = builders[g].Append(kvKey, row)
		}
		if err != nil {
			fails.add(i, err.Error())
		}
	}
	groups := gs.groups
	r.checkPartitions(groups, &fails)
	if err := fails.failure(r.topic, len(b.Records)); err != nil {
		return nil, err
	}
	pieces := make([]Piece, len(groups))
	for gi, g := range groups {
		pieces[gi] = Piece{PartitionName: g.partition, Bucket: g.bucket, KVRecords: builders[gi].RecordBytes(), Records: len(g.rows)}
	}
	return pieces, nil
}

// keyBatch is b with each record's key as its value.
func keyBatch(b *kafkabatch.Batch) *kafkabatch.Batch {
	kb := &kafkabatch.Batch{Header: b.Header, Records: make([]kafkabatch.Record, len(b.Records))}
	for i := range b.Records {
		kb.Records[i] = kafkabatch.Record{OffsetDelta: b.Records[i].OffsetDelta, TimestampDelta: b.Records[i].TimestampDelta, Value: b.Records[i].Key}
	}
	return kb
}

// target is where a row goes.
type target struct {
	partition string
	bucket    int32
}

type group struct {
	target
	rows []int32 // batch indexes, in order
}

// grouping collects rows by target, groups in the order of their first row.
type grouping struct {
	index  map[target]int
	groups []group
}

// add puts row into t's group and returns the group's index, and whether
// the row started it.
func (gs *grouping) add(t target, row int) (int, bool) {
	g, ok := gs.index[t]
	if !ok {
		if gs.index == nil {
			gs.index = map[target]int{}
		}
		g = len(gs.groups)
		gs.index[t] = g
		gs.groups = append(gs.groups, group{target: t})
	}
	gs.groups[g].rows = append(gs.groups[g].rows, int32(row))
	return g, !ok
}

// target computes the partition name and bucket of row of rec.
func (r *Router) target(rec arrow.RecordBatch, row int, partition int32, parts *partitioning.Getter, buckets *bucketing.KeyEncoder, name *[]byte) (target, error) {
	t := target{bucket: partition}
	if parts != nil {
		var err error
		if *name, err = parts.AppendName((*name)[:0], rec, row); err != nil {
			return t, err
		}
		t.partition = string(*name)
	}
	if buckets != nil {
		key, err := buckets.Encode((*name)[len(*name):], rec, row)
		if err != nil {
			return t, err
		}
		b, err := bucketing.Bucket(key, r.numBuckets)
		if err != nil {
			return t, err
		}
		t.bucket = int32(b)
	}
	return t, nil
}

// checkPartitions refuses every row of a partition the cluster would not
// create and keep (an invalid name, a value in the wrong time format, or
// one older than an auto-partitioned table's retention).
func (r *Router) checkPartitions(groups []group, fails *failures) {
	if r.partitions == nil {
		return
	}
	now := r.now()
	checked := map[string]error{}
	for _, g := range groups {
		err, done := checked[g.partition]
		if !done {
			if v, cerr := r.auto.Check(g.partition, now); v != partitioning.Live {
				err = fmt.Errorf("partition %q cannot be written (%s): %w", g.partition, v, cerr)
			}
			checked[g.partition] = err
		}
		if err != nil {
			for _, i := range g.rows {
				fails.add(int(i), err.Error())
			}
		}
	}
}

// failures collects record errors from conversion and placement.
type failures struct {
	recs  []convert.RecordError
	total int
}

func (f *failures) add(i int, msg string) {
	f.total++
	f.recs = append(f.recs, convert.RecordError{BatchIndex: i, Message: msg})
}

// absorb takes the record errors of a conversion failure, each message
// prefixed; it reports false for any other error.
func (f *failures) absorb(err error, prefix string) bool {
	var cf *convert.Failure
	if !errors.As(err, &cf) || len(cf.Records) == 0 {
		return false
	}
	for _, re := range cf.Records {
		f.add(re.BatchIndex, prefix+re.Message)
	}
	return true
}

// failure is the batch's refusal, nil when every record was placed. The
// listed records are the first ones by batch index, one entry per record.
func (f *failures) failure(topic string, records int) error {
	if f.total == 0 {
		return nil
	}
	slices.SortStableFunc(f.recs, func(a, b convert.RecordError) int { return a.BatchIndex - b.BatchIndex })
	f.recs = slices.CompactFunc(f.recs, func(a, b convert.RecordError) bool { return a.BatchIndex == b.BatchIndex })
	n := len(f.recs)
	msg := fmt.Sprintf("%d of %d records could not be written to topic %s; the batch was not written", n, records, topic)
	if n > convert.MaxRecordErrors {
		f.recs = f.recs[:convert.MaxRecordErrors]
		msg += fmt.Sprintf(" (the first %d are listed)", convert.MaxRecordErrors)
	}
	return &convert.Failure{Code: kerr.InvalidRecord.Code, Message: msg, Records: f.recs}
}
