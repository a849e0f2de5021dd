package fluss

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygw/ferry/services/fluss/partitioning"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// Table property keys (Fluss's ConfigOptions) Ferry reads.
const (
	PropLogFormat                 = "table.log.format"
	PropArrowCompressionType      = "table.log.arrow.compression.type"
	PropArrowCompressionZstdLevel = "table.log.arrow.compression.zstd.level"
	PropReplicationFactor         = "table.replication.factor"
	PropKvFormat                  = "table.kv.format"
)

// LogFormat is a table's log record format (table.log.format).
type LogFormat string

// Log formats; Fluss reads the property case-insensitively.
const (
	LogFormatArrow     LogFormat = "ARROW"
	LogFormatIndexed   LogFormat = "INDEXED"
	LogFormatCompacted LogFormat = "COMPACTED"
)

// ArrowCompression is the codec of Arrow log batches
// (table.log.arrow.compression.type).
type ArrowCompression string

// Arrow compression types.
const (
	ArrowCompressionNone     ArrowCompression = "NONE"
	ArrowCompressionLZ4Frame ArrowCompression = "LZ4_FRAME"
	ArrowCompressionZstd     ArrowCompression = "ZSTD"
)

// Defaults Fluss applies when a property is absent.
const (
	DefaultLogFormat        = LogFormatArrow
	DefaultArrowCompression = ArrowCompressionZstd
	DefaultZstdLevel        = 3
)

// TableDescriptor describes a table: what CreateTable sends and what
// GetTableInfo returns (Fluss's TableDescriptor and its JSON form).
type TableDescriptor struct {
	Schema  types.Schema
	Comment string
	// PartitionKeys names the partition columns; empty when not partitioned.
	PartitionKeys []string
	// BucketKeys names the columns hashed to pick a bucket; empty means the
	// server's default (the primary key minus partition keys, or none).
	BucketKeys []string
	// NumBuckets is the bucket count; 0 lets the server choose its default
	// when creating, and is always set in what the server returns.
	NumBuckets int
	// Properties are Fluss table options (table.*).
	Properties map[string]string
	// CustomProperties are free-form user properties.
	CustomProperties map[string]string
}

// TableInfo is what GetTableInfo returns about a table.
type TableInfo struct {
	TablePath
	TableID      int64
	SchemaID     int32
	CreatedTime  time.Time
	ModifiedTime time.Time
	TableDescriptor
}

// PrimaryKeys returns the primary key columns; empty for log tables.
func (t *TableInfo) PrimaryKeys() []string { return t.Schema.PrimaryKey }

// HasPrimaryKey reports whether the table is a primary key (KV) table.
func (t *TableInfo) HasPrimaryKey() bool { return len(t.Schema.PrimaryKey) > 0 }

// IsPartitioned reports whether the table has partition keys.
func (t *TableInfo) IsPartitioned() bool { return len(t.PartitionKeys) > 0 }

// PartitionGetter returns the getter that names the partition of the
// table's rows; it fails for tables that are not partitioned.
func (t *TableInfo) PartitionGetter() (*partitioning.Getter, error) {
	g, err := partitioning.NewGetter(t.Schema.Fields(), t.PartitionKeys)
	if err != nil {
		return nil, fmt.Errorf("fluss: table %s: %w", t.TablePath, err)
	}
	return g, nil
}

// AutoPartition returns the table's auto-partitioning options
// (table.auto-partition.*), defaulting as Fluss does.
func (t *TableInfo) AutoPartition() (partitioning.AutoPartition, error) {
	a, err := partitioning.ParseAutoPartition(t.Properties, t.PartitionKeys)
	if err != nil {
		return a, fmt.Errorf("fluss: table %s: %w", t.TablePath, err)
	}
	return a, nil
}

// LogFormat returns the table's log format, defaulting as Fluss does.
func (t *TableInfo) LogFormat() (LogFormat, error) {
	v, ok := t.Properties[PropLogFormat]
	if !ok {
		return DefaultLogFormat, nil
	}
	switch f := LogFormat(strings.ToUpper(strings.TrimSpace(v))); f {
	case LogFormatArrow, LogFormatIndexed, LogFormatCompacted:
		return f, nil
	default:
		return "", fmt.Errorf("fluss: table %s: %s=%q is not a known log format", t.TablePath, PropLogFormat, v)
	}
}

// KvFormat is a primary-key table's row format in its KV records
// (table.kv.format).
type KvFormat string

// KV formats Fluss 0.9.1 knows; DefaultKvFormat is what it uses when the
// table does not say, and the only one package compacted encodes.
const (
	KvFormatCompacted KvFormat = "COMPACTED"
	KvFormatIndexed   KvFormat = "INDEXED"
	DefaultKvFormat            = KvFormatCompacted
)

// KvFormat returns the table's KV row format, defaulting as Fluss does.
func (t *TableInfo) KvFormat() (KvFormat, error) {
	v, ok := t.Properties[PropKvFormat]
	if !ok {
		return DefaultKvFormat, nil
	}
	switch f := KvFormat(strings.ToUpper(strings.TrimSpace(v))); f {
	case KvFormatCompacted, KvFormatIndexed:
		return f, nil
	default:
		return "", fmt.Errorf("fluss: table %s: %s=%q is not a known kv format", t.TablePath, PropKvFormat, v)
	}
}

// PhysicalPrimaryKeys returns the primary key columns without the partition
// keys: the columns of the key in KV records (TableInfo.getPhysicalPrimaryKeys).
func (t *TableInfo) PhysicalPrimaryKeys() []string {
	var out []string
	for _, k := range t.Schema.PrimaryKey {
		if !slices.Contains(t.PartitionKeys, k) {
			out = append(out, k)
		}
	}
	return out
}

// ArrowCompression returns the table's Arrow compression and, for ZSTD, its
// level, defaulting as Fluss does.
func (t *TableInfo) ArrowCompression() (ArrowCompression, int, error) {
	c := DefaultArrowCompression
	if v, ok := t.Properties[PropArrowCompressionType]; ok {
		switch ac := ArrowCompression(strings.ToUpper(strings.TrimSpace(v))); ac {
		case ArrowCompressionNone, ArrowCompressionLZ4Frame, ArrowCompressionZstd:
			c = ac
		default:
			return "", 0, fmt.Errorf("fluss: table %s: %s=%q is not a known compression", t.TablePath, PropArrowCompressionType, v)
		}
	}
	level := DefaultZstdLevel
	if v, ok := t.Properties[PropArrowCompressionZstdLevel]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 22 {
			return "", 0, fmt.Errorf("fluss: table %s: %s=%q must be an integer 1..22", t.TablePath, PropArrowCompressionZstdLevel, v)
		}
		level = n
	}
	if c != ArrowCompressionZstd {
		level = 0
	}
	return c, level, nil
}

// tableJSON is Fluss's TableDescriptorJsonSerde shape.
type tableJSON struct {
	Version          int               `json:"version"`
	Schema           json.RawMessage   `json:"schema"`
	Comment          *string           `json:"comment,omitempty"`
	PartitionKey     []string          `json:"partition_key"`
	BucketKey        *[]string         `json:"bucket_key,omitempty"`
	BucketCount      *int              `json:"bucket_count,omitempty"`
	Properties       map[string]string `json:"properties"`
	CustomProperties map[string]string `json:"custom_properties"`
}

// ParseTableDescriptorJSON decodes table_json as GetTableInfo returns it.
func ParseTableDescriptorJSON(data []byte) (TableDescriptor, error) {
	var tj tableJSON
	if err := json.Unmarshal(data, &tj); err != nil {
		return TableDescriptor{}, fmt.Errorf("fluss table json: %w", err)
	}
	if len(tj.Schema) == 0 {
		return TableDescriptor{}, fmt.Errorf("fluss table json: no \"schema\" member")
	}
	s, err := types.ParseSchemaJSON(tj.Schema)
	if err != nil {
		return TableDescriptor{}, err
	}
	d := TableDescriptor{
		Schema:           s,
		PartitionKeys:    tj.PartitionKey,
		Properties:       tj.Properties,
		CustomProperties: tj.CustomProperties,
	}
	if tj.Comment != nil {
		d.Comment = *tj.Comment
	}
	if tj.BucketKey != nil {
		d.BucketKeys = *tj.BucketKey
	}
	if tj.BucketCount != nil {
		d.NumBuckets = *tj.BucketCount
	}
	if d.Properties == nil {
		d.Properties = map[string]string{}
	}
	if d.CustomProperties == nil {
		d.CustomProperties = map[string]string{}
	}
	for _, k := range slices.Concat(d.PartitionKeys, d.BucketKeys) {
		if s.ColumnIndex(k) < 0 {
			return TableDescriptor{}, fmt.Errorf("fluss table json: key column %q is not in the schema", k)
		}
	}
	return d, nil
}

// Validate reports a descriptor Fluss would reject for reasons visible
// without asking the server.
func (d TableDescriptor) Validate() error {
	if err := d.Schema.Validate(); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	for _, k := range d.PartitionKeys {
		if d.Schema.ColumnIndex(k) < 0 {
			return fmt.Errorf("partition key %q is not a column", k)
		}
	}
	for _, k := range d.BucketKeys {
		if d.Schema.ColumnIndex(k) < 0 {
			return fmt.Errorf("bucket key %q is not a column", k)
		}
	}
	if d.NumBuckets < 0 {
		return fmt.Errorf("bucket count %d is negative", d.NumBuckets)
	}
	return nil
}

// MarshalJSON encodes the descriptor as Fluss's TableDescriptorJsonSerde
// does, for CreateTable.
func (d TableDescriptor) MarshalJSON() ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("fluss: table descriptor: %w", err)
	}
	schema, err := types.MarshalSchemaJSON(d.Schema)
	if err != nil {
		return nil, err
	}
	tj := tableJSON{
		Version:          1,
		Schema:           schema,
		PartitionKey:     d.PartitionKeys,
		Properties:       d.Properties,
		CustomProperties: d.CustomProperties,
	}
	if tj.PartitionKey == nil {
		tj.PartitionKey = []string{}
	}
	if tj.Properties == nil {
		tj.Properties = map[string]string{}
	}
	if tj.CustomProperties == nil {
		tj.CustomProperties = map[string]string{}
	}
	if d.Comment != "" {
		tj.Comment = &d.Comment
	}
	// Fluss's reader reads bucket_key whenever bucket_count is present, so
	// an explicit count always comes with a (possibly empty) key list.
	if d.NumBuckets > 0 || len(d.BucketKeys) > 0 {
		keys := append([]string{}, d.BucketKeys...)
		tj.BucketKey = &keys
		if d.NumBuckets > 0 {
			n := d.NumBuckets
			tj.BucketCount = &n
		}
	}
	return json.Marshal(tj)
}

// DatabaseDescriptor describes a database (Fluss's DatabaseDescriptor).
type DatabaseDescriptor struct {
	Comment          string
	CustomProperties map[string]string
}

type databaseJSON struct {
	Version          int               `json:"version"`
	Comment          *string           `json:"comment,omitempty"`
	CustomProperties map[string]string `json:"custom_properties"`
}

// MarshalJSON encodes the descriptor as Fluss's DatabaseDescriptorJsonSerde.
func (d DatabaseDescriptor) MarshalJSON() ([]byte, error) {
	dj := databaseJSON{Version: 1, CustomProperties: maps.Clone(d.CustomProperties)}
	if dj.CustomProperties == nil {
		dj.CustomProperties = map[string]string{}
	}
	if d.Comment != "" {
		dj.Comment = &d.Comment
	}
	return json.Marshal(dj)
}

func parseDatabaseJSON(data []byte) (DatabaseDescriptor, error) {
	var dj databaseJSON
	if err := json.Unmarshal(data, &dj); err != nil {
		return DatabaseDescriptor{}, fmt.Errorf("fluss database json: %w", err)
	}
	d := DatabaseDescriptor{CustomProperties: dj.CustomProperties}
	if dj.Comment != nil {
		d.Comment = *dj.Comment
	}
	if d.CustomProperties == nil {
		d.CustomProperties = map[string]string{}
	}
	return d, nil
}

// DatabaseInfo is what GetDatabaseInfo returns.
type DatabaseInfo struct {
	Name         string
	CreatedTime  time.Time
	ModifiedTime time.Time
	DatabaseDescriptor
}
