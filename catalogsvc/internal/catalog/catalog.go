// Package catalog keeps the set of Kafka topics in memory: it reads the
// tables of Fluss periodically and on demand, maps each through package
// mapping, and answers topic lookups from the last good state, so that a
// Fluss outage does not take exposed topics away.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferrygw/ferry/catalogsvc/internal/mapping"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Fluss is what the catalog reads from Fluss: the coordinator's table
// metadata. Implementations wrap ErrNotFound when a database or table does
// not exist, which happens when one is dropped during a refresh.
type Fluss interface {
	ListDatabases(ctx context.Context) ([]string, error)
	ListTables(ctx context.Context, database string) ([]string, error)
	GetTable(ctx context.Context, database, table string) (mapping.Table, error)
	// ListPartitions lists a partitioned table's partitions.
	ListPartitions(ctx context.Context, database, table string) ([]mapping.Partition, error)
}

// ErrNotFound marks a database or table that does not exist.
var ErrNotFound = errors.New("not found")

// TableError is returned by Fluss.GetTable when the coordinator answered
// but the table's metadata cannot be used (e.g. a type this build does not
// know). Unlike a transport failure it concerns that table only: the
// refresh goes on and the table is refused with the cause.
type TableError struct{ Err error }

func (e *TableError) Error() string { return "unreadable table metadata: " + e.Err.Error() }
func (e *TableError) Unwrap() error { return e.Err }

// ErrNotLoaded is returned while the catalog has never read Fluss
// successfully; it wraps the last refresh error. Callers should retry.
var ErrNotLoaded = errors.New("catalog has not loaded the tables from Fluss yet")

// Config tunes the catalog.
type Config struct {
	// RefreshInterval is how often the whole catalog is read again.
	RefreshInterval time.Duration
	// RefreshTimeout bounds one refresh.
	RefreshTimeout time.Duration
	// MinRefreshGap is the least time between two refreshes triggered by
	// lookups of unknown topics, so that clients asking for topics that do
	// not exist cannot turn the catalog into a load generator for Fluss.
	MinRefreshGap time.Duration
	// Databases limits the scan to these databases; empty scans all.
	Databases []string
	// Concurrency bounds the GetTable calls in flight during a refresh.
	Concurrency int
	Mapping     mapping.Options
}

// Validate names the bad field.
func (c Config) Validate() error {
	switch {
	case c.RefreshInterval <= 0:
		return fmt.Errorf("catalog: RefreshInterval must be positive, got %s", c.RefreshInterval)
	case c.RefreshTimeout <= 0:
		return fmt.Errorf("catalog: RefreshTimeout must be positive, got %s", c.RefreshTimeout)
	case c.MinRefreshGap < 0:
		return fmt.Errorf("catalog: MinRefreshGap must not be negative, got %s", c.MinRefreshGap)
	case c.Concurrency < 1:
		return fmt.Errorf("catalog: Concurrency must be at least 1, got %d", c.Concurrency)
	case c.Mapping.ClusterID == "":
		return errors.New("catalog: Mapping.ClusterID is empty")
	}
	for _, db := range c.Databases {
		if err := mapping.ValidateFlussName(db); err != nil {
			return fmt.Errorf("catalog: Databases: %w", err)
		}
	}
	return nil
}

// Entry is what the catalog knows under one topic name.
type Entry struct {
	// Mapping is set when the topic is exposed.
	Mapping *catalogv1.TopicMapping
	// Refusal is set when a table would have this name but cannot be a
	// topic; its Kind is always mapping.Incompatible.
	Refusal *mapping.Refusal
}

// Snapshot is one consistent view of the topics; it is never modified
// after it is published.
type Snapshot struct {
	LoadedAt time.Time
	byTopic  map[string]Entry
	exposed  []*catalogv1.TopicMapping // sorted by topic name
}

// Lookup returns the entry for topic.
func (s *Snapshot) Lookup(topic string) (Entry, bool) {
	e, ok := s.byTopic[topic]
	return e, ok
}

// Topics returns every exposed topic, sorted by name. The slice and the
// mappings are shared: callers must not modify them.
func (s *Snapshot) Topics() []*catalogv1.TopicMapping { return s.exposed }

// Result is the answer for one requested topic.
type Result struct {
	Topic   string
	Mapping *catalogv1.TopicMapping
	// Code is a Kafka error code (kerr), 0 when Mapping is set:
	// UNKNOWN_TOPIC_OR_PARTITION (retriable: clients refresh metadata),
	// LEADER_NOT_AVAILABLE (retriable: the catalog has no state yet) or
	// INVALID_TOPIC_EXCEPTION (the name or table cannot be a topic).
	Code    int16
	Message string
}

// Catalog is the in-memory topic catalog. Start launches the refresh loop,
// Shutdown stops it and waits for any refresh in flight.
type Catalog struct {
	fluss  Fluss
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer
	meter  metric.Meter
	now    func() time.Time

	refreshes metric.Int64Counter     // by result and kind
	duration  metric.Float64Histogram // seconds per refresh

	mu        sync.Mutex
	snap      *Snapshot
	flight    *flight
	lastStart time.Time                // of the last refresh, for MinRefreshGap
	lastErr   error                    // of the last refresh, nil after a success
	tables    map[string]mapping.Table // by path, as last read
	reported  map[string]report
	runCtx    context.Context // nil until Start
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// flight is one refresh in progress; everyone who needs a refresh while it
// runs waits for it instead of starting another.
type flight struct {
	// full: every table is read. An on-demand refresh only reads tables
	// it has not seen (see readTables).
	full bool
	done chan struct{}
	err  error
}

// Option customizes a Catalog.
type Option func(*Catalog)

// WithTracerProvider sets where refresh spans go (default: none).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *Catalog) { c.tracer = tp.Tracer("github.com/ferrygw/ferry/catalogsvc/internal/catalog") }
}

// WithMeterProvider sets where the catalog's metrics go (default: none):
// ferry.catalog.refreshes, ferry.catalog.refresh.duration and the
// ferry.catalog.topics gauge.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *Catalog) { c.meter = mp.Meter("github.com/ferrygw/ferry/catalogsvc/internal/catalog") }
}

// WithClock replaces time.Now, for tests of MinRefreshGap.
func WithClock(now func() time.Time) Option { return func(c *Catalog) { c.now = now } }

// New builds a catalog reading from fluss. It reads nothing until Start.
func New(fluss Fluss, cfg Config, log *slog.Logger, opts ...Option) (*Catalog, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Catalog{
		fluss:    fluss,
		cfg:      cfg,
		log:      log,
		tracer:   noop.NewTracerProvider().Tracer(""),
		meter:    metricnoop.NewMeterProvider().Meter(""),
		now:      time.Now,
		reported: map[string]report{},
	}
	for _, o := range opts {
		o(c)
	}
	if err := c.initMetrics(); err != nil {
		return nil, fmt.Errorf("catalog: metrics: %w", err)
	}
	return c, nil
}

func (c *Catalog) initMetrics() (err error) {
	if c.refreshes, err = c.meter.Int64Counter("ferry.catalog.refreshes",
		metric.WithDescription("catalog reads from Fluss, by result (ok, error) and kind (full, incremental)")); err != nil {
		return err
	}
	if c.duration, err = c.meter.Float64Histogram("ferry.catalog.refresh.duration", metric.WithUnit("s"),
		metric.WithDescription("time one catalog read from Fluss took")); err != nil {
		return err
	}
	_, err = c.meter.Int64ObservableGauge("ferry.catalog.topics",
		metric.WithDescription("exposed topics in the current state (absent before the first load)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if snap := c.Snapshot(); snap != nil {
				o.Observe(int64(len(snap.exposed)))
			}
			return nil
		}))
	return err
}

// Start launches the refresh loop, which loads the catalog right away. It
// does not wait for the first load: until it succeeds, lookups report
// retriable errors.
func (c *Catalog) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runCtx != nil {
		return errors.New("catalog: already started")
	}
	// The loop outlives Start's ctx (a startup context); Shutdown ends it.
	c.runCtx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c.wg.Add(1)
	go c.loop()
	return nil
}

// Shutdown stops the refresh loop and waits for it and any refresh in
// flight, or until ctx ends.
func (c *Catalog) Shutdown(ctx context.Context) error {
	// Cancelling under the lock orders it before any startLocked that
	// would otherwise add to the wait group while Wait runs.
	c.mu.Lock()
	cancel := c.cancel
	if cancel != nil {
		cancel()
	}
	c.mu.Unlock()
	if cancel == nil {
		return nil
	}
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("catalog: refresh still running at shutdown: %w", ctx.Err())
	}
}

// loop refreshes every RefreshInterval. Until the first success it retries
// sooner, doubling from MinRefreshGap, so that a catalog started before
// Fluss comes up serves topics as soon as Fluss does.
func (c *Catalog) loop() {
	defer c.wg.Done()
	retry := max(c.cfg.MinRefreshGap, 100*time.Millisecond)
	for {
		f := c.startRefresh("periodic")
		select {
		case <-f.done:
		case <-c.runCtx.Done():
			return
		}
		if !f.full {
			// Joined an on-demand refresh, which skips known tables: run
			// the full one this tick is for, so that changes to existing
			// tables still show within one interval.
			f = c.startRefresh("periodic")
			select {
			case <-f.done:
			case <-c.runCtx.Done():
				return
			}
		}
		wait := c.cfg.RefreshInterval
		if c.Snapshot() == nil {
			wait = min(retry, c.cfg.RefreshInterval)
			// Capped, so that a long outage cannot overflow it.
			retry = min(2*retry, c.cfg.RefreshInterval)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.runCtx.Done():
			t.Stop()
			return
		}
	}
}

// Snapshot returns the current state, nil if the catalog never loaded.
func (c *Catalog) Snapshot() *Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap
}

// Refresh reads every table from Fluss now (after a refresh already in
// flight, if any, which it joins when that one is full) and waits for it,
// or for ctx.
func (c *Catalog) Refresh(ctx context.Context) error {
	for {
		f := c.startRefresh("requested")
		select {
		case <-f.done:
			if f.full {
				return f.err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// refreshOnDemand is Refresh for lookups of unknown topics: it joins a
// refresh in flight, starts one unless the last started less than
// MinRefreshGap ago, and waits for it or ctx. What it starts is
// incremental: new tables are read, known ones are taken from the last
// full read, so that lookups of names that do not exist cost Fluss only
// the listing calls. Changes to known tables are the periodic refresh's
// job, or, with full, this one's: a caller that found a known table gone
// (recreated under the same name) needs every table read again.
func (c *Catalog) refreshOnDemand(ctx context.Context, full bool) {
	span := trace.SpanFromContext(ctx)
	for {
		c.mu.Lock()
		f := c.flight
		joined := f != nil
		switch {
		case joined:
			span.AddEvent("catalog refresh joined")
		case !c.lastStart.IsZero() && c.now().Sub(c.lastStart) < c.cfg.MinRefreshGap:
			c.mu.Unlock()
			span.AddEvent("catalog refresh skipped: rate-limited")
			return
		default:
			f = c.startLocked("on-demand", full)
			span.AddEvent("catalog refresh started")
		}
		c.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return
		}
		// An incremental refresh joined does not reread known tables.
		if !joined || f.full || !full {
			return
		}
	}
}

func (c *Catalog) startRefresh(reason string) *flight {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flight != nil {
		return c.flight
	}
	return c.startLocked(reason, true)
}

// startLocked launches a refresh owned by the catalog, not by the caller:
// a caller that gives up does not cancel the refresh others wait for.
func (c *Catalog) startLocked(reason string, full bool) *flight {
	f := &flight{full: full, done: make(chan struct{})}
	if c.runCtx == nil || c.runCtx.Err() != nil {
		f.err = errors.New("catalog: not running")
		close(f.done)
		return f
	}
	c.flight = f
	c.lastStart = c.now()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.runCtx, c.cfg.RefreshTimeout)
		defer cancel()
		err := c.refresh(ctx, reason, full)
		c.mu.Lock()
		c.flight = nil
		f.err = err
		c.mu.Unlock()
		close(f.done)
	}()
	return f
}

// refresh reads every table, maps it and publishes the new snapshot. On
// any error other than a database or table vanishing meanwhile, it keeps
// the previous snapshot: a partial read would drop topics that exist.
func (c *Catalog) refresh(ctx context.Context, reason string, full bool) (err error) {
	ctx, span := c.tracer.Start(ctx, "catalog.refresh", trace.WithAttributes(
		attribute.String("ferry.refresh.reason", reason), attribute.Bool("ferry.refresh.full", full)))
	start := c.now()
	defer func() {
		kind, result := "incremental", "ok"
		if full {
			kind = "full"
		}
		if err != nil {
			result = "error"
		}
		attrs := metric.WithAttributes(attribute.String("result", result), attribute.String("kind", kind))
		c.refreshes.Add(ctx, 1, attrs)
		c.duration.Record(ctx, c.now().Sub(start).Seconds(), attrs)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()

	var known map[string]mapping.Table
	if !full {
		c.mu.Lock()
		known = c.tables
		c.mu.Unlock()
	}
	tables, unreadable, missingDBs, err := c.readTables(ctx, known)
	if err == nil {
		err = c.readPartitions(ctx, tables)
	}
	if err != nil {
		c.refreshFailed(err)
		return err
	}
	snap, reports := build(tables, unreadable, c.cfg.Mapping, start)
	for _, db := range missingDBs {
		reports["database "+db] = report{level: slog.LevelWarn, msg: "configured database does not exist in Fluss",
			attrs: []any{"database", db}}
	}
	span.SetAttributes(attribute.Int("ferry.tables", len(tables)), attribute.Int("ferry.topics", len(snap.exposed)))

	c.mu.Lock()
	recovered := c.lastErr != nil
	c.snap = snap
	// The tables as last read, for the next incremental refresh. Tables no
	// longer listed drop out, so one dropped and created again after this
	// is read afresh.
	c.tables = make(map[string]mapping.Table, len(tables))
	for _, t := range tables {
		c.tables[t.Path()] = t
	}
	c.lastErr = nil
	c.logChanges(reports)
	c.mu.Unlock()
	if recovered {
		c.log.Info("catalog refresh succeeded again", "topics", len(snap.exposed), "tables", len(tables))
	}
	c.log.Debug("catalog refreshed", "reason", reason, "tables", len(tables), "topics", len(snap.exposed),
		"took", c.now().Sub(start))
	return nil
}

func (c *Catalog) refreshFailed(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// One warning per distinct failure: a Fluss outage would otherwise log
	// every refresh interval for as long as it lasts.
	level := slog.LevelWarn
	if c.lastErr != nil && c.lastErr.Error() == err.Error() {
		level = slog.LevelDebug
	}
	c.lastErr = err
	if c.snap != nil {
		c.log.Log(context.Background(), level, "catalog refresh failed; serving the last good state",
			"err", err, "state_age", c.now().Sub(c.snap.LoadedAt).Round(time.Millisecond))
	} else {
		c.log.Log(context.Background(), level, "catalog refresh failed; no topics until Fluss answers", "err", err)
	}
}

// readTables lists the databases (or takes the configured ones), their
// tables, and reads every table with bounded concurrency; tables in known
// are taken from there instead of being read.
func (c *Catalog) readTables(ctx context.Context, known map[string]mapping.Table) (tables []mapping.Table, unreadable []unreadableTable, missingDBs []string, err error) {
	dbs := c.cfg.Databases
	if len(dbs) == 0 {
		if dbs, err = c.fluss.ListDatabases(ctx); err != nil {
			return nil, nil, nil, fmt.Errorf("list databases: %w", err)
		}
	}
	type path struct{ db, table string }
	var paths []path
	for _, db := range dbs {
		names, err := c.fluss.ListTables(ctx, db)
		if errors.Is(err, ErrNotFound) {
			if len(c.cfg.Databases) > 0 {
				missingDBs = append(missingDBs, db)
			}
			continue // dropped since it was listed
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("list tables of database %s: %w", db, err)
		}
		for _, n := range names {
			paths = append(paths, path{db, n})
		}
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([]*mapping.Table, len(paths))
	failures := make([]error, len(paths))
	sem := make(chan struct{}, c.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, p := range paths {
		if t, ok := known[p.db+"."+p.table]; ok {
			results[i] = &t
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t, err := c.fluss.GetTable(ctx, p.db, p.table)
			var te *TableError
			switch {
			case errors.Is(err, ErrNotFound):
				// Dropped since it was listed.
			case errors.As(err, &te):
				failures[i] = te
			case err != nil:
				cancel(fmt.Errorf("read table %s.%s: %w", p.db, p.table, err))
			default:
				results[i] = &t
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, nil, nil, err
	}
	for i, t := range results {
		if t != nil {
			tables = append(tables, *t)
		}
		if failures[i] != nil {
			unreadable = append(unreadable, unreadableTable{paths[i].db, paths[i].table, failures[i]})
		}
	}
	return tables, unreadable, missingDBs, nil
}

// readPartitions lists the partitions of every partitioned table that is a
// topic, on every refresh, incremental ones included: creating or dropping
// a partition changes nothing else about the table, and a consumer naming
// a new partition's topic must find it at its first lookup.
func (c *Catalog) readPartitions(ctx context.Context, tables []mapping.Table) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, c.cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range tables {
		t := &tables[i]
		t.Partitions = nil
		if len(t.PartitionKeys) == 0 {
			continue
		}
		if m, r := mapping.Resolve(*t, c.cfg.Mapping); m == nil {
			c.log.Debug("partitions not listed", "table", t.Path(), "reason", r.Error())
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			parts, err := c.fluss.ListPartitions(ctx, t.Database, t.Name)
			switch {
			case errors.Is(err, ErrNotFound):
				// Dropped since it was read.
			case err != nil:
				cancel(fmt.Errorf("list partitions of %s: %w", t.Path(), err))
			default:
				t.Partitions = parts
				c.log.Debug("partitions listed", "table", t.Path(), "partitions", len(parts))
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// unreadableTable is a table GetTable returned a *TableError for.
type unreadableTable struct {
	db, table string
	err       error
}

// report is one line the catalog logs once per change of msg/attrs.
type report struct {
	level slog.Level
	msg   string
	attrs []any
	// sig identifies the state that was reported; a change of it logs again.
	sig string
}

// build maps every table and resolves name collisions into a snapshot,
// with one report per table.
func build(tables []mapping.Table, unreadable []unreadableTable, opts mapping.Options, now time.Time) (*Snapshot, map[string]report) {
	slices.SortFunc(tables, func(a, b mapping.Table) int { return strings.Compare(a.Path(), b.Path()) })
	type resolved struct {
		table   mapping.Table
		mapping *catalogv1.TopicMapping
		refusal *mapping.Refusal
	}
	all := make([]resolved, len(tables))
	claims := map[string][]int{} // topic name → indexes of tables that map to it
	for i, t := range tables {
		m, r := mapping.Resolve(t, opts)
		all[i] = resolved{t, m, r}
		if m != nil {
			claims[m.Topic] = append(claims[m.Topic], i)
		}
	}
	// Two tables under one name: neither is exposed, since picking one
	// would silently send a producer's records to whichever wins.
	for topic, idx := range claims {
		if len(idx) < 2 {
			continue
		}
		paths := make([]string, len(idx))
		for j, i := range idx {
			paths[j] = all[i].table.Path()
		}
		reason := fmt.Sprintf("topic name %s is claimed by tables %s; none of them is exposed until %s tells them apart",
			topic, strings.Join(paths, ", "), mapping.PropTopic)
		for _, i := range idx {
			all[i].mapping = nil
			all[i].refusal = &mapping.Refusal{Kind: mapping.Incompatible, Topic: topic, Reasons: []string{reason}}
		}
	}

	snap := &Snapshot{LoadedAt: now, byTopic: map[string]Entry{}}
	reports := make(map[string]report, len(all)+len(unreadable))
	for _, u := range unreadable {
		// Whether it asked to be a topic is unknown; a lookup of its
		// default name gets the cause rather than a misleading "unknown".
		path := u.db + "." + u.table
		topic := mapping.DefaultTopicName(u.db, u.table)
		rf := &mapping.Refusal{Kind: mapping.Incompatible, Topic: topic, Reasons: []string{u.err.Error()}}
		if mapping.ValidateTopicName(topic) == nil {
			snap.byTopic[topic] = Entry{Refusal: rf}
		}
		reports[path] = report{level: slog.LevelWarn, msg: "table not exposed: cannot read its metadata",
			sig: "unreadable " + u.err.Error(), attrs: []any{"table", path, "reason", u.err.Error()}}
	}
	for _, r := range all {
		path := r.table.Path()
		if r.mapping != nil {
			snap.byTopic[r.mapping.Topic] = Entry{Mapping: r.mapping}
			snap.exposed = append(snap.exposed, r.mapping)
			reports[path] = report{level: slog.LevelInfo, msg: "topic exposed", sig: "exposed " + r.mapping.MappingId,
				attrs: []any{"topic", r.mapping.Topic, "table", path, "table_id", r.mapping.TableId,
					"schema_id", r.mapping.SchemaId, "partitions", r.mapping.PartitionCount,
					"value_format", formatName(r.mapping.Mapping.ValueFormat), "mapping_id", r.mapping.MappingId}}
			continue
		}
		rf := r.refusal
		// A refused table answers for its name only if no exposed topic
		// has it: exposed entries overwrite refusals, never the reverse.
		if rf.Kind == mapping.Incompatible && rf.Topic != "" {
			if _, taken := snap.byTopic[rf.Topic]; !taken {
				snap.byTopic[rf.Topic] = Entry{Refusal: rf}
			}
		}
		level, msg := slog.LevelWarn, "table not exposed: incompatible with the Kafka mapping"
		if rf.Kind == mapping.Hidden {
			level, msg = slog.LevelInfo, "table not exposed"
		}
		reports[path] = report{level: level, msg: msg, sig: fmt.Sprintf("%s %d %d %s", rf.Kind, r.table.TableID, r.table.SchemaID, rf.Error()),
			attrs: []any{"table", path, "table_id", r.table.TableID, "topic", rf.Topic, "reason", rf.Error()}}
	}
	// Each partition of an exposed partitioned table is a topic of its own.
	var parts []partitionTopic
	for _, r := range all {
		if r.mapping == nil {
			continue
		}
		for _, p := range r.table.Partitions {
			pm, err := mapping.PartitionTopic(r.mapping, p, opts.ClusterID)
			parts = append(parts, partitionTopic{table: r.table, partition: p, mapping: pm, err: err})
		}
	}
	addPartitionTopics(snap, parts, reports)
	slices.SortFunc(snap.exposed, func(a, b *catalogv1.TopicMapping) int { return strings.Compare(a.Topic, b.Topic) })
	return snap, reports
}

// partitionTopic is the topic of one partition of an exposed table, or
// why the partition cannot be one.
type partitionTopic struct {
	table     mapping.Table
	partition mapping.Partition
	mapping   *catalogv1.TopicMapping
	err       error
}

// addPartitionTopics adds the topics of Fluss partitions to snap. A name
// an exposed table's own topic already has stays the table's; a name two
// partitions would share is given to neither. Either way the partition is
// logged as not exposed, as is one that cannot be named.
func addPartitionTopics(snap *Snapshot, parts []partitionTopic, reports map[string]report) {
	claims := map[string]int{}
	for _, pt := range parts {
		if pt.err == nil {
			claims[pt.mapping.Topic]++
		}
	}
	for _, pt := range parts {
		key := "partition " + pt.table.Path() + "$" + pt.partition.Name()
		attrs := []any{"table", pt.table.Path(), "partition", pt.partition.Name(), "partition_id", pt.partition.ID}
		reason := ""
		switch {
		case pt.err != nil:
			reason = "cannot be named as a topic: " + pt.err.Error()
		case claims[pt.mapping.Topic] > 1:
			reason = "topic name " + pt.mapping.Topic + " is claimed by several partitions"
		case snap.byTopic[pt.mapping.Topic].Mapping != nil:
			reason = "topic name " + pt.mapping.Topic + " is taken by a table's topic"
		}
		if reason != "" {
			reports[key] = report{level: slog.LevelWarn, msg: "Fluss partition not exposed", sig: "refused " + reason,
				attrs: append(attrs, "reason", reason)}
			continue
		}
		snap.byTopic[pt.mapping.Topic] = Entry{Mapping: pt.mapping}
		snap.exposed = append(snap.exposed, pt.mapping)
		reports[key] = report{level: slog.LevelInfo, msg: "topic exposed", sig: "exposed " + pt.mapping.MappingId,
			attrs: append([]any{"topic", pt.mapping.Topic}, attrs...)}
	}
}

// logChanges logs the reports whose state changed since the last refresh,
// and the tables that disappeared. Called with c.mu held.
func (c *Catalog) logChanges(reports map[string]report) {
	for _, key := range slices.Sorted(maps.Keys(reports)) {
		r := reports[key]
		sig := r.sig
		if sig == "" {
			sig = r.msg
		}
		r.sig = sig
		if prev, ok := c.reported[key]; ok && prev.sig == sig {
			continue
		}
		prev, had := c.reported[key]
		msg := r.msg
		if had && r.msg == "topic exposed" && prev.msg == "topic exposed" {
			msg = "topic mapping changed"
		}
		c.log.Log(context.Background(), r.level, msg, r.attrs...)
		c.reported[key] = r
	}
	for _, key := range slices.Sorted(maps.Keys(c.reported)) {
		if _, ok := reports[key]; ok {
			continue
		}
		prev := c.reported[key]
		delete(c.reported, key)
		if strings.HasPrefix(key, "database ") {
			continue
		}
		if prev.msg == "topic exposed" && strings.HasPrefix(key, "partition ") {
			c.log.Info("topic removed: its Fluss partition is gone", prev.attrs...)
		} else if prev.msg == "topic exposed" {
			c.log.Info("topic removed: its table is gone", append([]any{"table", key}, topicAttr(prev)...)...)
		} else {
			c.log.Debug("table gone", "table", key)
		}
	}
}

// formatName is the kafka.value.format spelling of f, for logs.
func formatName(f catalogv1.ValueFormat) string {
	return strings.ToLower(strings.TrimPrefix(f.String(), "VALUE_FORMAT_"))
}

func topicAttr(r report) []any {
	for i := 0; i+1 < len(r.attrs); i += 2 {
		if r.attrs[i] == "topic" {
			return []any{"topic", r.attrs[i+1]}
		}
	}
	return nil
}

// Resolve answers each requested topic. Names it does not know trigger one
// on-demand refresh (shared and rate-limited) before they are reported
// unknown; while the catalog has never loaded, they are reported as
// LEADER_NOT_AVAILABLE so that clients retry. A topic still mapped to one
// of the stale table ids (the caller found that table gone) triggers a full
// refresh the same way, so a table dropped and created again is found
// under its new id.
func (c *Catalog) Resolve(ctx context.Context, topics []string, stale ...int64) []Result {
	return c.ResolveStale(ctx, topics, Stale{TableIDs: stale})
}

// Stale names what a caller found gone in Fluss.
type Stale struct {
	TableIDs []int64
	// PartitionIDs are Fluss partitions whose reads found them gone: a
	// topic still mapped to one of them triggers an on-demand refresh,
	// which lists the partitions again.
	PartitionIDs []int64
}

// ResolveStale is Resolve with the stale Fluss partitions too.
func (c *Catalog) ResolveStale(ctx context.Context, topics []string, stale Stale) []Result {
	results := make([]Result, len(topics))
	missing, outdated := false, false
	snap := c.Snapshot()
	for i, t := range topics {
		results[i].Topic = t
		if err := mapping.ValidateTopicName(t); err != nil {
			results[i].Code, results[i].Message = kerr.InvalidTopicException.Code, err.Error()
			continue
		}
		if snap == nil {
			missing = true
		} else if e, ok := snap.Lookup(t); !ok {
			missing = true
		} else if e.Mapping != nil && slices.Contains(stale.TableIDs, e.Mapping.GetTableId()) {
			outdated = true
		} else if p := e.Mapping.GetFlussPartition(); p != nil && slices.Contains(stale.PartitionIDs, p.GetId()) {
			missing = true
		}
	}
	if missing || outdated {
		c.refreshOnDemand(ctx, outdated)
		snap = c.Snapshot()
	}
	for i := range results {
		r := &results[i]
		if r.Code != 0 {
			continue
		}
		if snap == nil {
			r.Code, r.Message = kerr.LeaderNotAvailable.Code, c.notLoaded().Error()
			continue
		}
		e, ok := snap.Lookup(r.Topic)
		switch {
		case !ok:
			r.Code, r.Message = kerr.UnknownTopicOrPartition.Code, unknownMessage(snap, r.Topic)
		case e.Mapping != nil:
			r.Mapping = e.Mapping
		default:
			r.Code = kerr.InvalidTopicException.Code
			r.Message = fmt.Sprintf("topic %s cannot be produced to: %s", r.Topic, e.Refusal.Error())
		}
	}
	return results
}

func unknownMessage(snap *Snapshot, topic string) string {
	// The topic of a partition that is gone or not there yet.
	for i := strings.LastIndexByte(topic, '.'); i > 0; i = strings.LastIndexByte(topic[:i], '.') {
		if e, ok := snap.Lookup(topic[:i]); ok && len(e.Mapping.GetPartitionKeys()) > 0 && e.Mapping.GetFlussPartition() == nil {
			return fmt.Sprintf("topic %s does not exist: table topic %s has no Fluss partition %s (not created yet, or dropped)",
				topic, topic[:i], strings.ReplaceAll(topic[i+1:], ".", "$"))
		}
	}
	if db, table, ok := mapping.SplitDefaultTopicName(topic); ok {
		return fmt.Sprintf("topic %s does not exist: no exposed Fluss table %s.%s (tables are exposed with %s=true)",
			topic, db, table, mapping.PropEnabled)
	}
	return fmt.Sprintf("topic %s does not exist: topics are named database.table or by a table's %s property",
		topic, mapping.PropTopic)
}

// Topics returns every exposed topic, sorted by name, or ErrNotLoaded.
func (c *Catalog) Topics(ctx context.Context) ([]*catalogv1.TopicMapping, error) {
	snap := c.Snapshot()
	if snap == nil {
		c.refreshOnDemand(ctx, false)
		if snap = c.Snapshot(); snap == nil {
			return nil, c.notLoaded()
		}
	}
	return snap.Topics(), nil
}

func (c *Catalog) notLoaded() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastErr != nil {
		return fmt.Errorf("%w: %w", ErrNotLoaded, c.lastErr)
	}
	return ErrNotLoaded
}
