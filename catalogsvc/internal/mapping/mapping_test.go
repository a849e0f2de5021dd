package mapping

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
)

func typ(root types.Root, nullable bool) types.DataType {
	return types.DataType{Root: root, Nullable: nullable}
}

func ptr(t types.DataType) *types.DataType { return &t }

var (
	tString = typ(types.String, true)
	tBytes  = typ(types.Bytes, true)
	tBigint = typ(types.BigInt, true)
	tInt    = typ(types.Int, true)
	// ARRAY<STRING>
	tArrayString = types.DataType{Root: types.Array, Nullable: true, Element: &types.DataType{Root: types.String, Nullable: true}}
	tLTZ3        = types.DataType{Root: types.TimestampLTZ, Precision: 3, Nullable: true}
	tLTZ0        = types.DataType{Root: types.TimestampLTZ, Precision: 0, Nullable: true}
	tNTZ6        = types.DataType{Root: types.TimestampNTZ, Precision: 6, Nullable: true}
	tHdrMap      = types.DataType{Root: types.Map, Nullable: true, Key: ptr(typ(types.String, false)), Value: ptr(tBytes)}
	tHdrArr      = types.DataType{Root: types.Array, Nullable: true, Element: ptr(types.DataType{Root: types.Row, Nullable: true,
		Fields: []types.Field{{Name: "k", Type: tString}, {Name: "v", Type: tString}}})}
	tHdrBad = types.DataType{Root: types.Map, Nullable: true, Key: ptr(tInt), Value: ptr(tBytes)}
)

// base is a minimal exposable table: a log table with JSON values.
func base() Table {
	return Table{
		Database: "shop", Name: "orders", TableID: 42, SchemaID: 1, BucketCount: 3,
		Columns: []types.Field{
			{Name: "id", Type: tBigint},
			{Name: "item", Type: tString},
		},
		Properties:       map[string]string{},
		CustomProperties: map[string]string{PropEnabled: "true"},
	}
}

func with(mod func(*Table)) Table {
	t := base()
	mod(&t)
	return t
}

func props(kv ...string) func(*Table) {
	return func(t *Table) {
		for i := 0; i+1 < len(kv); i += 2 {
			t.CustomProperties[kv[i]] = kv[i+1]
		}
	}
}

func columns(f ...types.Field) func(*Table) {
	return func(t *Table) { t.Columns = f }
}

func chain(mods ...func(*Table)) func(*Table) {
	return func(t *Table) {
		for _, m := range mods {
			m(t)
		}
	}
}

// pkColumns makes the named columns NOT NULL STRING keys (Fluss makes
// primary-key columns NOT NULL) followed by a nullable STRING column v; a
// column named "id" is a NOT NULL BIGINT.
func pkColumns(names ...string) func(*Table) {
	var f []types.Field
	for _, n := range names {
		ty := typ(types.String, false)
		if n == "id" {
			ty = typ(types.BigInt, false)
		}
		f = append(f, types.Field{Name: n, Type: ty})
	}
	return columns(append(f, types.Field{Name: "v", Type: tString})...)
}

var opts = Options{ClusterID: "test-cluster", Exposure: ExposeOptIn}

func TestResolveAccepts(t *testing.T) {
	tests := []struct {
		name  string
		table Table
		opts  Options
		check func(t *testing.T, m *catalogv1.TopicMapping)
	}{
		{"json defaults", base(), opts, func(t *testing.T, m *catalogv1.TopicMapping) {
			expect(t, "topic", m.Topic, "shop.orders")
			expect(t, "partitions", m.PartitionCount, int32(3))
			expect(t, "format", m.Mapping.ValueFormat, catalogv1.ValueFormat_VALUE_FORMAT_JSON)
			expect(t, "unknown", m.Mapping.UnknownFields, catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE)
			expect(t, "compression", m.ArrowCompression, catalogv1.ArrowCompression_ARROW_COMPRESSION_ZSTD)
			expect(t, "level", m.ArrowCompressionLevel, int32(3))
			expect(t, "fetch compression", m.FetchCompression, DefaultFetchCompression)
			expect(t, "table id", m.TableId, int64(42))
			expect(t, "schema id", m.SchemaId, int32(1))
			expect(t, "db", m.Database, "shop")
			expect(t, "table", m.Table, "orders")
			expect(t, "columns", len(m.Columns), 2)
			expect(t, "col type", m.Columns[0].Type.Root, catalogv1.TypeRoot_TYPE_ROOT_BIGINT)
			expect(t, "topic id", len(m.TopicId), 16)
			if m.MappingId == "" {
				t.Error("mapping id is empty")
			}
		}},
		{"expose all without kafka.enabled", with(func(t *Table) { delete(t.CustomProperties, PropEnabled) }),
			Options{ClusterID: "c", Exposure: ExposeAll}, func(t *testing.T, m *catalogv1.TopicMapping) {
				expect(t, "topic", m.Topic, "shop.orders")
			}},
		{"enabled is case-insensitive", with(props(PropEnabled, "TRUE")), opts, nil},
		{"topic override", with(props(PropTopic, "orders-v1.events")), opts, func(t *testing.T, m *catalogv1.TopicMapping) {
			expect(t, "topic", m.Topic, "orders-v1.events")
		}},
		{"json reject unknown", with(props(PropJSONUnknownFields, "Reject")), opts, func(t *testing.T, m *catalogv1.TopicMapping) {
			expect(t, "unknown", m.Mapping.UnknownFields, catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT)
		}},
		{"fetch compression zstd", with(props(PropFetchCompression, "ZSTD")), opts, func(t *testing.T, m *catalogv1.TopicMapping) {
			expect(t, "fetch compression", m.FetchCompression, catalogv1.FetchCompression_FETCH_COMPRESSION_ZSTD)
		}},
		{"fetch compression none", with(props(PropFetchCompression, "none")), opts, func(t *testing.T, m *catalogv1.TopicMapping) {
			expect(t, "fetch compression", m.FetchCompression, catalogv1.FetchCompression_FETCH_COMPRESSION_NONE)
		}},
		{"json with key timestamp headers", with(chain(
			columns(types.Field{Name: "k", Type: tString}, types.Field{Name: "ts", Type: tLTZ3},
				types.Field{Name: "h", Type: tHdrMap}, types.Field{Name: "amount", Type: tInt}),
			props(PropKeyColumn, "k", PropTimestampColumn, "ts", PropHeadersColumn, "h"))), opts,
			func(t *testing.T, m *catalogv1.TopicMapping) {
				expect(t, "key", m.Mapping.KeyColumn, "k")
				expect(t, "ts", m.Mapping.TimestampColumn, "ts")
				expect(t, "headers", m.Mapping.HeadersColumn, "h")
				expect(t, "value column", m.Mapping.ValueColumn, "")
				expect(t, "headers type", m.Columns[2].Type.Key.Root, catalogv1.TypeRoot_TYPE_ROOT_STRING)
			}},
		{"raw infers the one free column", with(chain(
			columns(types.Field{Name: "k", Type: tBytes}, types.Field{Name: "payload", Type: tBytes}),
			props(PropValueFormat, "raw", PropKeyColumn, "k"))), opts,
			func(t *testing.T, m *catalogv1.TopicMapping) {
				expect(t, "format", m.Mapping.ValueFormat, catalogv1.ValueFormat_VALUE_FORMAT_RAW)
				expect(t, "value", m.Mapping.ValueColumn, "payload")
			}},
		{"string with explicit value column and nullable extras", with(chain(
			columns(types.Field{Name: "line", Type: tString}, types.Field{Name: "note", Type: tString},
				types.Field{Name: "ts", Type: tBigint}),
			props(PropValueFormat, "string", PropValueColumn, "line", PropTimestampColumn, "ts"))), opts,
			func(t *testing.T, m *catalogv1.TopicMapping) {
				expect(t, "format", m.Mapping.ValueFormat, catalogv1.ValueFormat_VALUE_FORMAT_STRING)
				expect(t, "value", m.Mapping.ValueColumn, "line")
				expect(t, "ts", m.Mapping.TimestampColumn, "ts")
			}},
		{"timestamp NTZ(6) and headers as array of rows", with(chain(
			columns(types.Field{Name: "v", Type: tString}, types.Field{Name: "ts", Type: tNTZ6}, types.Field{Name: "h", Type: tHdrArr}),
			props(PropTimestampColumn, "ts", PropHeadersColumn, "h"))), opts, nil},
		{"compression none has no level", with(func(t *Table) { t.Properties[PropArrowCompression] = "none" }), opts,
			func(t *testing.T, m *catalogv1.TopicMapping) {
				expect(t, "compression", m.ArrowCompression, catalogv1.ArrowCompression_ARROW_COMPRESSION_NONE)
				expect(t, "level", m.ArrowCompressionLevel, int32(0))
			}},
		{"lz4", with(func(t *Table) { t.Properties[PropArrowCompression] = "LZ4_FRAME" }), opts,
			func(t *testing.T, m *catalogv1.TopicMapping) {
				expect(t, "compression", m.ArrowCompression, catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME)
			}},
		{"zstd level", with(func(t *Table) { t.Properties[PropArrowCompressionLevel] = "9" }), opts,
			func(t *testing.T, m *catalogv1.TopicMapping) {
				expect(t, "level", m.ArrowCompressionLevel, int32(9))
			}},
		{"avro", with(props(PropValueFormat, "Avro")), opts,
			func(t *testing.T, m *catalogv1.TopicMapping) {
				expect(t, "format", m.Mapping.ValueFormat, catalogv1.ValueFormat_VALUE_FORMAT_AVRO)
				expect(t, "value column", m.Mapping.ValueColumn, "")
			}},
		{"protobuf", with(props(PropValueFormat, "PROTOBUF")), opts,
			func(t *testing.T, m *catalogv1.TopicMapping) {
				expect(t, "format", m.Mapping.ValueFormat, catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF)
				expect(t, "value column", m.Mapping.ValueColumn, "")
			}},
		{"json-schema takes the unknown-fields policy", with(props(PropValueFormat, "JSON-Schema", PropJSONUnknownFields, "reject")), opts,
			func(t *testing.T, m *catalogv1.TopicMapping) {
				expect(t, "format", m.Mapping.ValueFormat, catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA)
				expect(t, "unknown", m.Mapping.UnknownFields, catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT)
			}},
		{"explicit arrow log format", with(func(t *Table) { t.Properties[PropLogFormat] = "arrow" }), opts, nil},
		{"non-kafka custom properties are ignored", with(props("owner", "team-a", "kafkaesque", "x")), opts, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, r := Resolve(tt.table, tt.opts)
			if r != nil {
				t.Fatalf("refused: %v", r)
			}
			if tt.check != nil {
				tt.check(t, m)
			}
		})
	}
}

func TestResolveRefuses(t *testing.T) {
	long := strings.Repeat("a", 125)
	tests := []struct {
		name  string
		table Table
		opts  Options
		kind  RefusalKind
		topic string
		want  []string // substrings of the reasons, each must appear
	}{
		{"not opted in", with(func(t *Table) { delete(t.CustomProperties, PropEnabled) }), opts, Hidden, "shop.orders", []string{"not opted in"}},
		{"opted out wins over expose all", with(props(PropEnabled, "false")), Options{Exposure: ExposeAll}, Hidden, "shop.orders", []string{"kafka.enabled is false"}},
		{"bad enabled value", with(props(PropEnabled, "yes")), opts, Incompatible, "shop.orders", []string{`kafka.enabled must be true or false, got "yes"`}},
		{"unknown kafka property", with(props("kafka.value.formt", "raw")), opts, Incompatible, "shop.orders", []string{"unknown property kafka.value.formt"}},
		{"indexed kv format", with(func(t *Table) { t.PrimaryKeys = []string{"id"}; t.Properties[PropKvFormat] = "INDEXED" }), opts, Incompatible, "shop.orders",
			[]string{"table.kv.format is INDEXED: only COMPACTED"}},
		{"nested column in a primary-key table", with(chain(columns(types.Field{Name: "id", Type: typ(types.BigInt, false)}, types.Field{Name: "tags", Type: tArrayString}),
			func(t *Table) { t.PrimaryKeys = []string{"id"} })), opts, Incompatible, "shop.orders", []string{"primary-key table rows: "}},
		{"primary key of partition keys only", with(func(t *Table) { t.PrimaryKeys = []string{"item"}; t.PartitionKeys = []string{"item"} }), opts, Incompatible, "shop.orders",
			[]string{"holds only partition keys"}},
		{"key column not the primary key", with(chain(columns(types.Field{Name: "id", Type: typ(types.BigInt, false)}, types.Field{Name: "k", Type: tString}, types.Field{Name: "v", Type: tString}),
			props(PropKeyColumn, "k"), func(t *Table) { t.PrimaryKeys = []string{"id"} })), opts, Incompatible, "shop.orders",
			[]string{"kafka.key.column=k on a primary-key table must name its single primary-key column (primary key: id)"}},
		{"timestamp column in the primary key", with(chain(columns(types.Field{Name: "ts", Type: typ(types.BigInt, false)}, types.Field{Name: "v", Type: tString}),
			props(PropTimestampColumn, "ts"), func(t *Table) { t.PrimaryKeys = []string{"ts"} })), opts, Incompatible, "shop.orders",
			[]string{"kafka.timestamp.column=ts names a primary-key column"}},
		{"headers column in the primary key", with(chain(columns(types.Field{Name: "id", Type: typ(types.BigInt, false)},
			types.Field{Name: "h", Type: types.DataType{Root: types.Map, Key: ptr(typ(types.String, false)), Value: ptr(tBytes)}}, types.Field{Name: "v", Type: tString}),
			props(PropHeadersColumn, "h"), func(t *Table) { t.PrimaryKeys = []string{"id", "h"} })), opts, Incompatible, "shop.orders",
			[]string{"kafka.headers.column=h names a primary-key column"}},
		{"key column one of a composite primary key", with(chain(pkColumns("id", "k"), props(PropKeyColumn, "k"),
			func(t *Table) { t.PrimaryKeys = []string{"id", "k"} })), opts, Incompatible, "shop.orders",
			[]string{"kafka.key.column=k on a primary-key table must name its single primary-key column (primary key: id, k); leave it unset to send keys as JSON objects of the primary-key fields"}},
		{"key column is the single primary key but BIGINT", with(chain(pkColumns("id"), props(PropKeyColumn, "id"),
			func(t *Table) { t.PrimaryKeys = []string{"id"} })), opts, Incompatible, "shop.orders",
			[]string{"kafka.key.column names column id of type BIGINT NOT NULL, want STRING or BYTES"}},
		{"raw primary-key table without its key column", with(chain(columns(types.Field{Name: "id", Type: typ(types.BigInt, false)}, types.Field{Name: "v", Type: tBytes}),
			props(PropValueFormat, "raw", PropValueColumn, "v"), func(t *Table) { t.PrimaryKeys = []string{"id"} })), opts, Incompatible, "shop.orders",
			[]string{"column id is NOT NULL but no part of a Kafka record fills it with kafka.value.format=raw"}},
		{"string primary-key table keyed by a column outside the primary key", with(chain(
			columns(types.Field{Name: "id", Type: typ(types.String, false)}, types.Field{Name: "k", Type: tString}, types.Field{Name: "v", Type: tString}),
			props(PropValueFormat, "string", PropValueColumn, "v", PropKeyColumn, "k"), func(t *Table) { t.PrimaryKeys = []string{"id"} })), opts, Incompatible, "shop.orders",
			[]string{"kafka.key.column=k on a primary-key table must name its single primary-key column (primary key: id)", "column id is NOT NULL"}},
		{"unknown kv format", with(func(t *Table) { t.PrimaryKeys = []string{"id"}; t.Properties[PropKvFormat] = "ROWS" }), opts, Incompatible, "shop.orders",
			[]string{"table.kv.format is ROWS: only COMPACTED KV rows are written"}},
		{"map column in a primary-key table", with(chain(columns(types.Field{Name: "id", Type: typ(types.BigInt, false)}, types.Field{Name: "h", Type: tHdrMap}),
			func(t *Table) { t.PrimaryKeys = []string{"id"} })), opts, Incompatible, "shop.orders", []string{`primary-key table rows: compacted: column "h" has type MAP`}},
		{"partitioned primary key of partition keys only", with(chain(pkColumns("id", "dt"), func(t *Table) {
			t.PrimaryKeys = []string{"dt"}
			t.PartitionKeys = []string{"dt"}
		})), opts, Incompatible, "shop.orders", []string{"primary key dt holds only partition keys"}},
		{"double partition key on a primary-key table", with(chain(
			columns(types.Field{Name: "id", Type: typ(types.BigInt, false)}, types.Field{Name: "d", Type: typ(types.Double, false)}, types.Field{Name: "v", Type: tString}),
			func(t *Table) { t.PrimaryKeys = []string{"id", "d"}; t.PartitionKeys = []string{"d"} })), opts, Incompatible, "shop.orders",
			[]string{`partition key d: partitioning: partition key "d" has type DOUBLE NOT NULL: FLOAT and DOUBLE partition keys are named differently by different JVMs`}},
		{"decimal partition key", with(chain(columns(types.Field{Name: "p", Type: types.DataType{Root: types.Decimal, Precision: 10, Scale: 2, Nullable: true}}, types.Field{Name: "v", Type: tString}),
			func(t *Table) { t.PartitionKeys = []string{"p"} })), opts, Incompatible, "shop.orders", []string{"which Fluss does not allow as a partition key"}},
		{"auto-partition enabled is not a boolean", with(func(t *Table) {
			t.PartitionKeys = []string{"item"}
			t.Properties["table.auto-partition.enabled"] = "yes"
		}), opts, Incompatible, "shop.orders", []string{"auto-partitioning: table.auto-partition.enabled: "}},
		{"auto-partition key not among several partition keys", with(chain(pkColumns("id", "a", "b"), func(t *Table) {
			t.PartitionKeys = []string{"a", "b"}
			t.Properties["table.auto-partition.enabled"] = "true"
			t.Properties["table.auto-partition.key"] = "id"
		})), opts, Incompatible, "shop.orders", []string{`auto-partitioning: table.auto-partition.key="id" does not name one of the partition keys [a b]`}},
		{"nested bucket key on a primary-key table", with(chain(columns(types.Field{Name: "id", Type: typ(types.BigInt, false)},
			types.Field{Name: "tags", Type: tArrayString}), func(t *Table) { t.PrimaryKeys = []string{"id"}; t.BucketKeys = []string{"tags"} })), opts, Incompatible, "shop.orders",
			[]string{`bucket key tags: bucketing: bucket key "tags" has type ARRAY<STRING>, which Fluss cannot hash`}},
		{"bucket key that is not a column", with(func(t *Table) { t.BucketKeys = []string{"nope"} }), opts, Incompatible, "shop.orders",
			[]string{`bucket key nope: bucketing: bucket key "nope" is not a column`}},
		{"float partition key", with(chain(columns(types.Field{Name: "f", Type: typ(types.Float, true)}, types.Field{Name: "v", Type: tString}),
			func(t *Table) { t.PartitionKeys = []string{"f"} })), opts, Incompatible, "shop.orders", []string{"partition key f: "}},
		{"bad auto-partition option", with(func(t *Table) {
			t.PartitionKeys = []string{"item"}
			t.Properties["table.auto-partition.enabled"] = "true"
			t.Properties["table.auto-partition.time-unit"] = "WEEK"
		}), opts, Incompatible, "shop.orders", []string{"auto-partitioning: table.auto-partition.time-unit=\"WEEK\""}},
		{"nested bucket key", with(chain(columns(types.Field{Name: "tags", Type: tArrayString}, types.Field{Name: "v", Type: tString}),
			func(t *Table) { t.BucketKeys = []string{"tags"} })), opts, Incompatible, "shop.orders", []string{"bucket key tags: "}},
		{"keyed lake table", with(func(t *Table) { t.BucketKeys = []string{"id"}; t.Properties[PropDatalakeFormat] = "paimon" }), opts, Incompatible, "shop.orders",
			[]string{"table.datalake.format is paimon"}},
		{"zero buckets", with(func(t *Table) { t.BucketCount = 0 }), opts, Incompatible, "shop.orders", []string{"bucket count is 0"}},
		{"indexed log format", with(func(t *Table) { t.Properties[PropLogFormat] = "INDEXED" }), opts, Incompatible, "shop.orders", []string{"table.log.format is INDEXED"}},
		{"bad compression", with(func(t *Table) { t.Properties[PropArrowCompression] = "gzip" }), opts, Incompatible, "shop.orders", []string{"want NONE, LZ4_FRAME or ZSTD"}},
		{"bad zstd level", with(func(t *Table) { t.Properties[PropArrowCompressionLevel] = "23" }), opts, Incompatible, "shop.orders", []string{"zstd.level is \"23\""}},
		{"default name too long", with(func(t *Table) { t.Database = long; t.Name = long }), opts, Incompatible, "", []string{"at most 249", "set kafka.topic"}},
		{"override with illegal char", with(props(PropTopic, "orders/v1")), opts, Incompatible, "", []string{`contains '/'`}},
		{"override internal prefix", with(props(PropTopic, "__orders")), opts, Incompatible, "", []string{"reserves for internal topics"}},
		{"override dot", with(props(PropTopic, "..")), opts, Incompatible, "", []string{"not allowed"}},
		{"bad value format", with(props(PropValueFormat, "xml")), opts, Incompatible, "shop.orders", []string{`kafka.value.format is "xml": want json, raw, string, avro, protobuf or json-schema`}},
		{"value column with protobuf", with(props(PropValueFormat, "protobuf", PropValueColumn, "item")), opts, Incompatible, "shop.orders", []string{"contradicts kafka.value.format=protobuf"}},
		{"unknown-fields with protobuf", with(props(PropValueFormat, "Protobuf", PropJSONUnknownFields, "ignore")), opts, Incompatible, "shop.orders", []string{"only applies to kafka.value.format=json or json-schema, not protobuf"}},
		{"protobuf without value column", with(chain(columns(types.Field{Name: "b", Type: tBytes}), props(PropValueFormat, "protobuf", PropKeyColumn, "b"))),
			opts, Incompatible, "shop.orders", []string{"kafka.value.format=protobuf needs at least one column"}},
		{"value column with json-schema", with(props(PropValueFormat, "json-schema", PropValueColumn, "item")), opts, Incompatible, "shop.orders", []string{"contradicts kafka.value.format=json-schema"}},
		{"value column with avro", with(props(PropValueFormat, "avro", PropValueColumn, "item")), opts, Incompatible, "shop.orders", []string{"contradicts kafka.value.format=avro"}},
		{"unknown-fields with avro", with(props(PropValueFormat, "AVRO", PropJSONUnknownFields, "reject")), opts, Incompatible, "shop.orders", []string{"only applies to kafka.value.format=json or json-schema, not avro"}},
		{"avro without value column", with(chain(columns(types.Field{Name: "b", Type: tBytes}), props(PropValueFormat, "avro", PropKeyColumn, "b"))),
			opts, Incompatible, "shop.orders", []string{"kafka.value.format=avro needs at least one column"}},
		{"value column with json", with(props(PropValueColumn, "item")), opts, Incompatible, "shop.orders", []string{"contradicts kafka.value.format=json"}},
		{"unknown-fields with raw", with(chain(columns(types.Field{Name: "b", Type: tBytes}), props(PropValueFormat, "raw", PropJSONUnknownFields, "ignore"))),
			opts, Incompatible, "shop.orders", []string{"only applies to kafka.value.format=json or json-schema, not raw"}},
		{"bad fetch compression", with(props(PropFetchCompression, "snappy")), opts, Incompatible, "shop.orders", []string{`kafka.fetch.compression is "snappy": want none, gzip, lz4 or zstd`}},
		{"bad unknown-fields", with(props(PropJSONUnknownFields, "drop")), opts, Incompatible, "shop.orders", []string{"want ignore or reject"}},
		{"missing key column", with(props(PropKeyColumn, "nope")), opts, Incompatible, "shop.orders", []string{`names column "nope", which the table does not have (columns: id, item)`}},
		{"empty key column", with(props(PropKeyColumn, "")), opts, Incompatible, "shop.orders", []string{"kafka.key.column is empty"}},
		{"key column wrong type", with(props(PropKeyColumn, "id")), opts, Incompatible, "shop.orders", []string{"kafka.key.column names column id of type BIGINT, want STRING or BYTES"}},
		{"timestamp precision 0", with(chain(columns(types.Field{Name: "ts", Type: tLTZ0}, types.Field{Name: "v", Type: tString}), props(PropTimestampColumn, "ts"))),
			opts, Incompatible, "shop.orders", []string{"kafka.timestamp.column names column ts of type TIMESTAMP_LTZ(0)"}},
		{"timestamp as INT", with(chain(columns(types.Field{Name: "ts", Type: tInt}, types.Field{Name: "v", Type: tString}), props(PropTimestampColumn, "ts"))),
			opts, Incompatible, "shop.orders", []string{"kafka.timestamp.column names column ts of type INT, want TIMESTAMP_LTZ(p)"}},
		{"timestamp as BIGINT is fine but headers as STRING is not", with(props(PropTimestampColumn, "id", PropHeadersColumn, "item")),
			opts, Incompatible, "shop.orders", []string{"kafka.headers.column names column item of type STRING"}},
		{"headers map with INT keys", with(chain(columns(types.Field{Name: "h", Type: tHdrBad}, types.Field{Name: "v", Type: tString}), props(PropHeadersColumn, "h"))),
			opts, Incompatible, "shop.orders", []string{"kafka.headers.column names column h"}},
		{"overlap", with(props(PropKeyColumn, "item", PropHeadersColumn, "item")), opts, Incompatible, "shop.orders",
			[]string{`kafka.key.column and kafka.headers.column both name column "item"`}},
		{"json without value columns", with(chain(columns(types.Field{Name: "k", Type: tString}), props(PropKeyColumn, "k"))),
			opts, Incompatible, "shop.orders", []string{"needs at least one column besides"}},
		{"raw ambiguous value column", with(chain(columns(types.Field{Name: "a", Type: tBytes}, types.Field{Name: "b", Type: tBytes}), props(PropValueFormat, "raw"))),
			opts, Incompatible, "shop.orders", []string{"set kafka.value.column to one of a, b"}},
		{"raw inferred column wrong type", with(chain(columns(types.Field{Name: "a", Type: tString}), props(PropValueFormat, "raw"))),
			opts, Incompatible, "shop.orders", []string{"stores the value in column a, which has type STRING, want BYTES"}},
		{"string value column wrong type", with(chain(columns(types.Field{Name: "a", Type: tBytes}), props(PropValueFormat, "string", PropValueColumn, "a"))),
			opts, Incompatible, "shop.orders", []string{"kafka.value.column names column a of type BYTES, want STRING"}},
		{"raw with NOT NULL leftover", with(chain(columns(types.Field{Name: "a", Type: tBytes}, types.Field{Name: "n", Type: typ(types.Int, false)}),
			props(PropValueFormat, "raw", PropValueColumn, "a"))), opts, Incompatible, "shop.orders",
			[]string{"column n is NOT NULL but no part of a Kafka record fills it"}},
		{"raw with every column taken", with(chain(columns(types.Field{Name: "k", Type: tBytes}), props(PropValueFormat, "raw", PropKeyColumn, "k"))),
			opts, Incompatible, "shop.orders", []string{"every column is taken"}},
		{"invalid column type", with(columns(types.Field{Name: "d", Type: types.DataType{Root: types.Decimal, Precision: 40}})),
			opts, Incompatible, "shop.orders", []string{"column d: DECIMAL(40, 0)"}},
		{"no columns", with(columns()), opts, Incompatible, "shop.orders", []string{"the table has no columns"}},
		{"every problem is reported", with(func(t *Table) {
			t.PrimaryKeys = []string{"item"}
			t.PartitionKeys = []string{"item"}
			t.CustomProperties[PropValueFormat] = "xml"
		}), opts, Incompatible, "shop.orders", []string{"holds only partition keys", "xml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, r := Resolve(tt.table, tt.opts)
			if r == nil {
				t.Fatalf("accepted, want refusal: %v", m)
			}
			if m != nil {
				t.Errorf("refusal came with a mapping: %v", m)
			}
			expect(t, "kind", r.Kind, tt.kind)
			expect(t, "topic", r.Topic, tt.topic)
			for _, w := range tt.want {
				if !strings.Contains(r.Error(), w) {
					t.Errorf("reasons %q do not mention %q", r.Error(), w)
				}
			}
		})
	}
}

func TestTopicIDIsStablePerTableAndCluster(t *testing.T) {
	a, _ := Resolve(base(), opts)
	b, _ := Resolve(base(), opts)
	if !bytes.Equal(a.TopicId, b.TopicId) {
		t.Fatal("same table, different topic ids")
	}
	// Pinned value: a change here would make every client see every topic
	// as recreated after an upgrade.
	want := uuid.NewSHA1(uuid.MustParse("87c7f24d-7517-4ee3-8f89-8a91731fe3d2"), []byte("topic/test-cluster/42"))
	if !bytes.Equal(a.TopicId, want[:]) {
		t.Fatalf("topic id %x, want %x", a.TopicId, want[:])
	}
	if id := uuid.UUID(a.TopicId); id.Version() != 5 {
		t.Errorf("topic id version %d, want 5", id.Version())
	}
	recreated, _ := Resolve(with(func(t *Table) { t.TableID = 43 }), opts)
	if bytes.Equal(a.TopicId, recreated.TopicId) {
		t.Error("a recreated table (new table id) kept its topic id")
	}
	other, _ := Resolve(base(), Options{ClusterID: "other", Exposure: ExposeOptIn})
	if bytes.Equal(a.TopicId, other.TopicId) {
		t.Error("two clusters share a topic id")
	}
	renamed, _ := Resolve(with(props(PropTopic, "renamed")), opts)
	if !bytes.Equal(a.TopicId, renamed.TopicId) {
		t.Error("renaming the topic changed the id of the same table")
	}
}

func TestMappingID(t *testing.T) {
	ref, _ := Resolve(base(), opts)
	same, _ := Resolve(base(), opts)
	expect(t, "same input", same.MappingId, ref.MappingId)
	if !proto.Equal(ref, same) {
		t.Error("Resolve is not deterministic")
	}
	changes := map[string]Table{
		"schema id":          with(func(t *Table) { t.SchemaID = 2 }),
		"column added":       with(func(t *Table) { t.Columns = append(t.Columns, types.Field{Name: "x", Type: tInt}) }),
		"column type":        with(func(t *Table) { t.Columns[0].Type.Nullable = false }),
		"bucket count":       with(func(t *Table) { t.BucketCount = 4 }),
		"storage property":   with(func(t *Table) { t.Properties["table.log.ttl"] = "1d" }),
		"custom property":    with(props("owner", "b")),
		"mapping property":   with(props(PropJSONUnknownFields, "reject")),
		"table id":           with(func(t *Table) { t.TableID = 7 }),
		"property key moved": with(func(t *Table) { t.Properties["owner"] = "b" }),
	}
	seen := map[string]string{ref.MappingId: "reference"}
	for name, tbl := range changes {
		m, r := Resolve(tbl, opts)
		if r != nil {
			t.Fatalf("%s: refused: %v", name, r)
		}
		if prev, dup := seen[m.MappingId]; dup {
			t.Errorf("%s: mapping id %s equals that of %s", name, m.MappingId, prev)
		}
		seen[m.MappingId] = name
	}
}

func TestTopicNames(t *testing.T) {
	valid := []string{"a", "shop.orders", "A-b_c.9", strings.Repeat("x", 249)}
	for _, n := range valid {
		if err := ValidateTopicName(n); err != nil {
			t.Errorf("ValidateTopicName(%q) = %v, want nil", n, err)
		}
	}
	invalid := []string{"", ".", "..", strings.Repeat("x", 250), "a b", "a/b", "ü", "__consumer_offsets", "a:b"}
	for _, n := range invalid {
		if err := ValidateTopicName(n); err == nil {
			t.Errorf("ValidateTopicName(%q) = nil, want an error", n)
		}
	}

	splits := []struct {
		topic, db, table string
		ok               bool
	}{
		{"shop.orders", "shop", "orders", true},
		{"a-b.c_d", "a-b", "c_d", true},
		{"orders", "", "", false},
		{"a.b.c", "", "", false},
		{".orders", "", "", false},
		{"shop.", "", "", false},
		{"__sys.t", "", "", false},
		{strings.Repeat("d", 201) + ".t", "", "", false},
	}
	for _, s := range splits {
		db, tbl, ok := SplitDefaultTopicName(s.topic)
		if db != s.db || tbl != s.table || ok != s.ok {
			t.Errorf("SplitDefaultTopicName(%q) = %q, %q, %v; want %q, %q, %v", s.topic, db, tbl, ok, s.db, s.table, s.ok)
		}
		if ok && DefaultTopicName(db, tbl) != s.topic {
			t.Errorf("DefaultTopicName(%q, %q) does not round-trip to %q", db, tbl, s.topic)
		}
	}
}

func TestClusterID(t *testing.T) {
	a := DeriveClusterID([]string{"b:1", "A:2"})
	b := DeriveClusterID([]string{"a:2", " b:1", "b:1"})
	expect(t, "order, case and duplicates ignored", a, b)
	expect(t, "length", len(a), 22)
	if err := ValidateClusterID(a); err != nil {
		t.Errorf("derived id %q does not validate: %v", a, err)
	}
	if DeriveClusterID([]string{"c:1"}) == a {
		t.Error("different bootstrap, same cluster id")
	}
	for _, bad := range []string{"", "has space", strings.Repeat("x", 65), "a/b"} {
		if ValidateClusterID(bad) == nil {
			t.Errorf("ValidateClusterID(%q) = nil, want an error", bad)
		}
	}
}

func TestParseExposure(t *testing.T) {
	for in, want := range map[string]Exposure{"opt-in": ExposeOptIn, "ALL": ExposeAll} {
		got, err := ParseExposure(in)
		if err != nil || got != want {
			t.Errorf("ParseExposure(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseExposure("some"); err == nil {
		t.Error("ParseExposure(some) accepted")
	}
}

func TestTypeToProto(t *testing.T) {
	dt := types.DataType{Root: types.Array, Element: ptr(types.DataType{Root: types.Row, Fields: []types.Field{
		{Name: "d", Type: types.DataType{Root: types.Decimal, Precision: 10, Scale: 2, Nullable: true}},
		{Name: "m", Type: types.DataType{Root: types.Map, Key: ptr(typ(types.String, false)), Value: ptr(types.DataType{Root: types.Binary, Length: 4})}},
	}})}
	want := &catalogv1.DataType{Root: catalogv1.TypeRoot_TYPE_ROOT_ARRAY, Element: &catalogv1.DataType{
		Root: catalogv1.TypeRoot_TYPE_ROOT_ROW, Fields: []*catalogv1.Field{
			{Name: "d", Type: &catalogv1.DataType{Root: catalogv1.TypeRoot_TYPE_ROOT_DECIMAL, Precision: 10, Scale: 2, Nullable: true}},
			{Name: "m", Type: &catalogv1.DataType{Root: catalogv1.TypeRoot_TYPE_ROOT_MAP,
				Key:   &catalogv1.DataType{Root: catalogv1.TypeRoot_TYPE_ROOT_STRING},
				Value: &catalogv1.DataType{Root: catalogv1.TypeRoot_TYPE_ROOT_BINARY, Length: 4}}},
		}}}
	if got := TypeToProto(dt); !proto.Equal(got, want) {
		t.Errorf("TypeToProto = %v\nwant %v", got, want)
	}
	for root := types.Boolean; root <= types.Row; root++ {
		if _, ok := rootToProto[root]; !ok {
			t.Errorf("root %s has no proto mapping", root)
		}
	}
}

func expect[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func BenchmarkResolve(b *testing.B) {
	tbl := with(chain(
		columns(types.Field{Name: "k", Type: tString}, types.Field{Name: "ts", Type: tLTZ3},
			types.Field{Name: "h", Type: tHdrMap}, types.Field{Name: "amount", Type: tInt}, types.Field{Name: "note", Type: tString}),
		props(PropKeyColumn, "k", PropTimestampColumn, "ts", PropHeadersColumn, "h")))
	b.ReportAllocs()
	for b.Loop() {
		if _, r := Resolve(tbl, opts); r != nil {
			b.Fatal(r)
		}
	}
}

func TestResolveShapes(t *testing.T) {
	pkCols := columns(types.Field{Name: "id", Type: typ(types.BigInt, false)}, types.Field{Name: "dt", Type: typ(types.String, false)},
		types.Field{Name: "v", Type: tString})
	tests := []struct {
		name       string
		table      Table
		kind       catalogv1.TableKind
		pk, parts  []string
		bucketKeys []string
		auto       map[string]string
	}{
		{"log table", with(func(*Table) {}), catalogv1.TableKind_TABLE_KIND_LOG, nil, nil, nil, nil},
		{"primary key: bucket key defaults to it", with(chain(pkCols, func(t *Table) { t.PrimaryKeys = []string{"id"} })),
			catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, []string{"id"}, nil, []string{"id"}, nil},
		{"partitioned primary key: bucket key is the physical key", with(chain(pkCols, func(t *Table) {
			t.PrimaryKeys = []string{"id", "dt"}
			t.PartitionKeys = []string{"dt"}
		})), catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, []string{"id", "dt"}, []string{"dt"}, []string{"id"}, nil},
		{"bucket-keyed log table", with(func(t *Table) { t.BucketKeys = []string{"id"} }), catalogv1.TableKind_TABLE_KIND_LOG, nil, nil, []string{"id"}, nil},
		{"auto-partitioned log table", with(func(t *Table) {
			t.PartitionKeys = []string{"item"}
			t.Properties["table.auto-partition.enabled"] = "true"
			t.Properties["table.auto-partition.time-unit"] = "HOUR"
			t.Properties["table.replication.factor"] = "1"
		}), catalogv1.TableKind_TABLE_KIND_LOG, nil, []string{"item"}, nil,
			map[string]string{"table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "HOUR"}},
		{"primary key from the key column", with(chain(columns(types.Field{Name: "k", Type: typ(types.String, false)}, types.Field{Name: "v", Type: tString}),
			props(PropKeyColumn, "k"), func(t *Table) { t.PrimaryKeys = []string{"k"} })),
			catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, []string{"k"}, nil, []string{"k"}, nil},
		{"composite primary key keeps primary-key order", with(chain(pkColumns("id", "k"), func(t *Table) { t.PrimaryKeys = []string{"k", "id"} })),
			catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, []string{"k", "id"}, nil, []string{"k", "id"}, nil},
		{"primary-key table keeps its own bucket key", with(chain(pkColumns("id", "k"), func(t *Table) {
			t.PrimaryKeys = []string{"id", "k"}
			t.BucketKeys = []string{"k"}
		})), catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, []string{"id", "k"}, nil, []string{"k"}, nil},
		{"auto-partitioned primary-key table", with(chain(pkColumns("id", "dt"), func(t *Table) {
			t.PrimaryKeys = []string{"id", "dt"}
			t.PartitionKeys = []string{"dt"}
			t.Properties["table.auto-partition.enabled"] = "true"
			t.Properties["table.auto-partition.time-unit"] = "DAY"
			t.Properties["table.auto-partition.num-precreate"] = "2"
			t.Properties[PropKvFormat] = "COMPACTED"
		})), catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, []string{"id", "dt"}, []string{"dt"}, []string{"id"},
			map[string]string{"table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "DAY", "table.auto-partition.num-precreate": "2"}},
		{"partitioned log table without auto-partitioning", with(func(t *Table) { t.PartitionKeys = []string{"item"} }),
			catalogv1.TableKind_TABLE_KIND_LOG, nil, []string{"item"}, nil, nil},
		{"partitioned bucket-keyed log table", with(func(t *Table) { t.PartitionKeys = []string{"item"}; t.BucketKeys = []string{"id"} }),
			catalogv1.TableKind_TABLE_KIND_LOG, nil, []string{"item"}, []string{"id"}, nil},
		{"auto-partition options of an unpartitioned table are not carried", with(func(t *Table) { t.Properties["table.auto-partition.enabled"] = "false" }),
			catalogv1.TableKind_TABLE_KIND_LOG, nil, nil, nil, nil},
		{"kv format read as Fluss reads it", with(chain(pkColumns("id"), func(t *Table) {
			t.PrimaryKeys = []string{"id"}
			t.Properties[PropKvFormat] = " compacted "
		})), catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, []string{"id"}, nil, []string{"id"}, nil},
		{"raw primary-key table keyed by its primary key", with(chain(columns(types.Field{Name: "k", Type: typ(types.Bytes, false)}, types.Field{Name: "v", Type: tBytes}),
			props(PropValueFormat, "raw", PropKeyColumn, "k"), func(t *Table) { t.PrimaryKeys = []string{"k"} })),
			catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY, []string{"k"}, nil, []string{"k"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, r := Resolve(tt.table, opts)
			if r != nil {
				t.Fatalf("refused: %v", r)
			}
			expect(t, "kind", m.GetKind(), tt.kind)
			expect(t, "primary keys", strings.Join(m.GetPrimaryKeys(), ","), strings.Join(tt.pk, ","))
			expect(t, "partition keys", strings.Join(m.GetPartitionKeys(), ","), strings.Join(tt.parts, ","))
			expect(t, "bucket keys", strings.Join(m.GetBucketKeys(), ","), strings.Join(tt.bucketKeys, ","))
			if fmt.Sprint(m.GetAutoPartitionOptions()) != fmt.Sprint(tt.auto) && len(tt.auto)+len(m.GetAutoPartitionOptions()) > 0 {
				t.Errorf("auto-partition options %v, want %v", m.GetAutoPartitionOptions(), tt.auto)
			}
		})
	}
	// The shape is part of the mapping: changing it changes the mapping id.
	a, _ := Resolve(with(func(*Table) {}), opts)
	b, _ := Resolve(with(func(t *Table) { t.BucketKeys = []string{"id"} }), opts)
	if a.GetMappingId() == b.GetMappingId() {
		t.Error("adding a bucket key kept the mapping id")
	}
}

// TestShapeMappingID: every shape field takes part in the mapping id.
func TestShapeMappingID(t *testing.T) {
	pk := func(mods ...func(*Table)) Table {
		return with(chain(append([]func(*Table){pkColumns("id", "k", "dt"), func(t *Table) {
			t.PrimaryKeys = []string{"id", "k", "dt"}
			t.PartitionKeys = []string{"dt"}
		}}, mods...)...))
	}
	changes := map[string]Table{
		"reference":             pk(),
		"log table":             with(pkColumns("id", "k", "dt")),
		"primary key order":     pk(func(t *Table) { t.PrimaryKeys = []string{"k", "id", "dt"} }),
		"primary key shrunk":    pk(func(t *Table) { t.PrimaryKeys = []string{"id", "dt"} }),
		"not partitioned":       pk(func(t *Table) { t.PartitionKeys = nil }),
		"explicit bucket key":   pk(func(t *Table) { t.BucketKeys = []string{"k"} }),
		"auto-partitioning on":  pk(func(t *Table) { t.Properties["table.auto-partition.enabled"] = "true" }),
		"auto-partitioning off": pk(func(t *Table) { t.Properties["table.auto-partition.enabled"] = "false" }),
		"auto-partition unit": pk(func(t *Table) {
			t.Properties["table.auto-partition.enabled"] = "true"
			t.Properties["table.auto-partition.time-unit"] = "HOUR"
		}),
	}
	seen := map[string]string{}
	for name, tbl := range changes {
		m, r := Resolve(tbl, opts)
		if r != nil {
			t.Fatalf("%s: refused: %v", name, r)
		}
		if prev, dup := seen[m.MappingId]; dup {
			t.Errorf("%s: mapping id %s equals that of %s", name, m.MappingId, prev)
		}
		seen[m.MappingId] = name
	}
}

// TestPrimaryKeyReasons pins the complete reasons of refused keyed tables:
// each problem once, and no complaint about what is allowed.
func TestPrimaryKeyReasons(t *testing.T) {
	tests := []struct {
		name  string
		table Table
		want  []string
	}{
		{"unhashable primary key is reported once", with(chain(columns(types.Field{Name: "id", Type: typ(types.BigInt, false)},
			types.Field{Name: "tags", Type: types.DataType{Root: types.Array, Element: ptr(tString)}}),
			func(t *Table) { t.PrimaryKeys = []string{"tags"} })), []string{
			`primary-key table rows: compacted: column "tags" has type ARRAY<STRING> NOT NULL; nested types are not supported in compacted rows yet`,
			`primary key tags: bucketing: bucket key "tags" has type ARRAY<STRING> NOT NULL, which Fluss cannot hash`,
		}},
		{"single primary key of the wrong type as key column", with(chain(pkColumns("id"), props(PropKeyColumn, "id"),
			func(t *Table) { t.PrimaryKeys = []string{"id"} })), []string{
			"kafka.key.column names column id of type BIGINT NOT NULL, want STRING or BYTES",
		}},
		{"indexed kv format", with(chain(pkColumns("id"), func(t *Table) {
			t.PrimaryKeys = []string{"id"}
			t.Properties[PropKvFormat] = "INDEXED"
		})), []string{"table.kv.format is INDEXED: only COMPACTED KV rows are written"}},
		{"primary key of the partition key only", with(chain(pkColumns("dt"), func(t *Table) {
			t.PrimaryKeys = []string{"dt"}
			t.PartitionKeys = []string{"dt"}
		})), []string{"primary key dt holds only partition keys: no row could be told from another within a partition"}},
		{"float partition key", with(chain(columns(types.Field{Name: "f", Type: typ(types.Float, true)}, types.Field{Name: "v", Type: tString}),
			func(t *Table) { t.PartitionKeys = []string{"f"} })), []string{
			`partition key f: partitioning: partition key "f" has type FLOAT: FLOAT and DOUBLE partition keys are named differently by different JVMs`,
		}},
		{"bad auto-partition unit", with(func(t *Table) {
			t.PartitionKeys = []string{"item"}
			t.Properties["table.auto-partition.enabled"] = "true"
			t.Properties["table.auto-partition.time-unit"] = "WEEK"
		}), []string{`auto-partitioning: table.auto-partition.time-unit="WEEK" is not one of YEAR, QUARTER, MONTH, DAY, HOUR`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r := Resolve(tt.table, opts)
			if r == nil {
				t.Fatal("accepted, want refusal")
			}
			if got, want := strings.Join(r.Reasons, "\n"), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("reasons:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestResolveCarriesProperties: the mapping holds the table's Fluss options
// and custom properties as they are (frontdoor's DescribeConfigs shows them),
// and a copy, so that the caller's maps stay its own.
func TestResolveCarriesProperties(t *testing.T) {
	tbl := with(chain(props("owner", "ops"), func(t *Table) { t.Properties["table.log.ttl"] = "2 h" }))
	m, r := Resolve(tbl, opts)
	if r != nil {
		t.Fatal(r)
	}
	expect(t, "table.log.ttl", m.TableProperties["table.log.ttl"], "2 h")
	expect(t, "owner", m.CustomProperties["owner"], "ops")
	expect(t, PropEnabled, m.CustomProperties[PropEnabled], "true")
	tbl.Properties["table.log.ttl"] = "changed"
	expect(t, "copy", m.TableProperties["table.log.ttl"], "2 h")
}

// TestKeyFormat: kafka.key.format resolves to the format the key is read
// in, its default being what keys were before it (the key column's bytes,
// a primary-key table's JSON object), and formats that cannot fill what
// the table keeps of the key are refused with the reason.
func TestKeyFormat(t *testing.T) {
	pk := func(t *Table) { t.PrimaryKeys = []string{"id"} }
	keyCol := chain(columns(types.Field{Name: "k", Type: tString}, types.Field{Name: "v", Type: tString}), props(PropKeyColumn, "k"))
	pkKeyCol := chain(pkColumns("k"), props(PropKeyColumn, "k"), func(t *Table) { t.PrimaryKeys = []string{"k"} })
	accepts := []struct {
		name  string
		table Table
		want  catalogv1.ValueFormat
	}{
		{"log table without key column", base(), catalogv1.ValueFormat_VALUE_FORMAT_UNSPECIFIED},
		{"log table with key column", with(keyCol), catalogv1.ValueFormat_VALUE_FORMAT_RAW},
		{"primary-key table", with(chain(pkColumns("id"), pk)), catalogv1.ValueFormat_VALUE_FORMAT_JSON},
		{"primary-key table with key column", with(pkKeyCol), catalogv1.ValueFormat_VALUE_FORMAT_RAW},
		{"avro keys of a primary key", with(chain(pkColumns("id"), pk, props(PropKeyFormat, "AVRO"))), catalogv1.ValueFormat_VALUE_FORMAT_AVRO},
		{"protobuf keys of a primary key", with(chain(pkColumns("id"), pk, props(PropKeyFormat, "protobuf"))), catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF},
		{"json-schema keys of a primary key", with(chain(pkColumns("id"), pk, props(PropKeyFormat, "json-schema"))), catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA},
		{"json keys said explicitly", with(chain(pkColumns("id"), pk, props(PropKeyFormat, "json"))), catalogv1.ValueFormat_VALUE_FORMAT_JSON},
		{"avro key column of a log table", with(chain(keyCol, props(PropKeyFormat, "avro"))), catalogv1.ValueFormat_VALUE_FORMAT_AVRO},
		{"json-schema key column of a primary key", with(chain(pkKeyCol, props(PropKeyFormat, "json-schema"))), catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA},
		{"raw key column said explicitly", with(chain(pkKeyCol, props(PropKeyFormat, "raw"))), catalogv1.ValueFormat_VALUE_FORMAT_RAW},
	}
	for _, tt := range accepts {
		t.Run(tt.name, func(t *testing.T) {
			m, r := Resolve(tt.table, opts)
			if r != nil {
				t.Fatalf("refused: %v", r)
			}
			if got := m.GetMapping().GetKeyFormat(); got != tt.want {
				t.Errorf("key format %v, want %v", got, tt.want)
			}
		})
	}
	refuses := []struct {
		name  string
		table Table
		want  string
	}{
		{"unknown format", with(chain(pkColumns("id"), pk, props(PropKeyFormat, "string"))), `kafka.key.format is "string": want raw, json, avro, protobuf or json-schema`},
		{"log table without key column", with(props(PropKeyFormat, "avro")), "kafka.key.format=avro has nothing to read: a log table without kafka.key.column does not store the key"},
		{"raw keys of a primary key", with(chain(pkColumns("id"), pk, props(PropKeyFormat, "raw"))), "kafka.key.format=raw on a primary-key table needs kafka.key.column"},
		{"json key column", with(chain(keyCol, props(PropKeyFormat, "json"))), "kafka.key.format=json contradicts kafka.key.column=k"},
		{"protobuf key column", with(chain(pkKeyCol, props(PropKeyFormat, "protobuf"))), "kafka.key.format=protobuf contradicts kafka.key.column=k: a Protobuf key is a message"},
	}
	for _, tt := range refuses {
		t.Run(tt.name, func(t *testing.T) {
			_, r := Resolve(tt.table, opts)
			if r == nil || r.Kind != Incompatible {
				t.Fatalf("got %v, want an incompatible table", r)
			}
			if got := strings.Join(r.Reasons, "\n"); !strings.Contains(got, tt.want) {
				t.Errorf("reasons:\n%s\nwant one containing %q", got, tt.want)
			}
		})
	}
}
