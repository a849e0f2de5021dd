package flusstest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/partitioning"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// fakeFluss is the Fluss admin boundary: tables by path, whose buckets all
// get a leader or none, as the coordinator handles a creation or loses it.
type fakeFluss struct {
	mu        sync.Mutex
	nextID    int64
	tables    map[fluss.TablePath]*fakeTable
	creations int
	// handled reports whether the coordinator handles the n-th creation
	// (from 1); one it does not leaves the table without leaders.
	handled func(n int) bool
	// unserving leaves the leaders of handled tables not answering
	// ListOffsets.
	unserving bool
	dropped   []int64
}

type fakeTable struct {
	info    fluss.TableInfo
	handled bool
	parts   []fluss.PartitionInfo
}

func newFake(handled func(n int) bool) *fakeFluss {
	return &fakeFluss{nextID: 1, tables: map[fluss.TablePath]*fakeTable{}, handled: handled}
}

func (f *fakeFluss) CreateTable(_ context.Context, path fluss.TablePath, d fluss.TableDescriptor, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.tables[path]; ok {
		return &fluss.Error{Code: fluss.CodeTableAlreadyExist, Message: path.String()}
	}
	f.creations++
	t := &fakeTable{info: fluss.TableInfo{TablePath: path, TableID: f.nextID, TableDescriptor: d}, handled: f.handled(f.creations)}
	f.nextID++
	if auto, err := t.info.AutoPartition(); err == nil && auto.Enabled && t.handled {
		// The coordinator pre-creates partitions when it handles the table.
		t.parts = append(t.parts, fluss.PartitionInfo{ID: f.nextID, Name: "today"})
		f.nextID++
	}
	f.tables[path] = t
	return nil
}

func (f *fakeFluss) DropTable(_ context.Context, path fluss.TablePath, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tables[path]
	if !ok {
		return &fluss.Error{Code: fluss.CodeTableNotExist, Message: path.String()}
	}
	delete(f.tables, path)
	f.dropped = append(f.dropped, t.info.TableID)
	return nil
}

func (f *fakeFluss) table(path fluss.TablePath) (*fakeTable, error) {
	t, ok := f.tables[path]
	if !ok {
		return nil, &fluss.Error{Code: fluss.CodeTableNotExist, Message: path.String()}
	}
	return t, nil
}

func (f *fakeFluss) byID(id int64) (*fakeTable, error) {
	for _, t := range f.tables {
		if t.info.TableID == id {
			return t, nil
		}
	}
	return nil, &fluss.Error{Code: fluss.CodeTableNotExist, Message: fmt.Sprint("table id ", id)}
}

func (f *fakeFluss) GetTableInfo(_ context.Context, path fluss.TablePath) (*fluss.TableInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.table(path)
	if err != nil {
		return nil, err
	}
	info := t.info
	return &info, nil
}

func (f *fakeFluss) CreatePartition(_ context.Context, path fluss.TablePath, spec fluss.PartitionSpec, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.table(path)
	if err != nil {
		return err
	}
	name := strings.Join(slices.Collect(maps.Values(spec)), "$")
	t.parts = append(t.parts, fluss.PartitionInfo{ID: f.nextID, Name: name})
	f.nextID++
	return nil
}

func (f *fakeFluss) ListPartitions(_ context.Context, path fluss.TablePath) ([]fluss.PartitionInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.table(path)
	if err != nil {
		return nil, err
	}
	return slices.Clone(t.parts), nil
}

func (f *fakeFluss) leader(t *fakeTable) int32 {
	if t.handled {
		return 1
	}
	return fluss.NoLeader
}

func (f *fakeFluss) RefreshTableRoute(_ context.Context, path fluss.TablePath) (*fluss.TableRoute, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.table(path)
	if err != nil {
		return nil, err
	}
	r := &fluss.TableRoute{Path: path, TableID: t.info.TableID}
	if t.info.IsPartitioned() {
		return r, nil
	}
	for b := range int32(t.info.NumBuckets) {
		r.Buckets = append(r.Buckets, fluss.BucketLocation{Bucket: b, Leader: f.leader(t)})
	}
	return r, nil
}

func (f *fakeFluss) BucketLeader(_ context.Context, tableID int64, partitionID *int64, bucket int32) (fluss.ServerNode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.byID(tableID)
	if err != nil {
		return fluss.ServerNode{}, err
	}
	if (partitionID != nil) != t.info.IsPartitioned() || bucket < 0 || int(bucket) >= t.info.NumBuckets {
		return fluss.ServerNode{}, &fluss.Error{Code: fluss.CodeUnknownTableOrBucket, Message: "no such bucket"}
	}
	if f.leader(t) == fluss.NoLeader {
		return fluss.ServerNode{}, fmt.Errorf("%w: bucket %d", fluss.ErrNoLeader, bucket)
	}
	return fluss.ServerNode{ID: 1, Host: "127.0.0.1", Port: 9124}, nil
}

func (f *fakeFluss) ListOffsets(ctx context.Context, tableID int64, partitionID *int64, buckets []int32, _ fluss.OffsetSpec) (map[int32]int64, error) {
	out := map[int32]int64{}
	for _, b := range buckets {
		if _, err := f.BucketLeader(ctx, tableID, partitionID, b); err != nil {
			return nil, err
		}
		if f.unserving {
			return nil, &fluss.Error{Code: fluss.CodeNotLeaderOrFollower, Message: "not yet"}
		}
		out[b] = 0
	}
	return out, nil
}

func always(int) bool     { return true }
func never(int) bool      { return false }
func notFirst(n int) bool { return n > 1 }
func col(name string) types.Column {
	return types.Column{Name: name, Type: types.DataType{Root: types.String}, ID: types.UnknownID}
}

var (
	path = fluss.TablePath{Database: "db", Table: "t"}
	log  = fluss.TableDescriptor{Schema: types.Schema{Columns: []types.Column{col("v")}}, NumBuckets: 3}
	byDt = fluss.TableDescriptor{Schema: types.Schema{Columns: []types.Column{col("v"), col("dt")}},
		PartitionKeys: []string{"dt"}, NumBuckets: 2}
	autoDt = fluss.TableDescriptor{Schema: types.Schema{Columns: []types.Column{col("v"), col("dt")}},
		PartitionKeys: []string{"dt"}, NumBuckets: 1, Properties: map[string]string{
			partitioning.PropAutoPartitionEnabled: "true", partitioning.PropAutoPartitionTimeUnit: "DAY",
			partitioning.PropAutoPartitionNumPreCreate: "1"}}
	days = []fluss.PartitionSpec{{"dt": "a"}, {"dt": "b"}}
)

// TestCreate covers the tables the coordinator handles at once, those it
// handles once created again, and those it never does.
func TestCreate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		d          fluss.TableDescriptor
		partitions []fluss.PartitionSpec
		handled    func(int) bool
		unserving  bool
		// wantID is the table returned, 0 for an error containing wantErr.
		wantID    int64
		wantParts int
		wantErr   []string
	}{
		{name: "handled", d: log, handled: always, wantID: 1},
		{name: "lost once", d: log, handled: notFirst, wantID: 2},
		{name: "lost twice", d: log, handled: never,
			wantErr: []string{"db.t (id 2)", "created 2 times", "buckets [0 1 2] of 3", "waited", " and ", "apache/fluss#1018"}},
		{name: "leaders that do not answer", d: log, handled: always, unserving: true,
			wantErr: []string{"db.t (id 2)", "buckets [0 1 2] of 3 (their leaders do not answer", "NOT_LEADER_OR_FOLLOWER"}},
		{name: "partitions handled", d: byDt, partitions: days, handled: always, wantID: 1, wantParts: 2},
		// The partitions of the lost table are created again with it:
		// ids 1-3 are the first table and its partitions.
		{name: "partitions lost once", d: byDt, partitions: days, handled: notFirst, wantID: 4, wantParts: 2},
		{name: "partitions lost twice", d: byDt, partitions: days, handled: never,
			wantErr: []string{"db.t (id 4)", "partition a: buckets [0 1] of 2; partition b: buckets [0 1] of 2"}},
		{name: "partitioned without partitions", d: byDt, handled: never, wantID: 1},
		{name: "auto-partitioned lost once", d: autoDt, handled: notFirst, wantID: 2, wantParts: 1},
		{name: "auto-partitioned lost twice", d: autoDt, handled: never,
			wantErr: []string{"db.t (id 2)", "its pre-created partitions (none listed)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(tc.handled)
			f.unserving = tc.unserving
			var logged []string
			logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			info, err := create(ctx, f, path, tc.d, tc.partitions, 50*time.Millisecond, logf)
			if tc.wantID == 0 {
				if err == nil {
					t.Fatalf("created table %d, want an error", info.TableID)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if f.creations != creations || len(f.dropped) != 1 {
					t.Errorf("%d creations, dropped %v; want %d creations, the first dropped", f.creations, f.dropped, creations)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.TableID != tc.wantID || info.TablePath != path {
				t.Errorf("created %s id %d, want %s id %d", info.TablePath, info.TableID, path, tc.wantID)
			}
			if parts := f.tables[path].parts; len(parts) != tc.wantParts {
				t.Errorf("partitions %v, want %d", parts, tc.wantParts)
			}
			lost := 0
			if !tc.handled(1) && tc.wantID != 1 {
				lost = 1
			}
			if f.creations != 1+lost || len(f.dropped) != lost || len(logged) != lost {
				t.Errorf("%d creations, dropped %v, logged %q; want %d lost", f.creations, f.dropped, logged, lost)
			}
			if lost == 1 && (f.dropped[0] != 1 || !strings.Contains(logged[0], "dropping it to create it once more")) {
				t.Errorf("dropped %v, logged %q; want table 1 dropped and said so", f.dropped, logged)
			}
		})
	}
}

// TestCreateRefusesPartitionsOfUnpartitionedTable: partitions asked for a
// table without partition keys are a mistake of the test, said as such.
func TestCreateRefusesPartitionsOfUnpartitionedTable(t *testing.T) {
	f := newFake(always)
	_, err := create(context.Background(), f, path, log, days, time.Second, t.Logf)
	if err == nil || !strings.Contains(err.Error(), "not partitioned") {
		t.Fatalf("err = %v, want the table is not partitioned", err)
	}
}

// TestCreateStopsWithContext: a context ending while leaders are waited
// for ends the wait with its cause, without dropping the table.
func TestCreateStopsWithContext(t *testing.T) {
	f := newFake(never)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := create(ctx, f, path, log, nil, time.Minute, t.Logf)
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v, want the context's deadline soon", err, time.Since(start))
	}
	if len(f.dropped) != 0 {
		t.Errorf("dropped %v", f.dropped)
	}
}
