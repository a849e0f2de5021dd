// Package systable keeps the Fluss tables Ferry owns (ferry_system.* by
// default: consumer group offsets, the Schema Registry's log, the
// transaction journal). It makes sure such a table exists and is usable,
// creating it when missing and creating it again when Fluss lost the
// creation, and appends to and reads it as a log.
package systable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// Fluss is what a system table needs from a Fluss client; *fluss.Client
// has it.
type Fluss interface {
	GetTableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	CreateDatabase(ctx context.Context, name string, d fluss.DatabaseDescriptor, ignoreIfExists bool) error
	CreateTable(ctx context.Context, path fluss.TablePath, d fluss.TableDescriptor, ignoreIfExists bool) error
	DropTable(ctx context.Context, path fluss.TablePath, ignoreIfNotExists bool) error
	RefreshTableRoute(ctx context.Context, path fluss.TablePath) (*fluss.TableRoute, error)
	ProduceLog(ctx context.Context, tableID int64, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.BucketResult, error)
	FetchLog(ctx context.Context, tableID int64, buckets []fluss.FetchBucket, opt fluss.FetchOptions) ([]fluss.FetchResult, error)
	ListOffsets(ctx context.Context, tableID int64, partitionID *int64, buckets []int32, spec fluss.OffsetSpec) (map[int32]int64, error)
}

// Spec describes a system table.
type Spec struct {
	// Path is "database.table".
	Path string
	// Columns are the table's columns; an existing table must have them,
	// in this order.
	Columns []types.Field
	// Buckets is the bucket count of a table created; an existing table
	// must have as many unless AnyBuckets.
	Buckets    int
	AnyBuckets bool
	Comment    string
	// Properties are Fluss table options, e.g. table.log.ttl.
	Properties map[string]string
}

// Options tune a Table. The zero value is what a service wants.
type Options struct {
	Logger        *slog.Logger         // nil: slog.Default()
	MeterProvider metric.MeterProvider // nil: OpenTelemetry's global one
	// RetryFor bounds the retries of one append or read; 0: 10 s.
	RetryFor time.Duration
	// FetchBytes bounds one read of a bucket; 0: 4 MiB.
	FetchBytes int32
	// LeadersWithin replaces NewTableLeadersWithin (tests).
	LeadersWithin time.Duration
}

// NewTableLeadersWithin is how long a table this process created may go
// without a leader in any bucket before it is dropped and created again.
// Fluss's coordinator elects the leaders of all buckets when it handles
// the creation: within a second normally, past 10 s on a loaded two-core
// CI machine. One that has not in 30 s has, as seen in CI with Fluss
// 0.9.1, lost the creation (the table is registered, its buckets never
// get a leader) and never will: apache/fluss#1018, the coordinator's
// ZooKeeper watch missing the table's creation, a race that a new
// creation runs again.
const NewTableLeadersWithin = 30 * time.Second

// Creations bounds how often one process creates a table that stays
// without leaders: the first creation and two more.
const Creations = 3

// EnsureWithin is long enough for every creation to be waited for, for a
// caller that must not give up before (a service's start).
const EnsureWithin = Creations*NewTableLeadersWithin + 30*time.Second

// Table is one system table. Its methods are safe for concurrent use.
type Table struct {
	fluss  Fluss
	path   fluss.TablePath
	spec   Spec
	schema *arrow.Schema
	log    *slog.Logger
	// recreated counts tables dropped to be created again.
	recreated metric.Int64Counter

	retryFor      time.Duration
	fetchBytes    int32
	leadersWithin time.Duration // for a table this process created
	leadersWait   time.Duration // for any table, before calls go ahead

	// lock is held while the table is found or created; a channel, so
	// that a caller waiting for it can give up with its context.
	lock chan struct{}

	mu   sync.Mutex
	info *fluss.TableInfo // nil until found or created, and checked

	// Under lock: the id of the table this process created and has not
	// yet seen led (noTable: none; Fluss's ids start at 0), when it was
	// created, and how many tables it created.
	created   int64
	createdAt time.Time
	creations int
}

// New returns the table spec describes. Nothing is asked of Fluss until
// the table is first needed (or Prepare).
func New(f Fluss, spec Spec, opts Options) (*Table, error) {
	db, name, ok := strings.Cut(spec.Path, ".")
	if !ok || db == "" || name == "" || strings.Contains(name, ".") {
		return nil, fmt.Errorf("table %q is not database.table", spec.Path)
	}
	if spec.Buckets <= 0 {
		return nil, fmt.Errorf("table %s: %d buckets", spec.Path, spec.Buckets)
	}
	schema, err := types.ArrowSchema(spec.Columns)
	if err != nil {
		return nil, err
	}
	t := &Table{fluss: f, path: fluss.TablePath{Database: db, Table: name}, spec: spec, schema: schema,
		log: opts.Logger, retryFor: opts.RetryFor, fetchBytes: opts.FetchBytes, leadersWithin: opts.LeadersWithin,
		lock: make(chan struct{}, 1), created: noTable}
	if t.log == nil {
		t.log = slog.Default()
	}
	if t.retryFor <= 0 {
		t.retryFor = 10 * time.Second
	}
	if t.fetchBytes <= 0 {
		t.fetchBytes = 4 << 20
	}
	if t.leadersWithin <= 0 {
		t.leadersWithin = NewTableLeadersWithin
	}
	// Twice a new table's bound: a table another process created may be
	// dropped and created again by it once meanwhile.
	t.leadersWait = 2 * t.leadersWithin
	mp := opts.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if t.recreated, err = mp.Meter("github.com/ferrygw/ferry/services/fluss/systable").Int64Counter(
		"ferry.system_table.recreated", metric.WithUnit("{table}"),
		metric.WithDescription("Ferry's own Fluss tables dropped and created again because no bucket got a leader, by table")); err != nil {
		return nil, err
	}
	return t, nil
}

// Path is the table's path.
func (t *Table) Path() fluss.TablePath { return t.path }

// Schema is the Arrow schema of the table's rows.
func (t *Table) Schema() *arrow.Schema { return t.schema }

// Info returns the table's info, finding or creating the table (and its
// database) the first time, or the first time after it was found gone.
// The table is not a topic: kafka.enabled=false keeps it out of
// catalogsvc's listing whatever its -expose.
func (t *Table) Info(ctx context.Context) (*fluss.TableInfo, error) {
	if info := t.cached(); info != nil {
		return info, nil
	}
	select {
	case t.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("table %s: %w", t.path, context.Cause(ctx))
	}
	defer func() { <-t.lock }()
	if info := t.cached(); info != nil {
		return info, nil
	}
	info, err := t.ensure(ctx)
	if err != nil {
		return nil, err
	}
	if err := t.check(info); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.info = info
	t.mu.Unlock()
	return info, nil
}

func (t *Table) cached() *fluss.TableInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.info
}

// forgetOn drops the table info when err says the table is gone, so that
// the next call finds or creates it again. It reports whether it did.
func (t *Table) forgetOn(err error) bool {
	if fluss.CodeOf(err) != fluss.CodeTableNotExist && !errors.Is(err, fluss.ErrUnknownTable) {
		return false
	}
	t.mu.Lock()
	t.info = nil
	t.mu.Unlock()
	return true
}

// ensure finds the table, creating it when missing. A table this process
// created whose buckets get no leader within leadersWithin is dropped and
// created again (up to Creations tables); any other table is waited for
// and never dropped: it may hold data, and Fluss may just be electing.
func (t *Table) ensure(ctx context.Context) (*fluss.TableInfo, error) {
	for pass := 0; ; pass++ {
		if pass > 6*Creations {
			// Each pass creates, drops or sees a table come or go: this
			// many means something else keeps changing it.
			return nil, fmt.Errorf("table %s: keeps changing while it is being found or created", t.path)
		}
		info, err := t.fluss.GetTableInfo(ctx, t.path)
		if c := fluss.CodeOf(err); c == fluss.CodeTableNotExist || c == fluss.CodeDatabaseNotExist {
			if err := t.create(ctx); err != nil {
				return nil, err
			}
			continue // ours, or the one another process created first
		}
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.path, err)
		}
		if info.TableID != t.created {
			t.created = noTable
			led, total, err := t.leaders(ctx, info.TableID, time.Now().Add(t.leadersWait))
			if errors.Is(err, errReplaced) {
				continue
			}
			if led < total || err != nil {
				// Calls retry, and report, as for any missing leader.
				t.log.Warn("system table: buckets without a leader; not created by this process, so kept", "table", t.path.String(),
					"table_id", info.TableID, "buckets", total, "led", led, "err", err)
			}
			return info, nil
		}
		led, total, err := t.leaders(ctx, info.TableID, t.createdAt.Add(t.leadersWithin))
		switch {
		case errors.Is(err, errReplaced):
			t.created = noTable
			continue
		case ctx.Err() != nil:
			// t.created stays: the next call goes on waiting for it.
			return nil, fmt.Errorf("table %s: waiting for its buckets' leaders: %w", t.path, context.Cause(ctx))
		case led == total && total > 0:
			t.created = noTable
			return info, nil
		case led > 0:
			// Fluss handled the creation and is electing: not lost.
			t.created = noTable
			continue
		case total == 0:
			// Its buckets were never seen: no reason to drop it yet.
			return nil, fmt.Errorf("table %s: waiting for its buckets' leaders: %w", t.path, err)
		case t.creations >= Creations:
			t.created = noTable
			t.log.Error("system table: created again and again, its buckets never got a leader; check the Fluss coordinator",
				"table", t.path.String(), "table_id", info.TableID, "creations", t.creations)
			return info, nil
		}
		if err := t.drop(ctx, info.TableID, total); err != nil {
			return nil, err
		}
	}
}

// create creates the database and the table. Only a table whose creation
// succeeded here is this process's to drop: when another process created
// it first, created stays noTable.
func (t *Table) create(ctx context.Context) error {
	if err := t.fluss.CreateDatabase(ctx, t.path.Database, fluss.DatabaseDescriptor{Comment: "Ferry's own tables"}, true); err != nil {
		return fmt.Errorf("create database %s: %w", t.path.Database, err)
	}
	cols := make([]types.Column, len(t.spec.Columns))
	for i, c := range t.spec.Columns {
		cols[i] = types.Column{Name: c.Name, Type: c.Type}
	}
	err := t.fluss.CreateTable(ctx, t.path, fluss.TableDescriptor{
		Schema:           types.Schema{Columns: cols},
		Comment:          t.spec.Comment,
		NumBuckets:       t.spec.Buckets,
		Properties:       t.spec.Properties,
		CustomProperties: map[string]string{"kafka.enabled": "false"},
	}, false)
	if fluss.CodeOf(err) == fluss.CodeTableAlreadyExist {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create table %s: %w", t.path, err)
	}
	// Nobody else drops it: the id at the path is the one just created.
	info, err := t.fluss.GetTableInfo(ctx, t.path)
	if err != nil {
		return fmt.Errorf("table %s: %w", t.path, err)
	}
	t.created, t.createdAt = info.TableID, time.Now()
	t.creations++
	t.log.Info("system table created", "table", t.path.String(), "table_id", info.TableID, "buckets", t.spec.Buckets)
	return nil
}

// drop drops the table this process created, id, whose buckets got no
// leader: nobody can have written to it.
func (t *Table) drop(ctx context.Context, id int64, buckets int) error {
	t.log.Warn("system table: no bucket got a leader; dropping it to create it again", "table", t.path.String(), "table_id", id,
		"buckets", buckets, "waited", time.Since(t.createdAt).Round(time.Millisecond), "creation", t.creations, "of", Creations)
	err := fluss.RetryWithin(ctx, t.retryFor, func() error { return t.fluss.DropTable(ctx, t.path, true) })
	if err != nil {
		// t.created stays: the next call tries again.
		return fmt.Errorf("drop leaderless table %s: %w", t.path, err)
	}
	t.created = noTable
	t.recreated.Add(ctx, 1, metric.WithAttributes(attribute.String("table", t.path.String())))
	return nil
}

// noTable is no table id.
const noTable int64 = -1

// errReplaced is the path naming another table than the one waited for.
var errReplaced = errors.New("the path names another table now")

// leaders waits until every bucket of table id has a leader, until passes
// or ctx ends, and returns how many buckets had one the last time it
// looked, of how many. A route failure that lasts is returned with the
// last counts; errReplaced when id is gone from the path.
func (t *Table) leaders(ctx context.Context, id int64, until time.Time) (led, total int, err error) {
	pause := 20 * time.Millisecond
	for {
		var r *fluss.TableRoute
		r, err = t.fluss.RefreshTableRoute(ctx, t.path)
		switch {
		case fluss.CodeOf(err) == fluss.CodeTableNotExist, err == nil && r.TableID != id:
			return led, total, errReplaced
		case err == nil:
			led, total = 0, len(r.Buckets)
			for _, b := range r.Buckets {
				if b.Leader != fluss.NoLeader {
					led++
				}
			}
			if led == total && total > 0 {
				return led, total, nil
			}
		}
		// The last look is at until.
		wait := min(pause, time.Until(until))
		if wait <= 0 {
			return led, total, err
		}
		select {
		case <-ctx.Done():
			return led, total, ctx.Err()
		case <-time.After(wait):
		}
		pause = min(2*pause, time.Second)
	}
}

// check refuses a table that is not the one Ferry would create.
func (t *Table) check(info *fluss.TableInfo) error {
	got := info.Schema.Fields()
	if len(got) != len(t.spec.Columns) {
		return fmt.Errorf("table %s has %d columns, not Ferry's %d", t.path, len(got), len(t.spec.Columns))
	}
	if !t.spec.AnyBuckets && info.NumBuckets != t.spec.Buckets {
		return fmt.Errorf("table %s has %d buckets, not Ferry's %d", t.path, info.NumBuckets, t.spec.Buckets)
	}
	for i, c := range t.spec.Columns {
		if got[i].Name != c.Name || got[i].Type.Root != c.Type.Root {
			return fmt.Errorf("table %s column %d is %s %s, not %s %s", t.path, i, got[i].Name, got[i].Type, c.Name, c.Type)
		}
	}
	return nil
}
