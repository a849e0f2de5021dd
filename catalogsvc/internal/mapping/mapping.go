// Package mapping decides whether a Fluss table is a Kafka topic and, if so,
// how Kafka records map onto its columns: the contract in docs/mapping.md,
// as a pure function of the table's metadata.
package mapping

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/bucketing"
	"github.com/ferrygw/ferry/services/fluss/compacted"
	"github.com/ferrygw/ferry/services/fluss/partitioning"
	"github.com/ferrygw/ferry/services/fluss/types"
	"google.golang.org/protobuf/proto"
)

// Table is what the mapping needs to know about one Fluss table, as the
// coordinator reports it (GetTableInfo).
type Table struct {
	Database string
	Name     string
	TableID  int64
	SchemaID int32
	Columns  []types.Field
	// PrimaryKeys is empty for a log table.
	PrimaryKeys   []string
	PartitionKeys []string
	BucketKeys    []string
	BucketCount   int32
	// Properties are the table.* storage options; absent ones have
	// Fluss's defaults.
	Properties map[string]string
	// CustomProperties hold everything else, the kafka.* options included.
	CustomProperties map[string]string
	// Partitions are a partitioned table's Fluss partitions as last
	// listed; each is a topic of its own (PartitionTopic).
	Partitions []Partition
}

// Path is "database.table", for logs.
func (t Table) Path() string { return t.Database + "." + t.Name }

// The kafka.* custom properties a table may carry. Any other kafka.* key is
// refused, so that a misspelt option cannot be silently ignored.
const (
	PropEnabled           = "kafka.enabled"
	PropTopic             = "kafka.topic"
	PropValueFormat       = "kafka.value.format"
	PropValueColumn       = "kafka.value.column"
	PropKeyColumn         = "kafka.key.column"
	PropKeyFormat         = "kafka.key.format"
	PropTimestampColumn   = "kafka.timestamp.column"
	PropHeadersColumn     = "kafka.headers.column"
	PropJSONUnknownFields = "kafka.json.unknown-fields"
	PropFetchCompression  = "kafka.fetch.compression"
)

var knownProps = []string{
	PropEnabled, PropTopic, PropValueFormat, PropValueColumn, PropKeyColumn, PropKeyFormat,
	PropTimestampColumn, PropHeadersColumn, PropJSONUnknownFields, PropFetchCompression,
}

// DefaultFetchCompression is the codec of Fetch answers for tables without
// kafka.fetch.compression, chosen by measurement (docs/mapping.md).
const DefaultFetchCompression = catalogv1.FetchCompression_FETCH_COMPRESSION_LZ4

// Fluss table options the mapping reads (ConfigOptions.TABLE_LOG_*).
const (
	PropLogFormat             = "table.log.format"
	PropArrowCompression      = "table.log.arrow.compression.type"
	PropArrowCompressionLevel = "table.log.arrow.compression.zstd.level"
	PropKvFormat              = "table.kv.format"
	PropDatalakeFormat        = "table.datalake.format"
	autoPartitionPrefix       = "table.auto-partition."
)

// defaultZstdLevel is Fluss's default for table.log.arrow.compression.zstd.level.
const defaultZstdLevel = 3

// Exposure says which tables inside the scanned databases are topics when
// they do not say so themselves with kafka.enabled.
type Exposure int

const (
	// ExposeOptIn exposes only tables with kafka.enabled=true. The default:
	// a topic accepts writes from any Kafka client, so a table becomes one
	// only when its owner asks.
	ExposeOptIn Exposure = iota
	// ExposeAll also exposes every compatible table without kafka.enabled.
	ExposeAll
)

func (e Exposure) String() string {
	if e == ExposeAll {
		return "all"
	}
	return "opt-in"
}

// ParseExposure reads the -expose setting.
func ParseExposure(s string) (Exposure, error) {
	switch strings.ToLower(s) {
	case "opt-in":
		return ExposeOptIn, nil
	case "all":
		return ExposeAll, nil
	}
	return 0, fmt.Errorf("want opt-in or all, got %q", s)
}

// Options are the catalog-wide inputs of the mapping.
type Options struct {
	// ClusterID scopes topic ids (see TopicID).
	ClusterID string
	Exposure  Exposure
}

// RefusalKind says how a refused table shows to Kafka clients.
type RefusalKind int

const (
	// Hidden: the table did not ask to be a topic (or asked not to be).
	// Clients see an unknown topic.
	Hidden RefusalKind = iota + 1
	// Incompatible: the table asked to be a topic (or every table is
	// exposed) but its shape or kafka.* options do not allow it. Clients
	// naming it get INVALID_TOPIC_EXCEPTION with the reason; all-topic
	// listings omit it.
	Incompatible
)

func (k RefusalKind) String() string {
	switch k {
	case Hidden:
		return "hidden"
	case Incompatible:
		return "incompatible"
	}
	return "RefusalKind(" + strconv.Itoa(int(k)) + ")"
}

// Refusal says why a table is not a topic.
type Refusal struct {
	Kind RefusalKind
	// Topic is the name the table would have had, empty when none could be
	// derived (e.g. an invalid kafka.topic).
	Topic string
	// Reasons are every problem found, each naming the property or column
	// to fix.
	Reasons []string
}

func (r *Refusal) Error() string { return strings.Join(r.Reasons, "; ") }

// Resolve maps table onto a Kafka topic, or says why it is not one. It is a
// pure function: the same table and options always give the same result,
// mapping id included.
func Resolve(t Table, opts Options) (*catalogv1.TopicMapping, *Refusal) {
	if r := exposure(t, opts.Exposure); r != nil {
		// The name it would have, for logs; not validated, as nothing
		// else about a table that is not exposed is.
		r.Topic = DefaultTopicName(t.Database, t.Name)
		if v, ok := t.CustomProperties[PropTopic]; ok {
			r.Topic = v
		}
		return nil, r
	}
	var p problems

	for _, k := range slices.Sorted(maps.Keys(t.CustomProperties)) {
		if strings.HasPrefix(k, "kafka.") && !slices.Contains(knownProps, k) {
			p.addf("unknown property %s (known: %s)", k, strings.Join(knownProps, ", "))
		}
	}

	topic := DefaultTopicName(t.Database, t.Name)
	if v, ok := t.CustomProperties[PropTopic]; ok {
		topic = v
		if err := ValidateTopicName(v); err != nil {
			p.addf("%s: %v", PropTopic, err)
			topic = ""
		}
	} else if err := ValidateTopicName(topic); err != nil {
		p.addf("default topic name: %v; set %s to a shorter name", err, PropTopic)
		topic = ""
	}

	shape := checkShape(t, &p)
	compression, level := arrowCompression(t.Properties, &p)
	fetchCompression := fetchCompression(t.CustomProperties, &p)
	cols := columnIndex(t.Columns, &p)
	cm := columnMapping(t, cols, &p)
	checkKeyParts(t, cm, &p)
	cm.KeyFormat = keyFormat(t, cm, &p)

	if len(p) > 0 {
		return nil, &Refusal{Kind: Incompatible, Topic: topic, Reasons: p}
	}
	m := &catalogv1.TopicMapping{
		Topic:                 topic,
		TopicId:               topicIDBytes(opts.ClusterID, t.TableID),
		Database:              t.Database,
		Table:                 t.Name,
		TableId:               t.TableID,
		SchemaId:              t.SchemaID,
		PartitionCount:        t.BucketCount,
		Columns:               FieldsToProto(t.Columns),
		BucketKeys:            shape.bucketKeys,
		ArrowCompression:      compression,
		ArrowCompressionLevel: level,
		Mapping:               cm,
		Kind:                  shape.kind,
		PrimaryKeys:           slices.Clone(t.PrimaryKeys),
		PartitionKeys:         slices.Clone(t.PartitionKeys),
		AutoPartitionOptions:  shape.autoPartition,
		FetchCompression:      fetchCompression,
		TableProperties:       maps.Clone(t.Properties),
		CustomProperties:      maps.Clone(t.CustomProperties),
	}
	m.MappingId = mappingID(m, t)
	return m, nil
}

func topicIDBytes(clusterID string, tableID int64) []byte {
	id := TopicID(clusterID, tableID)
	return id[:]
}

// exposure applies kafka.enabled and the catalog's Exposure.
func exposure(t Table, e Exposure) *Refusal {
	v, ok := t.CustomProperties[PropEnabled]
	if !ok {
		if e == ExposeAll {
			return nil
		}
		return &Refusal{Kind: Hidden, Reasons: []string{"not opted in: set " + PropEnabled + "=true to expose it"}}
	}
	switch strings.ToLower(v) {
	case "true":
		return nil
	case "false":
		return &Refusal{Kind: Hidden, Reasons: []string{PropEnabled + " is false"}}
	}
	// A table that tried to opt in deserves the loud kind of refusal.
	return &Refusal{Kind: Incompatible, Reasons: []string{fmt.Sprintf("%s must be true or false, got %q", PropEnabled, v)}}
}

// shape is how a table places and stores rows (docs/mapping.md §4).
type shape struct {
	kind catalogv1.TableKind
	// bucketKeys pick a row's bucket: the table's own, or for a
	// primary-key table without any its physical primary key.
	bucketKeys    []string
	autoPartition map[string]string // table.auto-partition.* options
}

// checkShape works out the table's shape and refuses what Ferry cannot
// write: each check is the constructor of the encoder the write path uses,
// so a table accepted here is one transcodesvc can serve.
func checkShape(t Table, p *problems) shape {
	sh := shape{kind: catalogv1.TableKind_TABLE_KIND_LOG, bucketKeys: slices.Clone(t.BucketKeys)}
	if t.BucketCount < 1 {
		p.addf("bucket count is %d, want at least 1", t.BucketCount)
	}
	if f, ok := t.Properties[PropLogFormat]; ok && !strings.EqualFold(f, "arrow") {
		p.addf("%s is %s: only ARROW logs are written", PropLogFormat, f)
	}
	if lake := t.Properties[PropDatalakeFormat]; lake != "" && (len(t.BucketKeys) > 0 || len(t.PrimaryKeys) > 0) {
		// Lake-enabled tables hash their bucket keys the lake's way
		// (Paimon, Iceberg), which Ferry does not implement.
		p.addf("%s is %s: tables with a data lake format place keyed rows with the lake's bucketing, which Ferry does not compute", PropDatalakeFormat, lake)
	}
	checkBucketKeys := len(sh.bucketKeys) > 0
	if len(t.PrimaryKeys) > 0 {
		sh.kind = catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY
		checkPrimaryKey(t, p)
		if len(sh.bucketKeys) == 0 {
			// checkPrimaryKey has vetted these already: checking them
			// again would report each problem twice.
			sh.bucketKeys = physicalPrimaryKey(t)
		}
	}
	if checkBucketKeys {
		if _, err := bucketing.NewKeyEncoder(t.Columns, sh.bucketKeys); err != nil {
			p.addf("bucket key %s: %v", strings.Join(sh.bucketKeys, ", "), err)
		}
	}
	if len(t.PartitionKeys) > 0 {
		if _, err := partitioning.NewGetter(t.Columns, t.PartitionKeys); err != nil {
			p.addf("partition key %s: %v", strings.Join(t.PartitionKeys, ", "), err)
		}
		if _, err := partitioning.ParseAutoPartition(t.Properties, t.PartitionKeys); err != nil {
			p.addf("auto-partitioning: %v", err)
		}
		for k, v := range t.Properties {
			if strings.HasPrefix(k, autoPartitionPrefix) {
				if sh.autoPartition == nil {
					sh.autoPartition = map[string]string{}
				}
				sh.autoPartition[k] = v
			}
		}
	}
	return sh
}

// checkPrimaryKey refuses primary-key tables whose KV records Ferry cannot
// build.
func checkPrimaryKey(t Table, p *problems) {
	// Read as Fluss reads it (fluss.TableInfo.KvFormat): trimmed, any case.
	if f, ok := t.Properties[PropKvFormat]; ok && !strings.EqualFold(strings.TrimSpace(f), "compacted") {
		p.addf("%s is %s: only COMPACTED KV rows are written", PropKvFormat, f)
	}
	if _, err := compacted.NewRowEncoder(t.Columns); err != nil {
		p.addf("primary-key table rows: %v", err)
	}
	physical := physicalPrimaryKey(t)
	if len(physical) == 0 {
		p.addf("primary key %s holds only partition keys: no row could be told from another within a partition", strings.Join(t.PrimaryKeys, ", "))
		return
	}
	if _, err := bucketing.NewKeyEncoder(t.Columns, physical); err != nil {
		p.addf("primary key %s: %v", strings.Join(t.PrimaryKeys, ", "), err)
	}
}

// physicalPrimaryKey is the primary key without the partition keys: the
// key of a row within its partition.
func physicalPrimaryKey(t Table) []string {
	var out []string
	for _, k := range t.PrimaryKeys {
		if !slices.Contains(t.PartitionKeys, k) {
			out = append(out, k)
		}
	}
	return out
}

// checkKeyParts refuses column mappings that contradict a primary key: the
// Kafka key is what names a row, so it must name all of the primary key,
// and the timestamp and headers of a record cannot be part of it.
func checkKeyParts(t Table, cm *catalogv1.ColumnMapping, p *problems) {
	if len(t.PrimaryKeys) == 0 {
		return
	}
	if kc := cm.GetKeyColumn(); kc != "" && (len(t.PrimaryKeys) != 1 || t.PrimaryKeys[0] != kc) {
		p.addf("%s=%s on a primary-key table must name its single primary-key column (primary key: %s); leave it unset to send keys as JSON objects of the primary-key fields",
			PropKeyColumn, kc, strings.Join(t.PrimaryKeys, ", "))
	}
	for prop, col := range map[string]string{PropTimestampColumn: cm.GetTimestampColumn(), PropHeadersColumn: cm.GetHeadersColumn()} {
		if col != "" && slices.Contains(t.PrimaryKeys, col) {
			p.addf("%s=%s names a primary-key column: a row's key must come from the record's key or value", prop, col)
		}
	}
}

// keyFormat reads kafka.key.format: how the record key is read. Unset, it
// is what keys were before the property existed: the bytes of the key
// column, or on a primary-key table without one a JSON object of the
// primary key. A format that cannot fill what the table keeps of the key
// is refused.
func keyFormat(t Table, cm *catalogv1.ColumnMapping, p *problems) catalogv1.ValueFormat {
	kc := cm.GetKeyColumn()
	pk := len(t.PrimaryKeys) > 0
	v, set := t.CustomProperties[PropKeyFormat]
	if !set {
		switch {
		case kc != "":
			return catalogv1.ValueFormat_VALUE_FORMAT_RAW
		case pk:
			return catalogv1.ValueFormat_VALUE_FORMAT_JSON
		}
		return catalogv1.ValueFormat_VALUE_FORMAT_UNSPECIFIED
	}
	var f catalogv1.ValueFormat
	switch strings.ToLower(v) {
	case "raw":
		f = catalogv1.ValueFormat_VALUE_FORMAT_RAW
	case "json":
		f = catalogv1.ValueFormat_VALUE_FORMAT_JSON
	case "avro":
		f = catalogv1.ValueFormat_VALUE_FORMAT_AVRO
	case "protobuf":
		f = catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF
	case "json-schema":
		f = catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA
	default:
		p.addf("%s is %q: want raw, json, avro, protobuf or json-schema", PropKeyFormat, v)
		return catalogv1.ValueFormat_VALUE_FORMAT_UNSPECIFIED
	}
	format := strings.ToLower(v)
	switch {
	case kc == "" && !pk:
		p.addf("%s=%s has nothing to read: a log table without %s does not store the key; set %s or leave %s out", PropKeyFormat, format, PropKeyColumn, PropKeyColumn, PropKeyFormat)
	case kc == "" && f == catalogv1.ValueFormat_VALUE_FORMAT_RAW:
		p.addf("%s=raw on a primary-key table needs %s: without it the key must name the primary-key fields (json, avro, protobuf or json-schema)", PropKeyFormat, PropKeyColumn)
	case kc != "" && f == catalogv1.ValueFormat_VALUE_FORMAT_JSON:
		p.addf("%s=json contradicts %s=%s: a key column takes one value (raw, or framed avro or json-schema), not a JSON object", PropKeyFormat, PropKeyColumn, kc)
	case kc != "" && f == catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF:
		p.addf("%s=protobuf contradicts %s=%s: a Protobuf key is a message, and a key column takes one value", PropKeyFormat, PropKeyColumn, kc)
	}
	return f
}

func arrowCompression(props map[string]string, p *problems) (catalogv1.ArrowCompression, int32) {
	c := catalogv1.ArrowCompression_ARROW_COMPRESSION_ZSTD
	if v, ok := props[PropArrowCompression]; ok {
		switch strings.ToUpper(v) {
		case "NONE":
			c = catalogv1.ArrowCompression_ARROW_COMPRESSION_NONE
		case "LZ4_FRAME":
			c = catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME
		case "ZSTD":
		default:
			p.addf("%s is %q: want NONE, LZ4_FRAME or ZSTD", PropArrowCompression, v)
			return catalogv1.ArrowCompression_ARROW_COMPRESSION_UNSPECIFIED, 0
		}
	}
	if c != catalogv1.ArrowCompression_ARROW_COMPRESSION_ZSTD {
		return c, 0
	}
	level := defaultZstdLevel
	if v, ok := props[PropArrowCompressionLevel]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 22 {
			p.addf("%s is %q: want an integer 1..22", PropArrowCompressionLevel, v)
			return c, 0
		}
		level = n
	}
	return c, int32(level)
}

// fetchCompression reads kafka.fetch.compression: the codec of the record
// batches consumers of the topic receive.
func fetchCompression(props map[string]string, p *problems) catalogv1.FetchCompression {
	v, ok := props[PropFetchCompression]
	if !ok {
		return DefaultFetchCompression
	}
	switch strings.ToLower(v) {
	case "none":
		return catalogv1.FetchCompression_FETCH_COMPRESSION_NONE
	case "gzip":
		return catalogv1.FetchCompression_FETCH_COMPRESSION_GZIP
	case "lz4":
		return catalogv1.FetchCompression_FETCH_COMPRESSION_LZ4
	case "zstd":
		return catalogv1.FetchCompression_FETCH_COMPRESSION_ZSTD
	}
	p.addf("%s is %q: want none, gzip, lz4 or zstd", PropFetchCompression, v)
	return catalogv1.FetchCompression_FETCH_COMPRESSION_UNSPECIFIED
}

func columnIndex(cols []types.Field, p *problems) map[string]types.DataType {
	idx := make(map[string]types.DataType, len(cols))
	if len(cols) == 0 {
		p.addf("the table has no columns")
	}
	for _, c := range cols {
		if err := c.Type.Validate(); err != nil {
			p.addf("column %s: %v", c.Name, err)
		}
		idx[c.Name] = c.Type
	}
	return idx
}

// columnMapping resolves the value format and the key, timestamp, headers
// and value columns, checking each against the schema.
func columnMapping(t Table, cols map[string]types.DataType, p *problems) *catalogv1.ColumnMapping {
	props := t.CustomProperties
	cm := &catalogv1.ColumnMapping{}

	format := "json"
	if v, ok := props[PropValueFormat]; ok {
		format = strings.ToLower(v)
	}
	switch format {
	case "json":
		cm.ValueFormat = catalogv1.ValueFormat_VALUE_FORMAT_JSON
	case "raw":
		cm.ValueFormat = catalogv1.ValueFormat_VALUE_FORMAT_RAW
	case "string":
		cm.ValueFormat = catalogv1.ValueFormat_VALUE_FORMAT_STRING
	case "avro":
		cm.ValueFormat = catalogv1.ValueFormat_VALUE_FORMAT_AVRO
	case "json-schema":
		cm.ValueFormat = catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA
	case "protobuf":
		cm.ValueFormat = catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF
	default:
		p.addf("%s is %q: want json, raw, string, avro, protobuf or json-schema", PropValueFormat, props[PropValueFormat])
	}

	// Which property claimed which column, to refuse overlaps.
	claimed := map[string]string{}
	claim := func(prop string, allowed func(types.DataType) bool, want string) string {
		name, ok := props[prop]
		if !ok {
			return ""
		}
		if name == "" {
			p.addf("%s is empty: name a column or leave the property out", prop)
			return ""
		}
		typ, ok := cols[name]
		if !ok {
			p.addf("%s names column %q, which the table does not have (columns: %s)", prop, name, columnNames(t.Columns))
			return ""
		}
		if other, dup := claimed[name]; dup {
			p.addf("%s and %s both name column %q: each part of a record needs its own column", other, prop, name)
			return ""
		}
		claimed[name] = prop
		if !allowed(typ) {
			p.addf("%s names column %s of type %s, want %s", prop, name, typ, want)
		}
		return name
	}
	cm.KeyColumn = claim(PropKeyColumn, keyType, "STRING or BYTES")
	cm.TimestampColumn = claim(PropTimestampColumn, timestampType, "TIMESTAMP_LTZ(p) or TIMESTAMP(p) with p >= 3, or BIGINT (epoch milliseconds)")
	cm.HeadersColumn = claim(PropHeadersColumn, headersType, "MAP<STRING, BYTES|STRING> or ARRAY<ROW<STRING, BYTES|STRING>>")

	unknown, hasUnknown := props[PropJSONUnknownFields]
	switch cm.ValueFormat {
	case catalogv1.ValueFormat_VALUE_FORMAT_JSON, catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA:
		if v, ok := props[PropValueColumn]; ok {
			p.addf("%s=%s contradicts %s=%s: a JSON value fills every column not taken by the key, timestamp or headers", PropValueColumn, v, PropValueFormat, format)
		}
		cm.UnknownFields = catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE
		if hasUnknown {
			switch strings.ToLower(unknown) {
			case "ignore":
			case "reject":
				cm.UnknownFields = catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT
			default:
				p.addf("%s is %q: want ignore or reject", PropJSONUnknownFields, unknown)
			}
		}
		if len(claimed) >= len(t.Columns) && len(t.Columns) > 0 {
			p.addf("%s=%s needs at least one column besides the key, timestamp and headers columns", PropValueFormat, format)
		}
	case catalogv1.ValueFormat_VALUE_FORMAT_AVRO, catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF:
		// An Avro record or Protobuf message fills the columns its fields
		// name, as a JSON object does; fields without a column are skipped.
		if v, ok := props[PropValueColumn]; ok {
			p.addf("%s=%s contradicts %s=%s: a record fills every column not taken by the key, timestamp or headers", PropValueColumn, v, PropValueFormat, format)
		}
		if hasUnknown {
			p.addf("%s only applies to %s=json or json-schema, not %s", PropJSONUnknownFields, PropValueFormat, format)
		}
		if len(claimed) >= len(t.Columns) && len(t.Columns) > 0 {
			p.addf("%s=%s needs at least one column besides the key, timestamp and headers columns", PropValueFormat, format)
		}
	case catalogv1.ValueFormat_VALUE_FORMAT_RAW, catalogv1.ValueFormat_VALUE_FORMAT_STRING:
		if hasUnknown {
			p.addf("%s only applies to %s=json or json-schema, not %s", PropJSONUnknownFields, PropValueFormat, format)
		}
		want, check := "BYTES", bytesType
		if cm.ValueFormat == catalogv1.ValueFormat_VALUE_FORMAT_STRING {
			want, check = "STRING", stringType
		}
		if _, ok := props[PropValueColumn]; ok {
			cm.ValueColumn = claim(PropValueColumn, check, want)
		} else {
			cm.ValueColumn = inferValueColumn(t.Columns, claimed, format, p)
			if cm.ValueColumn != "" {
				claimed[cm.ValueColumn] = PropValueColumn
				if typ := cols[cm.ValueColumn]; !check(typ) {
					p.addf("%s=%s stores the value in column %s, which has type %s, want %s", PropValueFormat, format, cm.ValueColumn, typ, want)
				}
			}
		}
		// Nothing in a raw or string record fills the other columns, so
		// they can only ever be NULL.
		for _, c := range t.Columns {
			if _, ok := claimed[c.Name]; !ok && !c.Type.Nullable {
				p.addf("column %s is NOT NULL but no part of a Kafka record fills it with %s=%s", c.Name, PropValueFormat, format)
			}
		}
	}
	return cm
}

// inferValueColumn picks the value column of a raw or string table without
// kafka.value.column: the one column no other property claimed.
func inferValueColumn(cols []types.Field, claimed map[string]string, format string, p *problems) string {
	var free []string
	for _, c := range cols {
		if _, ok := claimed[c.Name]; !ok {
			free = append(free, c.Name)
		}
	}
	switch len(free) {
	case 1:
		return free[0]
	case 0:
		p.addf("%s=%s needs a value column, but every column is taken by the key, timestamp or headers", PropValueFormat, format)
	default:
		p.addf("%s=%s: set %s to one of %s", PropValueFormat, format, PropValueColumn, strings.Join(free, ", "))
	}
	return ""
}

func keyType(t types.DataType) bool   { return t.Root == types.String || t.Root == types.Bytes }
func bytesType(t types.DataType) bool { return t.Root == types.Bytes }
func stringType(t types.DataType) bool {
	return t.Root == types.String
}

// timestampType accepts the types a Kafka record timestamp (epoch
// milliseconds) fits without loss.
func timestampType(t types.DataType) bool {
	switch t.Root {
	case types.TimestampLTZ, types.TimestampNTZ:
		return t.Precision >= 3
	case types.BigInt:
		return true
	}
	return false
}

// headersType accepts a map from header key to value (the last of
// duplicate keys wins) or an ordered list of key/value rows (duplicates
// kept). Header values may be null in Kafka; a NOT NULL value type makes
// such records fail at produce time rather than here.
func headersType(t types.DataType) bool {
	headerValue := func(v *types.DataType) bool {
		return v != nil && (v.Root == types.Bytes || v.Root == types.String)
	}
	switch t.Root {
	case types.Map:
		return t.Key != nil && t.Key.Root == types.String && headerValue(t.Value)
	case types.Array:
		e := t.Element
		return e != nil && e.Root == types.Row && len(e.Fields) == 2 &&
			e.Fields[0].Type.Root == types.String && headerValue(&e.Fields[1].Type)
	}
	return false
}

func columnNames(cols []types.Field) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// mappingID hashes the mapping and every table property: caches key on
// it, so it must change whenever the mapping or anything it was derived
// from changes (schema id, options), and stay equal otherwise.
func mappingID(m *catalogv1.TopicMapping, t Table) string {
	h := sha256.New()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		// Marshal of a message built from valid Go values cannot fail; if
		// it ever does, hashing the text form still changes with the content.
		b = []byte(m.String())
	}
	writeField(h, b)
	for _, props := range []map[string]string{t.Properties, t.CustomProperties} {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			writeField(h, []byte(k))
			writeField(h, []byte(props[k]))
		}
		writeField(h, nil) // separates the two maps
	}
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:16])
}

// writeField length-prefixes b so that concatenations cannot collide.
func writeField(h interface{ Write([]byte) (int, error) }, b []byte) {
	var n [8]byte
	l := uint64(len(b))
	for i := range n {
		n[i] = byte(l >> (8 * i))
	}
	_, _ = h.Write(n[:])
	_, _ = h.Write(b)
}

type problems []string

func (p *problems) addf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }
