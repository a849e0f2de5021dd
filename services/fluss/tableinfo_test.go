package fluss

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// types/testdata/*.table.json were captured from a real Fluss 0.9.1 server by
// TestRealSchemaFixtures.

func readTableFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("types", "testdata", name+".table.json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseTableDescriptorFixtures(t *testing.T) {
	tests := []struct {
		name          string
		comment       string
		buckets       int
		bucketKeys    []string
		partitionKeys []string
		primaryKeys   []string
		compression   ArrowCompression
		zstdLevel     int
		custom        map[string]string
	}{
		{name: "all_types", comment: "every type", buckets: 3, bucketKeys: []string{"id"}, partitionKeys: []string{},
			compression: ArrowCompressionLZ4Frame, custom: map[string]string{"ferry.topic": "all-types"}},
		{name: "pk_table", buckets: 1, bucketKeys: []string{"id"}, partitionKeys: []string{}, primaryKeys: []string{"id"},
			compression: ArrowCompressionZstd, zstdLevel: 9, custom: map[string]string{}},
		{name: "partitioned", buckets: 2, bucketKeys: []string{}, partitionKeys: []string{"region"},
			compression: ArrowCompressionZstd, zstdLevel: DefaultZstdLevel, custom: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := readTableFixture(t, tt.name)
			d, err := ParseTableDescriptorJSON(raw)
			if err != nil {
				t.Fatal(err)
			}
			info := &TableInfo{TablePath: TablePath{"db", tt.name}, TableDescriptor: d}
			if d.Comment != tt.comment || d.NumBuckets != tt.buckets {
				t.Errorf("comment %q buckets %d; want %q %d", d.Comment, d.NumBuckets, tt.comment, tt.buckets)
			}
			if !reflect.DeepEqual(d.BucketKeys, tt.bucketKeys) || !reflect.DeepEqual(d.PartitionKeys, tt.partitionKeys) {
				t.Errorf("bucket keys %v partition keys %v; want %v %v", d.BucketKeys, d.PartitionKeys, tt.bucketKeys, tt.partitionKeys)
			}
			if !reflect.DeepEqual(info.PrimaryKeys(), tt.primaryKeys) || info.HasPrimaryKey() != (len(tt.primaryKeys) > 0) {
				t.Errorf("primary keys %v", info.PrimaryKeys())
			}
			if info.IsPartitioned() != (len(tt.partitionKeys) > 0) {
				t.Errorf("IsPartitioned = %v", info.IsPartitioned())
			}
			c, lvl, err := info.ArrowCompression()
			if err != nil || c != tt.compression || lvl != tt.zstdLevel {
				t.Errorf("ArrowCompression = %s %d %v; want %s %d", c, lvl, err, tt.compression, tt.zstdLevel)
			}
			if f, err := info.LogFormat(); err != nil || f != LogFormatArrow {
				t.Errorf("LogFormat = %s %v", f, err)
			}
			if !reflect.DeepEqual(d.CustomProperties, tt.custom) {
				t.Errorf("custom properties %v, want %v", d.CustomProperties, tt.custom)
			}
			if d.Properties[PropReplicationFactor] == "" {
				t.Errorf("server-filled %s missing: %v", PropReplicationFactor, d.Properties)
			}

			// Re-encoding gives the server's JSON back, member for member.
			out, err := d.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("re-encoded descriptor differs:\n got %s\nwant %s", out, raw)
			}
		})
	}
}

func TestTableInfoOptionErrors(t *testing.T) {
	tests := []struct {
		props   map[string]string
		wantErr string
	}{
		{map[string]string{PropLogFormat: "parquet"}, `table.log.format="parquet"`},
		{map[string]string{PropArrowCompressionType: "gzip"}, `table.log.arrow.compression.type="gzip"`},
		{map[string]string{PropArrowCompressionZstdLevel: "23"}, "must be an integer 1..22"},
		{map[string]string{PropArrowCompressionZstdLevel: "x"}, "must be an integer 1..22"},
		{map[string]string{PropKvFormat: "avro"}, `table.kv.format="avro"`},
	}
	for _, tt := range tests {
		info := &TableInfo{TablePath: TablePath{"db", "t"}, TableDescriptor: TableDescriptor{Properties: tt.props}}
		_, err1 := info.LogFormat()
		_, _, err2 := info.ArrowCompression()
		_, err3 := info.KvFormat()
		err := errors.Join(err1, err2, err3)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "db.t") {
			t.Errorf("props %v: err = %v, want one naming db.t and %q", tt.props, err, tt.wantErr)
		}
	}
	// Lower case is accepted, as Fluss parses enums case-insensitively.
	info := &TableInfo{TableDescriptor: TableDescriptor{Properties: map[string]string{
		PropLogFormat: "indexed", PropArrowCompressionType: "none"}}}
	if f, err := info.LogFormat(); err != nil || f != LogFormatIndexed {
		t.Errorf("LogFormat(indexed) = %s %v", f, err)
	}
	if c, lvl, err := info.ArrowCompression(); err != nil || c != ArrowCompressionNone || lvl != 0 {
		t.Errorf("ArrowCompression(none) = %s %d %v", c, lvl, err)
	}
	if f, err := info.KvFormat(); err != nil || f != DefaultKvFormat {
		t.Errorf("KvFormat() without the property = %s %v, want %s", f, err, DefaultKvFormat)
	}
	info.Properties[PropKvFormat] = "indexed"
	if f, err := info.KvFormat(); err != nil || f != KvFormatIndexed {
		t.Errorf("KvFormat(indexed) = %s %v", f, err)
	}
}

func TestPhysicalPrimaryKeysDropPartitionKeys(t *testing.T) {
	info := &TableInfo{TableDescriptor: TableDescriptor{
		Schema:        types.Schema{PrimaryKey: []string{"dt", "id", "region"}},
		PartitionKeys: []string{"dt"},
	}}
	if got := info.PhysicalPrimaryKeys(); !slices.Equal(got, []string{"id", "region"}) {
		t.Errorf("PhysicalPrimaryKeys = %v, want [id region]", got)
	}
}

func TestTableDescriptorValidate(t *testing.T) {
	base, err := ParseTableDescriptorJSON(readTableFixture(t, "pk_table"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mut     func(*TableDescriptor)
		wantErr string
	}{
		{func(d *TableDescriptor) { d.PartitionKeys = []string{"nope"} }, `partition key "nope"`},
		{func(d *TableDescriptor) { d.BucketKeys = []string{"nope"} }, `bucket key "nope"`},
		{func(d *TableDescriptor) { d.NumBuckets = -1 }, "bucket count -1"},
		{func(d *TableDescriptor) { d.Schema.Columns = nil }, "schema has no columns"},
	}
	for _, tt := range tests {
		d := base
		d.Schema.Columns = append(d.Schema.Columns[:0:0], base.Schema.Columns...)
		tt.mut(&d)
		if _, err := d.MarshalJSON(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("err = %v, want %q", err, tt.wantErr)
		}
	}
	if _, err := ParseTableDescriptorJSON([]byte(`{"version":1}`)); err == nil {
		t.Error("descriptor without schema accepted")
	}
}
