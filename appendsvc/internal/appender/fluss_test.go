package appender

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// fakeClient knows table ids only after GetTableInfo, like fluss.Client.
// Every table has schema versions 1 (one column named after the table)
// and 2 (the latest, a second column added).
type fakeClient struct {
	mu         sync.Mutex
	tables     map[fluss.TablePath]int64
	known      map[int64]bool
	infoErr    error // answered by GetTableInfo when set
	infos      int   // GetTableInfo calls
	schemaRPCs int   // GetTableSchema calls
	writerArgs []fluss.TablePath
}

func newFakeClient(tables map[fluss.TablePath]int64) *fakeClient {
	return &fakeClient{tables: tables, known: map[int64]bool{}}
}

func (c *fakeClient) ProduceLog(_ context.Context, tableID int64, _ fluss.Acks, _ time.Duration, b []fluss.BucketBatch) ([]fluss.BucketResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known[tableID] {
		return nil, fluss.ErrUnknownTable
	}
	return []fluss.BucketResult{{Bucket: b[0].Bucket, BaseOffset: 5}}, nil
}

func fakeSchema(p fluss.TablePath, version int32) types.Schema {
	s := types.Schema{Columns: []types.Column{{Name: p.Table, Type: types.DataType{Root: types.Int}}}}
	if version == 2 {
		s.Columns = append(s.Columns, types.Column{Name: "added", Type: types.DataType{Root: types.String, Nullable: true}})
	}
	return s
}

func (c *fakeClient) PutKv(context.Context, int64, fluss.Acks, time.Duration, []fluss.BucketBatch) ([]fluss.PutKvResult, error) {
	return nil, errors.New("fakeClient: PutKv not used by these tests")
}

func (c *fakeClient) PartitionIDs(context.Context, *fluss.TableInfo, []string, bool) (map[string]int64, error) {
	return nil, errors.New("fakeClient: PartitionIDs not used by these tests")
}

func (c *fakeClient) GetTableInfo(_ context.Context, p fluss.TablePath) (*fluss.TableInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.infos++
	if c.infoErr != nil {
		return nil, c.infoErr
	}
	id, ok := c.tables[p]
	if !ok {
		return nil, &fluss.Error{Code: fluss.CodeTableNotExist, Message: p.String()}
	}
	c.known[id] = true
	return &fluss.TableInfo{TablePath: p, TableID: id, SchemaID: 2, TableDescriptor: fluss.TableDescriptor{Schema: fakeSchema(p, 2)}}, nil
}

func (c *fakeClient) GetTableSchema(_ context.Context, p fluss.TablePath, schemaID int32) (types.Schema, int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.schemaRPCs++
	if _, ok := c.tables[p]; !ok || schemaID < 1 || schemaID > 2 {
		return types.Schema{}, 0, &fluss.Error{Code: fluss.CodeSchemaNotExist}
	}
	return fakeSchema(p, schemaID), schemaID, nil
}

func (c *fakeClient) InitWriter(_ context.Context, paths ...fluss.TablePath) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writerArgs = paths
	return 1, nil
}

var (
	pathX = fluss.TablePath{Database: "a", Table: "x"}
	pathY = fluss.TablePath{Database: "b", Table: "y"}
)

func TestClientAdapterProduceLooksUpByPath(t *testing.T) {
	batch := []fluss.BucketBatch{{Bucket: 0, Records: []byte{1}}}
	cases := []struct {
		name      string
		table     Table
		infoErr   error
		code      fluss.ErrorCode // CodeNone: appended
		retriable bool
		is        error // errors.Is must hold when set
	}{
		{name: "known path", table: Table{ID: 2, Path: pathY}},
		// The path now names another table: the requested one was dropped
		// and the path reused. The producer must refresh its metadata.
		{name: "recreated table", table: Table{ID: 1, Path: pathY}, code: fluss.CodeTableNotExist, is: ErrTableRecreated},
		{name: "missing table", table: Table{ID: 3, Path: fluss.TablePath{Database: "a", Table: "gone"}}, code: fluss.CodeTableNotExist},
		// A database dropped with its tables is a missing table too, not
		// a server error.
		{name: "missing database", table: Table{ID: 3, Path: fluss.TablePath{Database: "gone", Table: "x"}},
			infoErr: &fluss.Error{Code: fluss.CodeDatabaseNotExist}, code: fluss.CodeTableNotExist},
		// Lookup failures that may pass come back as they are.
		{name: "coordinator unreachable", table: Table{ID: 2, Path: pathY}, infoErr: fluss.ErrConnectionBroken,
			code: fluss.CodeUnknownServerError, retriable: true, is: fluss.ErrConnectionBroken},
		{name: "coordinator not ready", table: Table{ID: 2, Path: pathY}, infoErr: &fluss.Error{Code: fluss.CodeNetwork},
			code: fluss.CodeNetwork, retriable: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClient(map[fluss.TablePath]int64{pathX: 1, pathY: 2})
			c.infoErr = tc.infoErr
			a := NewClientAdapter(c, slog.New(slog.NewTextHandler(io.Discard, nil)))
			ctx := context.Background()
			res, err := a.ProduceLog(ctx, tc.table, fluss.AcksAll, time.Second, batch)
			if fluss.CodeOf(err) != tc.code || fluss.IsRetriable(err) != tc.retriable {
				t.Fatalf("err = %v (code %s, retriable %v), want code %s, retriable %v",
					err, fluss.CodeOf(err), fluss.IsRetriable(err), tc.code, tc.retriable)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want it to be %v", err, tc.is)
			}
			if c.infos != 1 {
				t.Fatalf("%d lookups, want 1", c.infos)
			}
			if tc.code != fluss.CodeNone {
				return
			}
			if len(res) != 1 || res[0].BaseOffset != 5 {
				t.Fatalf("results %v", res)
			}
			// The client now knows the id: no second lookup.
			if _, err := a.ProduceLog(ctx, tc.table, fluss.AcksAll, time.Second, batch); err != nil || c.infos != 1 {
				t.Fatalf("second produce: %v after %d lookups", err, c.infos)
			}
			// InitWriter names the tables appended to (for authorizers).
			if _, err := a.InitWriter(ctx); err != nil || !reflect.DeepEqual(c.writerArgs, []fluss.TablePath{tc.table.Path}) {
				t.Fatalf("InitWriter: %v with paths %v", err, c.writerArgs)
			}
		})
	}
}

func TestClientAdapterTableSchema(t *testing.T) {
	cases := []struct {
		name       string
		table      Table
		schemaID   int32
		cols       []string        // want; nil when failing
		code       fluss.ErrorCode // when failing
		retriable  bool
		schemaRPCs int
	}{
		{name: "latest from the lookup", table: Table{ID: 2, Path: pathY}, schemaID: 2, cols: []string{"y", "added"}},
		{name: "older version", table: Table{ID: 2, Path: pathY}, schemaID: 1, cols: []string{"y"}, schemaRPCs: 1},
		// Fluss classifies it as retriable: a version may yet appear.
		{name: "missing version", table: Table{ID: 2, Path: pathY}, schemaID: 5, code: fluss.CodeSchemaNotExist, retriable: true, schemaRPCs: 1},
		{name: "missing table", table: Table{ID: 3, Path: fluss.TablePath{Database: "b", Table: "z"}}, schemaID: 1, code: fluss.CodeTableNotExist},
		// Another table's schema must not be checked batches against.
		{name: "recreated table", table: Table{ID: 1, Path: pathY}, schemaID: 1, code: fluss.CodeTableNotExist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClient(map[fluss.TablePath]int64{pathX: 1, pathY: 2})
			a := NewClientAdapter(c, slog.New(slog.NewTextHandler(io.Discard, nil)))
			fields, err := a.TableSchema(context.Background(), tc.table, tc.schemaID)
			if c.schemaRPCs != tc.schemaRPCs {
				t.Errorf("%d GetTableSchema calls, want %d", c.schemaRPCs, tc.schemaRPCs)
			}
			if tc.cols == nil {
				if fluss.CodeOf(err) != tc.code || fluss.IsRetriable(err) != tc.retriable {
					t.Fatalf("err = %v, want %s, retriable %v", err, tc.code, tc.retriable)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range fields {
				names = append(names, f.Name)
			}
			if !reflect.DeepEqual(names, tc.cols) {
				t.Fatalf("columns %v, want %v", names, tc.cols)
			}
		})
	}
}

// A known id under another path is looked up again: the path may name no
// table (a request for a missing database must not be written by id).
func TestClientAdapterChecksPathOfKnownID(t *testing.T) {
	batch := []fluss.BucketBatch{{Bucket: 0, Records: []byte{1}}}
	c := newFakeClient(map[fluss.TablePath]int64{pathX: 1})
	a := NewClientAdapter(c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	if _, err := a.ProduceLog(ctx, Table{ID: 1, Path: pathX}, fluss.AcksAll, time.Second, batch); err != nil {
		t.Fatal(err)
	}
	missing := Table{ID: 1, Path: fluss.TablePath{Database: "gone", Table: "x"}}
	if _, err := a.ProduceLog(ctx, missing, fluss.AcksAll, time.Second, batch); fluss.CodeOf(err) != fluss.CodeTableNotExist {
		t.Fatalf("known id under a missing path: %v, want TABLE_NOT_EXIST", err)
	}
	// The known path still writes without a lookup.
	before := c.infos
	if _, err := a.ProduceLog(ctx, Table{ID: 1, Path: pathX}, fluss.AcksAll, time.Second, batch); err != nil || c.infos != before {
		t.Fatalf("known path: %v after %d lookups (was %d)", err, c.infos, before)
	}
}
