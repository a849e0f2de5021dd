package flussadapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/ferrygw/ferry/catalogsvc/internal/catalog"
	"github.com/ferrygw/ferry/catalogsvc/internal/mapping"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/types"
)

type fakeAdmin struct {
	err  error
	info *fluss.TableInfo
}

func (f fakeAdmin) ListDatabases(context.Context) ([]string, error) { return []string{"a"}, f.err }
func (f fakeAdmin) ListTables(context.Context, string) ([]string, error) {
	return []string{"t"}, f.err
}
func (f fakeAdmin) GetTableInfo(context.Context, fluss.TablePath) (*fluss.TableInfo, error) {
	return f.info, f.err
}
func (f fakeAdmin) ListPartitions(context.Context, fluss.TablePath) ([]fluss.PartitionInfo, error) {
	return []fluss.PartitionInfo{{ID: 7, Values: []string{"eu", "20261204"}, Name: "eu$20261204"}}, f.err
}

func TestNotFoundMapping(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		err      error
		notFound bool
	}{
		{&fluss.Error{Code: fluss.CodeTableNotExist, Message: "gone"}, true},
		{fmt.Errorf("wrapped: %w", &fluss.Error{Code: fluss.CodeDatabaseNotExist}), true},
		{&fluss.Error{Code: fluss.CodeUnknownServerError}, false},
		{errors.New("connection refused"), false},
	}
	for _, tt := range tests {
		a := New(fakeAdmin{err: tt.err})
		_, err := a.GetTable(ctx, "a", "t")
		if errors.Is(err, catalog.ErrNotFound) != tt.notFound || !errors.Is(err, tt.err) {
			t.Errorf("GetTable with %v: %v (not found %v, want %v)", tt.err, err, errors.Is(err, catalog.ErrNotFound), tt.notFound)
		}
		_, err = a.ListTables(ctx, "a")
		if errors.Is(err, catalog.ErrNotFound) != tt.notFound {
			t.Errorf("ListTables with %v: %v", tt.err, err)
		}
	}
	// A decode failure concerns the table only; transport failures do not.
	decode := fmt.Errorf("fluss: table a.t: %w", errors.New(`unknown type root "VARIANT"`))
	if _, err := New(fakeAdmin{err: decode}).GetTable(ctx, "a", "t"); !isTableError(err) {
		t.Errorf("decode failure: %v, want a *catalog.TableError", err)
	}
	for _, transport := range []error{
		fmt.Errorf("fluss: no coordinator reachable: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}),
		fmt.Errorf("call: %w", fluss.ErrConnectionBroken),
		context.DeadlineExceeded,
		&fluss.Error{Code: fluss.CodeUnknownServerError},
	} {
		if _, err := New(fakeAdmin{err: transport}).GetTable(ctx, "a", "t"); isTableError(err) || !errors.Is(err, transport) {
			t.Errorf("%v: got %v, want it unchanged", transport, err)
		}
	}
	if _, err := New(fakeAdmin{}).ListTables(ctx, "a"); err != nil {
		t.Errorf("ListTables without error: %v", err)
	}
}

func isTableError(err error) bool {
	var te *catalog.TableError
	return errors.As(err, &te)
}

func TestToTable(t *testing.T) {
	info := &fluss.TableInfo{
		TablePath: fluss.TablePath{Database: "shop", Table: "orders"},
		TableID:   12, SchemaID: 3,
		TableDescriptor: fluss.TableDescriptor{
			Schema: types.Schema{Columns: []types.Column{
				{Name: "id", Type: types.DataType{Root: types.BigInt}, ID: 0},
				{Name: "v", Type: types.DataType{Root: types.String, Nullable: true}, ID: 1},
			}},
			BucketKeys:       []string{"id"},
			NumBuckets:       4,
			Properties:       map[string]string{"table.log.format": "ARROW"},
			CustomProperties: map[string]string{mapping.PropEnabled: "true"},
		},
	}
	got, err := New(fakeAdmin{info: info}).GetTable(context.Background(), "shop", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got.Path() != "shop.orders" || got.TableID != 12 || got.SchemaID != 3 || got.BucketCount != 4 ||
		len(got.Columns) != 2 || got.Columns[1].Type.Root != types.String || !got.Columns[1].Type.Nullable ||
		len(got.BucketKeys) != 1 || got.Properties["table.log.format"] != "ARROW" ||
		got.CustomProperties[mapping.PropEnabled] != "true" || len(got.PrimaryKeys) != 0 {
		t.Errorf("ToTable = %+v", got)
	}
	// The result owns its maps: changing it does not touch the client's.
	got.CustomProperties["x"] = "y"
	if _, ok := info.CustomProperties["x"]; ok {
		t.Error("ToTable shares the properties map")
	}
	// Absent maps become empty ones.
	info.Properties, info.CustomProperties = nil, nil
	got, _ = ToTable(info)
	if got.Properties == nil || got.CustomProperties == nil {
		t.Error("nil property maps")
	}
	info.NumBuckets = 1 << 40
	if _, err := ToTable(info); err == nil {
		t.Error("bucket count beyond int32 accepted")
	}
}

// TestToTableKeyedShape: a partitioned primary-key table arrives with its
// keys and table.* options, so the mapping sees its whole shape.
func TestToTableKeyedShape(t *testing.T) {
	info := &fluss.TableInfo{
		TablePath: fluss.TablePath{Database: "shop", Table: "carts"},
		TableID:   13, SchemaID: 1,
		TableDescriptor: fluss.TableDescriptor{
			Schema: types.Schema{Columns: []types.Column{
				{Name: "id", Type: types.DataType{Root: types.BigInt}, ID: 0},
				{Name: "dt", Type: types.DataType{Root: types.String}, ID: 1},
				{Name: "v", Type: types.DataType{Root: types.String, Nullable: true}, ID: 2},
			}, PrimaryKey: []string{"id", "dt"}},
			PartitionKeys: []string{"dt"},
			BucketKeys:    []string{"id"},
			NumBuckets:    2,
			Properties: map[string]string{fluss.PropKvFormat: "COMPACTED", "table.auto-partition.enabled": "true",
				"table.auto-partition.time-unit": "DAY"},
			CustomProperties: map[string]string{mapping.PropEnabled: "true"},
		},
	}
	got, err := ToTable(info)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.PrimaryKeys, got.PartitionKeys, got.BucketKeys) != "[id dt] [dt] [id]" ||
		got.Properties[fluss.PropKvFormat] != "COMPACTED" || got.Properties["table.auto-partition.time-unit"] != "DAY" {
		t.Errorf("ToTable = %+v", got)
	}
	m, r := mapping.Resolve(got, mapping.Options{ClusterID: "c", Exposure: mapping.ExposeOptIn})
	if r != nil {
		t.Fatalf("refused: %v", r)
	}
	if fmt.Sprint(m.GetKind(), m.GetPrimaryKeys(), m.GetPartitionKeys(), m.GetBucketKeys(), m.GetAutoPartitionOptions()) !=
		"TABLE_KIND_PRIMARY_KEY [id dt] [dt] [id] map[table.auto-partition.enabled:true table.auto-partition.time-unit:DAY]" {
		t.Errorf("mapping = %v", m)
	}
}

func TestLazy(t *testing.T) {
	dials := 0
	fail := errors.New("connection refused")
	l := NewLazy(func(context.Context) (*fluss.Client, error) { dials++; return nil, fail })
	for range 2 {
		if _, err := l.ListDatabases(context.Background()); !errors.Is(err, fail) {
			t.Fatalf("ListDatabases = %v, want the dial error", err)
		}
	}
	if dials != 2 {
		t.Errorf("%d dials for 2 calls after failures, want 2 (retry every call)", dials)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ListTables(context.Background(), "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestListPartitions(t *testing.T) {
	ctx := context.Background()
	got, err := New(fakeAdmin{}).ListPartitions(ctx, "a", "t")
	if err != nil || len(got) != 1 || got[0].ID != 7 || got[0].Name() != "eu$20261204" {
		t.Errorf("ListPartitions: %+v, %v", got, err)
	}
	gone := &fluss.Error{Code: fluss.CodeTableNotExist, Message: "gone"}
	if _, err := New(fakeAdmin{err: gone}).ListPartitions(ctx, "a", "t"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("ListPartitions of a dropped table: %v, want not found", err)
	}
}
