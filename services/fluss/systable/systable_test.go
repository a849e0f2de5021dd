package systable

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// fakeFluss is the Fluss admin boundary: tables by path, each with how
// many of its buckets have a leader; a creation's leaders are chosen by
// leadersOf.
type fakeFluss struct {
	mu        sync.Mutex
	nextID    int64
	tables    map[fluss.TablePath]*fakeTable
	creations int
	// leadersOf returns how many buckets of the n-th table created (from
	// 1) get a leader; nil: all.
	leadersOf func(n, buckets int) int
	creators  map[int64]string // table id -> process that created it
	drops     []drop
	produced  []int64 // table ids appended to
	// unreachable fails this many GetTableInfo calls as a down cluster.
	unreachable int
}

type fakeTable struct {
	id  int64
	d   fluss.TableDescriptor
	led int
}

type drop struct {
	id  int64
	who string
}

// firstLeaderless leaves the first table created without leaders, as
// when the Fluss coordinator lost its creation.
func firstLeaderless(n, buckets int) int {
	if n == 1 {
		return 0
	}
	return buckets
}

func newFake() *fakeFluss {
	return &fakeFluss{nextID: 1, tables: map[fluss.TablePath]*fakeTable{}, creators: map[int64]string{}}
}

// process is one Ferry process's client of the shared fake.
type process struct {
	*fakeFluss
	name string
	// arrive, when set, holds the first CreateTable until every process
	// looked the table up and found it missing.
	arrive *sync.WaitGroup
	once   sync.Once
}

func (f *fakeFluss) as(name string) *process { return &process{fakeFluss: f, name: name} }

func notExist(what string) error { return &fluss.Error{Code: fluss.CodeTableNotExist, Message: what} }

func (f *fakeFluss) GetTableInfo(_ context.Context, path fluss.TablePath) (*fluss.TableInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unreachable > 0 {
		f.unreachable--
		return nil, fluss.ErrUnreachable
	}
	t := f.tables[path]
	if t == nil {
		return nil, notExist(path.String())
	}
	return &fluss.TableInfo{TablePath: path, TableID: t.id, SchemaID: 1, TableDescriptor: t.d}, nil
}

func (f *fakeFluss) CreateDatabase(context.Context, string, fluss.DatabaseDescriptor, bool) error {
	return nil
}

func (p *process) CreateTable(_ context.Context, path fluss.TablePath, d fluss.TableDescriptor, ignoreIfExists bool) error {
	if p.arrive != nil {
		p.once.Do(func() { p.arrive.Done(); p.arrive.Wait() })
	}
	f := p.fakeFluss
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tables[path] != nil {
		if ignoreIfExists {
			return nil
		}
		return &fluss.Error{Code: fluss.CodeTableAlreadyExist, Message: path.String()}
	}
	f.creations++
	led := d.NumBuckets
	if f.leadersOf != nil {
		led = f.leadersOf(f.creations, d.NumBuckets)
	}
	t := &fakeTable{id: f.nextID, d: d, led: led}
	f.nextID++
	f.tables[path] = t
	f.creators[t.id] = p.name
	return nil
}

func (p *process) DropTable(_ context.Context, path fluss.TablePath, ignoreIfNotExists bool) error {
	f := p.fakeFluss
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tables[path]
	if t == nil {
		if ignoreIfNotExists {
			return nil
		}
		return notExist(path.String())
	}
	delete(f.tables, path)
	f.drops = append(f.drops, drop{t.id, p.name})
	return nil
}

func (f *fakeFluss) RefreshTableRoute(_ context.Context, path fluss.TablePath) (*fluss.TableRoute, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tables[path]
	if t == nil {
		return nil, notExist(path.String())
	}
	r := &fluss.TableRoute{Path: path, TableID: t.id, SchemaID: 1}
	for b := range t.d.NumBuckets {
		leader := fluss.NoLeader
		if b < t.led {
			leader = 1
		}
		r.Buckets = append(r.Buckets, fluss.BucketLocation{Bucket: int32(b), Leader: leader})
	}
	return r, nil
}

func (f *fakeFluss) ProduceLog(_ context.Context, tableID int64, _ fluss.Acks, _ time.Duration, batches []fluss.BucketBatch) ([]fluss.BucketResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res := make([]fluss.BucketResult, len(batches))
	for i, b := range batches {
		res[i] = fluss.BucketResult{Bucket: b.Bucket, BaseOffset: -1}
		var t *fakeTable
		for _, ft := range f.tables {
			if ft.id == tableID {
				t = ft
			}
		}
		switch {
		case t == nil:
			res[i].Err = notExist(fmt.Sprintf("table id %d", tableID))
		case int(b.Bucket) >= t.led:
			res[i].Err = &fluss.Error{Code: fluss.CodeLeaderNotAvailable, Message: "no leader"}
		default:
			res[i].BaseOffset = 0
			f.produced = append(f.produced, tableID)
		}
	}
	return res, nil
}

func (f *fakeFluss) FetchLog(context.Context, int64, []fluss.FetchBucket, fluss.FetchOptions) ([]fluss.FetchResult, error) {
	return nil, errors.New("not in this fake")
}

func (f *fakeFluss) ListOffsets(context.Context, int64, *int64, []int32, fluss.OffsetSpec) (map[int32]int64, error) {
	return nil, errors.New("not in this fake")
}

func (f *fakeFluss) snapshot() (creations int, drops []drop, produced []int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creations, append([]drop(nil), f.drops...), append([]int64(nil), f.produced...)
}

var columns = []types.Field{
	{Name: "k", Type: types.DataType{Root: types.String}},
	{Name: "n", Type: types.DataType{Root: types.BigInt}},
}

const path = "ferry_system.test"

// counter counts what the table adds to ferry.system_table.recreated.
type counter struct {
	noop.MeterProvider
	n *atomic.Int64
}

func (c counter) Meter(string, ...metric.MeterOption) metric.Meter { return countingMeter{n: c.n} }

type countingMeter struct {
	noop.Meter
	n *atomic.Int64
}

func (m countingMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return countingCounter{n: m.n}, nil
}

type countingCounter struct {
	noop.Int64Counter
	n *atomic.Int64
}

func (c countingCounter) Add(_ context.Context, v int64, _ ...metric.AddOption) { c.n.Add(v) }

// newTable is a table over f with bounds short enough for a unit test.
func newTable(t *testing.T, f Fluss, buckets int, recreated *atomic.Int64) *Table {
	t.Helper()
	opts := Options{LeadersWithin: 100 * time.Millisecond, RetryFor: 200 * time.Millisecond}
	if recreated != nil {
		opts.MeterProvider = counter{n: recreated}
	}
	tbl, err := New(f, Spec{Path: path, Columns: columns, Buckets: buckets, Comment: "test"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func record(t *testing.T, tbl *Table) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.Schema())
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("a")
	b.Field(1).(*array.Int64Builder).Append(1)
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	return rec
}

// TestLeaderlessNewTableIsCreatedAgain: the first table this process
// creates never gets a leader (the Fluss coordinator lost its creation);
// it is dropped and created again, and the second table is used.
func TestLeaderlessNewTableIsCreatedAgain(t *testing.T) {
	f := newFake()
	f.leadersOf = firstLeaderless
	var recreated atomic.Int64
	tbl := newTable(t, f.as("a"), 2, &recreated)
	ctx := context.Background()
	info, err := tbl.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Append(ctx, 1, record(t, tbl)); err != nil {
		t.Fatal(err)
	}
	creations, drops, produced := f.snapshot()
	if info.TableID != 2 || creations != 2 || fmt.Sprint(drops) != "[{1 a}]" || fmt.Sprint(produced) != "[2]" {
		t.Fatalf("table id %d, %d creations, drops %v, appended to %v; want 2, 2, [{1 a}], [2]", info.TableID, creations, drops, produced)
	}
	if n := recreated.Load(); n != 1 {
		t.Fatalf("ferry.system_table.recreated = %d, want 1", n)
	}
}

// TestExistingLeaderlessTableIsKept: a table this process did not create
// is never dropped, leaders or not: its info is returned after the wait,
// and calls retry.
func TestExistingLeaderlessTableIsKept(t *testing.T) {
	for _, led := range []int{0, 1} {
		f := newFake()
		f.nextID = 0 // Fluss's first table id: not taken for one this process created
		f.as("before").CreateTable(context.Background(), fluss.TablePath{Database: "ferry_system", Table: "test"},
			fluss.TableDescriptor{Schema: schemaOf(columns), NumBuckets: 2}, false)
		f.tables[fluss.TablePath{Database: "ferry_system", Table: "test"}].led = led
		tbl := newTable(t, f.as("a"), 2, nil)
		start := time.Now()
		info, err := tbl.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		creations, drops, _ := f.snapshot()
		if info.TableID != 0 || creations != 1 || len(drops) != 0 {
			t.Fatalf("%d led: table id %d, %d creations, drops %v; want 0, 1, none", led, info.TableID, creations, drops)
		}
		if waited := time.Since(start); waited < 200*time.Millisecond {
			t.Fatalf("%d led: returned after %v, before the wait for leaders (200ms)", led, waited)
		}
	}
}

// TestPartlyLedNewTableIsKept: a new table whose buckets partly have a
// leader is being elected, not lost: it is not dropped.
func TestPartlyLedNewTableIsKept(t *testing.T) {
	f := newFake()
	f.leadersOf = func(n, buckets int) int { return 1 }
	tbl := newTable(t, f.as("a"), 2, nil)
	info, err := tbl.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	creations, drops, _ := f.snapshot()
	if info.TableID != 1 || creations != 1 || len(drops) != 0 {
		t.Fatalf("table id %d, %d creations, drops %v; want 1, 1, none", info.TableID, creations, drops)
	}
}

// TestCreationsAreBounded: when every table created stays leaderless,
// the process stops after Creations tables and keeps the last.
func TestCreationsAreBounded(t *testing.T) {
	f := newFake()
	f.leadersOf = func(int, int) int { return 0 }
	var recreated atomic.Int64
	tbl := newTable(t, f.as("a"), 1, &recreated)
	info, err := tbl.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	creations, drops, _ := f.snapshot()
	if info.TableID != Creations || creations != Creations || len(drops) != Creations-1 || recreated.Load() != Creations-1 {
		t.Fatalf("table id %d, %d creations, drops %v, recreated %d; want %d, %d, %d drops", info.TableID, creations, drops,
			recreated.Load(), Creations, Creations, Creations-1)
	}
}

// TestCreatorThatGaveUpGoesOn: a call that gave up waiting for the
// leaders of the table it created leaves the table to the next call,
// which still drops and creates it again.
func TestCreatorThatGaveUpGoesOn(t *testing.T) {
	f := newFake()
	f.leadersOf = firstLeaderless
	tbl := newTable(t, f.as("a"), 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := tbl.Info(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Info within 30ms: %v, want a deadline error", err)
	}
	info, err := tbl.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	creations, drops, _ := f.snapshot()
	if info.TableID != 2 || creations != 2 || fmt.Sprint(drops) != "[{1 a}]" {
		t.Fatalf("table id %d, %d creations, drops %v; want 2, 2, [{1 a}]", info.TableID, creations, drops)
	}
}

// TestRacingCreators: two processes find the table missing and create it
// at once; only the one whose creation succeeded drops the leaderless
// table, and both end up on the table created again.
func TestRacingCreators(t *testing.T) {
	for range 5 {
		f := newFake()
		f.leadersOf = firstLeaderless
		var arrive sync.WaitGroup
		arrive.Add(2)
		a, b := f.as("a"), f.as("b")
		a.arrive, b.arrive = &arrive, &arrive
		tables := []*Table{newTable(t, a, 2, nil), newTable(t, b, 2, nil)}
		infos := make([]*fluss.TableInfo, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, tbl := range tables {
			wg.Go(func() { infos[i], errs[i] = tbl.Info(context.Background()) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		creations, drops, _ := f.snapshot()
		if len(drops) != 1 || drops[0].id != 1 || drops[0].who != f.creators[1] {
			t.Fatalf("drops %v; want table 1 dropped once, by its creator %s", drops, f.creators[1])
		}
		if infos[0].TableID != infos[1].TableID || infos[0].TableID != 2 || creations != 2 {
			t.Fatalf("processes use tables %d and %d after %d creations; want both 2", infos[0].TableID, infos[1].TableID, creations)
		}
	}
}

// TestAppendFollowsATableCreatedAgain: a process holding the id of a
// table another process dropped and created again appends to the new
// one, without an error.
func TestAppendFollowsATableCreatedAgain(t *testing.T) {
	f := newFake()
	tbl := newTable(t, f.as("a"), 1, nil)
	ctx := context.Background()
	if _, err := tbl.Info(ctx); err != nil {
		t.Fatal(err)
	}
	other := f.as("b")
	p := fluss.TablePath{Database: "ferry_system", Table: "test"}
	if err := other.DropTable(ctx, p, false); err != nil {
		t.Fatal(err)
	}
	if err := other.CreateTable(ctx, p, fluss.TableDescriptor{Schema: schemaOf(columns), NumBuckets: 1}, false); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Append(ctx, 0, record(t, tbl)); err != nil {
		t.Fatal(err)
	}
	if _, _, produced := f.snapshot(); fmt.Sprint(produced) != "[2]" {
		t.Fatalf("appended to %v, want [2]", produced)
	}
}

// TestExistingTableMustMatch: a table with other columns, or another
// bucket count where that matters, is refused.
func TestExistingTableMustMatch(t *testing.T) {
	for _, tc := range []struct {
		cols       []types.Field
		buckets    int
		anyBuckets bool
		ok         bool
	}{
		{columns, 1, false, true},
		{columns, 3, false, false},
		{columns, 3, true, true},
		{columns[:1], 1, false, false},
		{[]types.Field{columns[0], {Name: "m", Type: columns[1].Type}}, 1, false, false},
		{[]types.Field{columns[0], {Name: "n", Type: types.DataType{Root: types.Int}}}, 1, false, false},
	} {
		f := newFake()
		f.as("before").CreateTable(context.Background(), fluss.TablePath{Database: "ferry_system", Table: "test"},
			fluss.TableDescriptor{Schema: schemaOf(tc.cols), NumBuckets: tc.buckets}, false)
		tbl, err := New(f.as("a"), Spec{Path: path, Columns: columns, Buckets: 1, AnyBuckets: tc.anyBuckets}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tbl.Info(context.Background())
		if (err == nil) != tc.ok {
			t.Errorf("%v in %d buckets (any: %v): err = %v", tc.cols, tc.buckets, tc.anyBuckets, err)
		}
	}
}

func TestNewWantsDatabaseDotTable(t *testing.T) {
	for _, p := range []string{"", "t", ".t", "d.", "d.t.x"} {
		if _, err := New(nil, Spec{Path: p, Columns: columns, Buckets: 1}, Options{}); err == nil {
			t.Errorf("New(%q) accepted", p)
		}
	}
}

// TestPreparerRetriesUntilFlussAnswers: the preparation starts while
// Fluss is down and creates the table once it answers; Shutdown stops a
// preparation that cannot succeed.
func TestPreparerRetriesUntilFlussAnswers(t *testing.T) {
	f := newFake()
	f.unreachable = 1
	tbl := newTable(t, f.as("a"), 1, nil)
	p := NewPreparer(tbl)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for tbl.cached() == nil {
		if time.Now().After(deadline) {
			t.Fatal("table not prepared within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	down := newFake()
	down.unreachable = 1 << 30
	p = NewPreparer(newTable(t, down.as("a"), 1, nil))
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown while Fluss is down: %v", err)
	}
}

func schemaOf(fields []types.Field) types.Schema {
	cols := make([]types.Column, len(fields))
	for i, c := range fields {
		cols[i] = types.Column{Name: c.Name, Type: c.Type}
	}
	return types.Schema{Columns: cols}
}
