package fluss

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// These tests talk to the real Fluss cluster named by the test environment.

func dialReal(t *testing.T) *Client {
	t.Helper()
	bootstrap := realBootstrap(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, bootstrap, WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		t.Fatalf("Dial(%s): %v", bootstrap, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tempDatabase creates a database with a random name and drops it (cascade)
// when the test ends.
func tempDatabase(t *testing.T, c *Client) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "ferry_fluss_test_" + hex.EncodeToString(b[:])
	ctx := testCtx(t)
	if err := c.CreateDatabase(ctx, name, DatabaseDescriptor{Comment: "ferry fluss client test"}, false); err != nil {
		t.Fatalf("CreateDatabase(%s): %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.DropDatabase(ctx, name, true, true); err != nil {
			t.Errorf("DropDatabase(%s): %v", name, err)
		}
	})
	return name
}

func col(name string, t types.DataType) types.Column {
	return types.Column{Name: name, Type: t, ID: types.UnknownID}
}

func nn(t types.DataType) types.DataType { t.Nullable = false; return t }

func TestRealHandshake(t *testing.T) {
	c := dialReal(t)
	cn, _, err := c.coordinatorConn(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []APIKey{APIVersions, APIGetMetadata, APIGetTableInfo, APICreateTable, APIListDatabases} {
		if _, ok := cn.versions[k]; !ok {
			t.Errorf("coordinator did not negotiate %s; negotiated %v", k, cn.versions)
		}
	}
}

func TestRealDatabaseLifecycle(t *testing.T) {
	c := dialReal(t)
	ctx := testCtx(t)
	db := tempDatabase(t, c)

	dbs, err := c.ListDatabases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range dbs {
		found = found || d == db
	}
	if !found {
		t.Errorf("ListDatabases = %v, missing %s", dbs, db)
	}
	ok, err := c.DatabaseExists(ctx, db)
	if err != nil || !ok {
		t.Errorf("DatabaseExists(%s) = %v, %v; want true", db, ok, err)
	}
	ok, err = c.DatabaseExists(ctx, db+"_nope")
	if err != nil || ok {
		t.Errorf("DatabaseExists(missing) = %v, %v; want false", ok, err)
	}
	info, err := c.GetDatabaseInfo(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if info.Comment != "ferry fluss client test" || info.CreatedTime.IsZero() {
		t.Errorf("GetDatabaseInfo = %+v", info)
	}
	err = c.CreateDatabase(ctx, db, DatabaseDescriptor{}, false)
	if CodeOf(err) != CodeDatabaseAlreadyExist {
		t.Errorf("CreateDatabase(existing) err = %v, want DATABASE_ALREADY_EXIST", err)
	}
	if err := c.CreateDatabase(ctx, db, DatabaseDescriptor{}, true); err != nil {
		t.Errorf("CreateDatabase(existing, ignore) = %v", err)
	}
}

func TestRealUnknownDatabaseAndTable(t *testing.T) {
	c := dialReal(t)
	ctx := testCtx(t)
	db := tempDatabase(t, c)

	_, err := c.GetTableInfo(ctx, TablePath{db, "no_such_table"})
	if !errors.Is(err, &Error{Code: CodeTableNotExist}) {
		t.Errorf("GetTableInfo(missing table) err = %v, want TABLE_NOT_EXIST", err)
	}
	var fe *Error
	if !errors.As(err, &fe) || fe.Retriable() || fe.Message == "" {
		t.Errorf("want a non-retriable *Error with a message, got %#v", err)
	}
	_, err = c.ListTables(ctx, db+"_missing")
	if CodeOf(err) != CodeDatabaseNotExist {
		t.Errorf("ListTables(missing db) err = %v, want DATABASE_NOT_EXIST", err)
	}
	_, err = c.GetDatabaseInfo(ctx, db+"_missing")
	if CodeOf(err) != CodeDatabaseNotExist {
		t.Errorf("GetDatabaseInfo(missing db) err = %v, want DATABASE_NOT_EXIST", err)
	}
	err = c.DropTable(ctx, TablePath{db, "no_such_table"}, false)
	if CodeOf(err) != CodeTableNotExist {
		t.Errorf("DropTable(missing) err = %v, want TABLE_NOT_EXIST", err)
	}
}

// allTypesSchema has every Fluss data type, nested ones included.
func allTypesSchema() types.Schema {
	intT := types.DataType{Root: types.Int, Nullable: true}
	strT := types.DataType{Root: types.String, Nullable: true}
	return types.Schema{
		Columns: []types.Column{
			col("id", nn(types.DataType{Root: types.BigInt})),
			col("b", types.DataType{Root: types.Boolean, Nullable: true}),
			col("ti", types.DataType{Root: types.TinyInt, Nullable: true}),
			col("si", types.DataType{Root: types.SmallInt, Nullable: true}),
			col("i", intT),
			col("f", types.DataType{Root: types.Float, Nullable: true}),
			col("d", types.DataType{Root: types.Double, Nullable: true}),
			col("dec", types.DataType{Root: types.Decimal, Nullable: true, Precision: 20, Scale: 4}),
			col("ch", types.DataType{Root: types.Char, Nullable: true, Length: 3}),
			{Name: "s", Type: strT, Comment: "a string column", ID: types.UnknownID},
			col("bin", types.DataType{Root: types.Binary, Nullable: true, Length: 16}),
			col("by", types.DataType{Root: types.Bytes, Nullable: true}),
			col("dt", types.DataType{Root: types.Date, Nullable: true}),
			col("tm", types.DataType{Root: types.Time, Nullable: true, Precision: 3}),
			col("ts", types.DataType{Root: types.TimestampNTZ, Nullable: true, Precision: 6}),
			col("tsl", nn(types.DataType{Root: types.TimestampLTZ, Precision: 9})),
			col("arr", types.DataType{Root: types.Array, Nullable: true, Element: &strT}),
			col("mp", types.DataType{Root: types.Map, Nullable: true, Key: ptr(nn(strT)), Value: &intT}),
			col("rw", types.DataType{Root: types.Row, Nullable: true, Fields: []types.Field{
				{Name: "x", Type: intT},
				{Name: "y", Type: types.DataType{Root: types.Array, Nullable: true, Element: &types.DataType{
					Root: types.Row, Nullable: true, Fields: []types.Field{{Name: "z", Type: strT}}}}},
			}}),
		},
	}
}

func ptr[T any](v T) *T { return &v }

func TestRealTableLifecycleAndSchemaJSON(t *testing.T) {
	c := dialReal(t)
	ctx := testCtx(t)
	db := tempDatabase(t, c)
	path := TablePath{db, "all_types"}
	want := TableDescriptor{
		Schema:           allTypesSchema(),
		Comment:          "every type",
		BucketKeys:       []string{"id"},
		NumBuckets:       3,
		Properties:       map[string]string{PropArrowCompressionType: "LZ4_FRAME"},
		CustomProperties: map[string]string{"ferry.topic": "all-types"},
	}
	created := CreateTestTable(t, c, path, want)
	if err := c.CreateTable(ctx, path, want, false); CodeOf(err) != CodeTableAlreadyExist {
		t.Errorf("CreateTable(again) err = %v, want TABLE_ALREADY_EXIST", err)
	}
	names, err := c.ListTables(ctx, db)
	if err != nil || len(names) != 1 || names[0] != "all_types" {
		t.Errorf("ListTables = %v, %v", names, err)
	}
	ok, err := c.TableExists(ctx, path)
	if err != nil || !ok {
		t.Errorf("TableExists = %v, %v", ok, err)
	}

	info, err := c.GetTableInfo(ctx, path)
	if err != nil {
		t.Fatalf("GetTableInfo: %v", err)
	}
	if info.TableID < 0 || info.TableID != created.TableID {
		t.Errorf("table id %d, created %d", info.TableID, created.TableID)
	}
	if info.NumBuckets != 3 || len(info.BucketKeys) != 1 || info.BucketKeys[0] != "id" || info.Comment != "every type" {
		t.Errorf("descriptor = %+v", info.TableDescriptor)
	}
	if info.CustomProperties["ferry.topic"] != "all-types" {
		t.Errorf("custom properties = %v", info.CustomProperties)
	}
	comp, level, err := info.ArrowCompression()
	if err != nil || comp != ArrowCompressionLZ4Frame || level != 0 {
		t.Errorf("ArrowCompression = %v, %d, %v", comp, level, err)
	}
	if f, err := info.LogFormat(); err != nil || f != LogFormatArrow {
		t.Errorf("LogFormat = %v, %v", f, err)
	}
	assertSameColumns(t, info.Schema, want.Schema)
	if info.Schema.HighestFieldID < len(want.Schema.Columns)-1 {
		t.Errorf("highest field id %d; want at least %d", info.Schema.HighestFieldID, len(want.Schema.Columns)-1)
	}
	for i, col := range info.Schema.Columns {
		if col.ID < 0 {
			t.Errorf("column %d (%s) has no server-assigned id", i, col.Name)
		}
	}

	s, sid, err := c.GetTableSchema(ctx, path, -1)
	if err != nil {
		t.Fatalf("GetTableSchema: %v", err)
	}
	if sid != info.SchemaID {
		t.Errorf("schema id %d, table info says %d", sid, info.SchemaID)
	}
	assertSameColumns(t, s, want.Schema)

	if err := c.DropTable(ctx, path, false); err != nil {
		t.Fatalf("DropTable: %v", err)
	}
	if _, err := c.GetTableInfo(ctx, path); CodeOf(err) != CodeTableNotExist {
		t.Errorf("GetTableInfo after drop err = %v", err)
	}
}

func assertSameColumns(t *testing.T, got, want types.Schema) {
	t.Helper()
	if len(got.Columns) != len(want.Columns) {
		t.Fatalf("got %d columns, want %d", len(got.Columns), len(want.Columns))
	}
	for i := range want.Columns {
		g, w := got.Columns[i], want.Columns[i]
		if g.Name != w.Name || g.Type.String() != w.Type.String() || g.Comment != w.Comment {
			t.Errorf("column %d: got %s %s %q, want %s %s %q", i, g.Name, g.Type, g.Comment, w.Name, w.Type, w.Comment)
		}
	}
}

func TestRealMetadataAndLeaders(t *testing.T) {
	c := dialReal(t)
	ctx := testCtx(t)
	db := tempDatabase(t, c)
	path := TablePath{db, "log"}
	d := TableDescriptor{Schema: types.Schema{Columns: []types.Column{
		col("k", types.DataType{Root: types.String, Nullable: true}),
		col("v", types.DataType{Root: types.BigInt, Nullable: true}),
	}}, NumBuckets: 2}
	info := CreateTestTable(t, c, path, d)
	route, err := c.RefreshTableRoute(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if route.TableID != info.TableID {
		t.Errorf("route table id %d, info %d", route.TableID, info.TableID)
	}
	if len(c.Servers()) == 0 {
		t.Fatal("no tablet servers in metadata")
	}
	for b := int32(0); b < 2; b++ {
		n, err := c.BucketLeader(ctx, info.TableID, nil, b)
		if err != nil {
			t.Fatalf("BucketLeader(%d): %v", b, err)
		}
		if n.Addr() == "" || n.Port == 0 {
			t.Errorf("leader %+v", n)
		}
	}
	_, err = c.BucketLeader(ctx, info.TableID, nil, 7)
	if CodeOf(err) != CodeUnknownTableOrBucket {
		t.Errorf("BucketLeader(7) err = %v, want UNKNOWN_TABLE_OR_BUCKET", err)
	}
	offs, err := c.ListOffsets(ctx, info.TableID, nil, []int32{0, 1}, OffsetLatest)
	if err != nil || len(offs) != 2 || offs[0] != 0 || offs[1] != 0 {
		t.Errorf("ListOffsets(latest) on empty table = %v, %v", offs, err)
	}
	wid, err := c.InitWriter(ctx, path)
	if err != nil {
		t.Fatalf("InitWriter: %v", err)
	}
	wid2, err := c.InitWriter(ctx, path)
	if err != nil || wid2 == wid {
		t.Errorf("second InitWriter = %d, %v; first %d", wid2, err, wid)
	}
}

func TestRealRequestTimeoutKeepsConnection(t *testing.T) {
	c := dialReal(t)
	ctx := testCtx(t)
	// A deadline already in the past fails before the request is written.
	past, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	if _, err := c.ListDatabases(past); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ListDatabases(expired ctx) err = %v, want DeadlineExceeded", err)
	}
	// A deadline that expires while the server works: FetchLog asks the
	// server to wait 1.5s for data that never comes; we give up after 300ms.
	db := tempDatabase(t, c)
	path := TablePath{db, "idle"}
	info := CreateTestTable(t, c, path, TableDescriptor{Schema: types.Schema{Columns: []types.Column{
		col("v", types.DataType{Root: types.BigInt, Nullable: true})}}, NumBuckets: 1})
	leader, err := c.BucketLeader(ctx, info.TableID, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.connTo(ctx, leader.Addr())
	if err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	res, err := c.FetchLog(short, info.TableID, []FetchBucket{{Bucket: 0, Offset: 0}}, FetchOptions{MinBytes: 1 << 20, MaxWaitMs: 1500})
	if err != nil {
		t.Fatalf("FetchLog: %v", err)
	}
	if !errors.Is(res[0].Err, context.DeadlineExceeded) {
		t.Fatalf("FetchLog result err = %v, want DeadlineExceeded", res[0].Err)
	}
	// The same connection still serves requests, and the late response
	// is dropped without harm.
	offs, err := c.ListOffsets(ctx, info.TableID, nil, []int32{0}, OffsetEarliest)
	if err != nil || offs[0] != 0 {
		t.Errorf("ListOffsets after timeout = %v, %v", offs, err)
	}
	after, err := c.connTo(ctx, leader.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if before != after || after.broken() {
		t.Errorf("connection was replaced or broken after a timeout")
	}
	time.Sleep(1700 * time.Millisecond) // let the late fetch response arrive
	if _, err := c.ListOffsets(ctx, info.TableID, nil, []int32{0}, OffsetLatest); err != nil {
		t.Errorf("ListOffsets after the late response: %v", err)
	}
	if after.broken() {
		t.Errorf("late response broke the connection")
	}
}

// TestRealRecreatedTable checks that a table id whose table was dropped and
// recreated under the same path fails with TABLE_NOT_EXIST, not a retriable
// error a caller would loop on.
func TestRealRecreatedTable(t *testing.T) {
	c := dialReal(t)
	ctx := testCtx(t)
	db := tempDatabase(t, c)
	path := TablePath{db, "again"}
	d := TableDescriptor{Schema: types.Schema{Columns: []types.Column{col("v", types.DataType{Root: types.BigInt, Nullable: true})}}, NumBuckets: 1}
	old := CreateTestTable(t, c, path, d)
	if err := c.DropTable(ctx, path, false); err != nil {
		t.Fatal(err)
	}
	CreateTestTable(t, c, path, d)
	res, err := c.ProduceLog(ctx, old.TableID, AcksAll, time.Second, []BucketBatch{{Bucket: 0, Records: []byte{1}}})
	if err != nil {
		t.Fatal(err)
	}
	if CodeOf(res[0].Err) != CodeTableNotExist || IsRetriable(res[0].Err) {
		t.Errorf("produce with the dropped table's id: %v, want non-retriable TABLE_NOT_EXIST", res[0].Err)
	}
}

// TestRealAlterTable changes a table's properties in place: a custom
// property and an alterable table option are set, the custom property is
// reset, and the table keeps its id; an option Fluss does not alter is
// refused with INVALID_ALTER_TABLE_EXCEPTION and changes nothing.
func TestRealAlterTable(t *testing.T) {
	c := dialReal(t)
	ctx := testCtx(t)
	db := tempDatabase(t, c)
	path := TablePath{db, "altered"}
	d := TableDescriptor{Schema: types.Schema{Columns: []types.Column{col("v", types.DataType{Root: types.BigInt, Nullable: true})}},
		NumBuckets: 1, Properties: map[string]string{"table.log.ttl": "2 h"}, CustomProperties: map[string]string{"owner": "ops"}}
	before := CreateTestTable(t, c, path, d)

	err := c.AlterTable(ctx, path, []PropertyChange{{Key: "owner", Value: "data"}, {Key: "table.log.tiered.local-segments", Value: "4"}}, false)
	if err != nil {
		t.Fatalf("AlterTable: %v", err)
	}
	after, err := c.GetTableInfo(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if after.TableID != before.TableID {
		t.Errorf("table id %d after the change, was %d", after.TableID, before.TableID)
	}
	if got := after.CustomProperties["owner"]; got != "data" {
		t.Errorf("owner = %q after the change, want data", got)
	}
	if got := after.Properties["table.log.tiered.local-segments"]; got != "4" {
		t.Errorf("table.log.tiered.local-segments = %q after the change, want 4 (properties %v)", got, after.Properties)
	}

	if err := c.AlterTable(ctx, path, []PropertyChange{{Key: "owner", Reset: true}}, false); err != nil {
		t.Fatalf("AlterTable reset: %v", err)
	}
	if info, err := c.GetTableInfo(ctx, path); err != nil {
		t.Fatal(err)
	} else if v, ok := info.CustomProperties["owner"]; ok {
		t.Errorf("owner = %q after the reset, want it gone", v)
	}

	err = c.AlterTable(ctx, path, []PropertyChange{{Key: "table.log.ttl", Value: "3 h"}}, false)
	if CodeOf(err) != CodeInvalidAlterTable {
		t.Errorf("altering table.log.ttl: err = %v, want INVALID_ALTER_TABLE_EXCEPTION", err)
	}
	if info, err := c.GetTableInfo(ctx, path); err != nil || info.Properties["table.log.ttl"] != "2 h" {
		t.Errorf("table.log.ttl after the refusal: %v %v", info.Properties, err)
	}
	if err := c.AlterTable(ctx, TablePath{db, "missing"}, []PropertyChange{{Key: "owner", Value: "x"}}, true); err != nil {
		t.Errorf("AlterTable of a missing table with ignoreIfNotExists: %v", err)
	}
}
