package service_test

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/catalogsvc/internal/mapping"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/testenv"
)

// docSpecs returns the Java helper table specs in docs/mapping.md.
func docSpecs(t *testing.T) []testenv.TableSpec {
	t.Helper()
	doc, err := os.ReadFile("../../docs/mapping.md")
	if err != nil {
		t.Fatal(err)
	}
	var specs []testenv.TableSpec
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(doc, -1) {
		var s testenv.TableSpec
		if err := json.Unmarshal(m[1], &s); err != nil {
			t.Fatalf("docs/mapping.md: spec %s: %v", m[1], err)
		}
		specs = append(specs, s)
	}
	if len(specs) < 3 {
		t.Fatalf("docs/mapping.md has %d table specs, want one per value format", len(specs))
	}
	return specs
}

// TestDocExamplesResolve maps the documented tables without Fluss: every
// example must be accepted, under the topic name the document gives.
func TestDocExamplesResolve(t *testing.T) {
	for _, s := range docSpecs(t) {
		tbl := mapping.Table{Database: s.Database, Name: s.Table, TableID: 1, SchemaID: 1, BucketCount: 1,
			PrimaryKeys: s.PrimaryKey, PartitionKeys: s.PartitionKeys, BucketKeys: s.BucketKeys,
			Properties: map[string]string{}, CustomProperties: s.CustomProperties}
		maps.Copy(tbl.Properties, s.Properties)
		for _, c := range s.Columns {
			col := docColumn(t, c)
			// Fluss makes primary-key columns NOT NULL.
			col.Type.Nullable = col.Type.Nullable && !slices.Contains(s.PrimaryKey, c.Name)
			tbl.Columns = append(tbl.Columns, col)
		}
		m, r := mapping.Resolve(tbl, mapping.Options{ClusterID: "doc", Exposure: mapping.ExposeOptIn})
		if r != nil {
			t.Errorf("%s.%s: refused: %v", s.Database, s.Table, r)
			continue
		}
		want := s.Database + "." + s.Table
		if v, ok := s.CustomProperties[mapping.PropTopic]; ok {
			want = v
		}
		if m.Topic != want {
			t.Errorf("%s.%s: topic %s, want %s", s.Database, s.Table, m.Topic, want)
		}
	}
}

// TestIntegrationDocExamples creates the documented tables in real Fluss
// and checks that the catalog exposes each of them.
func TestIntegrationDocExamples(t *testing.T) {
	f := testenv.Fluss(t)
	specs := docSpecs(t)
	db := f.NewDatabase(t, "catalogdoc")
	want := map[string]int32{}
	for _, s := range specs {
		topic := db + "." + s.Table
		if v, ok := s.CustomProperties[mapping.PropTopic]; ok {
			topic = v
		}
		s.Database = db
		f.NewTable(t, s)
		want[topic] = int32(s.BucketCount)
	}
	c := realCatalog(t, f.Bootstrap, catalogConfig(db))
	ctx := ctxFor(t, time.Minute)
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for topic, buckets := range want {
		r := c.Resolve(ctx, []string{topic})[0]
		if r.Code != 0 {
			t.Errorf("%s: %d %s", topic, r.Code, r.Message)
			continue
		}
		if buckets > 0 && r.Mapping.PartitionCount != buckets {
			t.Errorf("%s: %d partitions, want %d", topic, r.Mapping.PartitionCount, buckets)
		}
	}
}

// docColumn parses the few type spellings the examples use.
func docColumn(t *testing.T, c testenv.Column) (f fieldT) {
	t.Helper()
	typ, ok := docTypes[strings.TrimSpace(c.Type)]
	if !ok {
		t.Fatalf("docs/mapping.md uses type %q; teach docTypes about it", c.Type)
	}
	return fieldT{Name: c.Name, Type: typ}
}

type fieldT = types.Field

// docTypes maps the SQL spelling of each type the examples use (as the
// shared type model renders it) to the type, all nullable as in the specs.
var docTypes = func() map[string]types.DataType {
	n := func(t types.DataType) types.DataType { t.Nullable = true; return t }
	str := n(types.DataType{Root: types.String})
	candidates := []types.DataType{
		n(types.DataType{Root: types.BigInt}), n(types.DataType{Root: types.Int}), str, n(types.DataType{Root: types.Bytes}),
		n(types.DataType{Root: types.Decimal, Precision: 10, Scale: 2}),
		n(types.DataType{Root: types.TimestampLTZ, Precision: 3}),
		n(types.DataType{Root: types.TimestampNTZ, Precision: 3}),
		n(types.DataType{Root: types.Map, Key: &str, Value: &types.DataType{Root: types.Bytes, Nullable: true}}),
		n(types.DataType{Root: types.Array, Element: &types.DataType{Root: types.Row, Nullable: true,
			Fields: []types.Field{{Name: "k", Type: str}, {Name: "v", Type: str}}}}),
	}
	m := map[string]types.DataType{}
	for _, c := range candidates {
		m[c.String()] = c
	}
	return m
}()
