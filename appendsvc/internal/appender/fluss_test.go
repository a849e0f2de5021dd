package appender

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// fakeClient knows table ids only after GetTableInfo, like fluss.Client.
type fakeClient struct {
	mu      sync.Mutex
	tables  map[fluss.TablePath]int64
	known   map[int64]bool
	infos   int
	listErr error
}

func (c *fakeClient) ProduceLog(_ context.Context, tableID int64, _ fluss.Acks, _ time.Duration, b []fluss.BucketBatch) ([]fluss.BucketResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known[tableID] {
		return nil, fluss.ErrUnknownTable
	}
	return []fluss.BucketResult{{Bucket: b[0].Bucket, BaseOffset: 5}}, nil
}

func (c *fakeClient) ListDatabases(context.Context) ([]string, error) {
	if c.listErr != nil {
		return nil, c.listErr
	}
	return []string{"a", "b"}, nil
}

func (c *fakeClient) ListTables(_ context.Context, db string) ([]string, error) {
	var out []string
	for p := range c.tables {
		if p.Database == db {
			out = append(out, p.Table)
		}
	}
	return out, nil
}

func (c *fakeClient) GetTableInfo(_ context.Context, p fluss.TablePath) (*fluss.TableInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.infos++
	id, ok := c.tables[p]
	if !ok {
		return nil, &fluss.Error{Code: fluss.CodeTableNotExist}
	}
	c.known[id] = true
	return &fluss.TableInfo{TablePath: p, TableID: id}, nil
}

func (c *fakeClient) GetTableSchema(_ context.Context, p fluss.TablePath, schemaID int32) (types.Schema, int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.tables[p]; !ok || schemaID != 1 {
		return types.Schema{}, 0, &fluss.Error{Code: fluss.CodeSchemaNotExist}
	}
	return types.Schema{Columns: []types.Column{{Name: p.Table, Type: types.DataType{Root: types.Int}}}}, 1, nil
}

func TestClientAdapterTableSchema(t *testing.T) {
	c := &fakeClient{tables: map[fluss.TablePath]int64{{Database: "b", Table: "y"}: 2}, known: map[int64]bool{}}
	a := NewClientAdapter(c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	cols, err := a.TableSchema(context.Background(), 2, 1)
	if err != nil || len(cols) != 1 || cols[0].Name != "y" {
		t.Fatalf("schema: %v %v", cols, err)
	}
	if _, err := a.TableSchema(context.Background(), 2, 5); fluss.CodeOf(err) != fluss.CodeSchemaNotExist {
		t.Fatalf("missing version: %v", err)
	}
	if _, err := a.TableSchema(context.Background(), 3, 1); fluss.CodeOf(err) != fluss.CodeTableNotExist {
		t.Fatalf("missing table: %v", err)
	}
}

func TestClientAdapterResolvesTableIDs(t *testing.T) {
	c := &fakeClient{
		tables: map[fluss.TablePath]int64{{Database: "a", Table: "x"}: 1, {Database: "b", Table: "y"}: 2},
		known:  map[int64]bool{},
	}
	a := NewClientAdapter(c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	batch := []fluss.BucketBatch{{Bucket: 0, Records: []byte{1}}}

	res, err := a.ProduceLog(ctx, 2, fluss.AcksAll, time.Second, batch)
	if err != nil || res[0].BaseOffset != 5 {
		t.Fatalf("known after scan: %v %v", res, err)
	}
	scans := c.infos

	_, err = a.ProduceLog(ctx, 99, fluss.AcksAll, time.Second, batch)
	if fluss.CodeOf(err) != fluss.CodeTableNotExist || fluss.IsRetriable(err) {
		t.Fatalf("unknown id: %v", err)
	}
	afterMiss := c.infos
	if afterMiss == scans {
		t.Fatal("unknown id did not scan")
	}
	// A recent miss is remembered: no second scan.
	if _, err := a.ProduceLog(ctx, 99, fluss.AcksAll, time.Second, batch); fluss.CodeOf(err) != fluss.CodeTableNotExist {
		t.Fatalf("repeat: %v", err)
	}
	if c.infos != afterMiss {
		t.Fatal("a remembered miss scanned again")
	}
	// ...until it expires; a table created meanwhile is then found.
	a.now = func() time.Time { return time.Now().Add(time.Hour) }
	c.mu.Lock()
	c.tables[fluss.TablePath{Database: "a", Table: "new"}] = 99
	c.mu.Unlock()
	if res, err := a.ProduceLog(ctx, 99, fluss.AcksAll, time.Second, batch); err != nil || res[0].BaseOffset != 5 {
		t.Fatalf("after expiry: %v %v", res, err)
	}

	// Scan failures come back as they are, not as a missing table.
	c2 := &fakeClient{tables: map[fluss.TablePath]int64{}, known: map[int64]bool{}, listErr: fluss.ErrConnectionBroken}
	a2 := NewClientAdapter(c2, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := a2.ProduceLog(ctx, 1, fluss.AcksAll, time.Second, batch); !errors.Is(err, fluss.ErrConnectionBroken) {
		t.Fatalf("scan failure: %v", err)
	}
}
