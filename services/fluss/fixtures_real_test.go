package fluss

import (
	"context"

	"bytes"
	"encoding/json"
	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// fixtureTables are the tables whose JSON the types package tests replay.
// Each is created on the real cluster and its JSON captured as the server
// returns it.
var fixtureTables = []struct {
	name string
	desc TableDescriptor
}{
	{"all_types", TableDescriptor{
		Schema:           allTypesSchema(),
		Comment:          "every type",
		BucketKeys:       []string{"id"},
		NumBuckets:       3,
		Properties:       map[string]string{PropArrowCompressionType: "LZ4_FRAME"},
		CustomProperties: map[string]string{"ferry.topic": "all-types"},
	}},
	{"pk_table", TableDescriptor{
		Schema: types.Schema{
			Columns: []types.Column{
				col("id", nn(types.DataType{Root: types.BigInt})),
				{Name: "name", Type: types.DataType{Root: types.String, Nullable: true}, Comment: "display name", ID: types.UnknownID},
				col("updated", types.DataType{Root: types.TimestampLTZ, Nullable: true, Precision: 3}),
			},
			PrimaryKey: []string{"id"},
		},
		Properties: map[string]string{PropArrowCompressionType: "ZSTD", PropArrowCompressionZstdLevel: "9"},
	}},
	{"partitioned", TableDescriptor{
		Schema: types.Schema{Columns: []types.Column{
			col("region", nn(types.DataType{Root: types.String})),
			col("payload", types.DataType{Root: types.Bytes, Nullable: true}),
		}},
		PartitionKeys: []string{"region"},
		NumBuckets:    2,
	}},
}

// TestRealSchemaFixtures creates the fixture tables, checks that what the
// server returns parses back to what was sent, and with
// FERRY_FLUSS_WRITE_FIXTURES=1 rewrites types/testdata from the server's
// answers.
func TestRealSchemaFixtures(t *testing.T) {
	c := dialReal(t)
	ctx := testCtx(t)
	db := tempDatabase(t, c)
	write := os.Getenv("FERRY_FLUSS_WRITE_FIXTURES") == "1"
	for _, ft := range fixtureTables {
		path := TablePath{db, ft.name}
		CreateTestTable(t, c, path, ft.desc)
		_, _, tableJSON, err := c.getTableInfoRaw(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.GetTableInfo(ctx, path)
		if err != nil {
			t.Fatalf("GetTableInfo(%s): %v\n%s", ft.name, err, tableJSON)
		}
		assertSameColumns(t, info.Schema, ft.desc.Schema)
		if got, want := info.PartitionKeys, ft.desc.PartitionKeys; len(got) != len(want) {
			t.Errorf("%s: partition keys %v, want %v", ft.name, got, want)
		}
		if got, want := info.PrimaryKeys(), ft.desc.Schema.PrimaryKey; len(got) != len(want) {
			t.Errorf("%s: primary key %v, want %v", ft.name, got, want)
		}
		schema, _, err := c.GetTableSchema(ctx, path, -1)
		if err != nil {
			t.Fatal(err)
		}
		assertSameColumns(t, schema, ft.desc.Schema)
		if write {
			// The schema JSON is the one GetTableSchema returns; re-fetch
			// it raw for the fixture.
			raw, err := rawSchemaJSON(c, path)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("types", "testdata")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for suffix, data := range map[string][]byte{".table.json": tableJSON, ".schema.json": raw} {
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, data, "", "  "); err != nil {
					t.Fatalf("%s%s: server sent invalid JSON: %v", ft.name, suffix, err)
				}
				pretty.WriteByte('\n')
				if err := os.WriteFile(filepath.Join(dir, ft.name+suffix), pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("wrote fixtures for %s", ft.name)
		}
	}
}

// getTableInfoRaw is GetTableInfo's undecoded answer: the table JSON exactly
// as the server sent it, for test fixtures.
func (c *Client) getTableInfoRaw(ctx context.Context, path TablePath) (tableID int64, schemaID int32, tableJSON []byte, err error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	var resp flussrpc.GetTableInfoResponse
	if err := c.callCoordinator(ctx, APIGetTableInfo, true, &flussrpc.GetTableInfoRequest{TablePath: path.pb()}, &resp); err != nil {
		return 0, 0, nil, err
	}
	return resp.GetTableId(), resp.GetSchemaId(), resp.GetTableJson(), nil
}

// rawSchemaJSON returns GetTableSchema's undecoded schema JSON, for test
// fixtures.
func rawSchemaJSON(c *Client, path TablePath) ([]byte, error) {
	ctx, cancel := c.withTimeout(context.Background())
	defer cancel()
	var resp flussrpc.GetTableSchemaResponse
	if err := c.callCoordinator(ctx, APIGetTableSchema, true, &flussrpc.GetTableSchemaRequest{TablePath: path.pb()}, &resp); err != nil {
		return nil, err
	}
	return resp.GetSchemaJson(), nil
}
