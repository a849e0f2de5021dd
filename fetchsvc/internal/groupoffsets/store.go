// Package groupoffsets keeps consumer groups' committed offsets in a Fluss
// log table that Ferry owns (docs/kafka-api.md "Consumer groups"). Every
// commit appends one row per partition to the bucket its group hashes to;
// a group's offsets are the last row of each of its partitions in that
// bucket. Fluss's log retention (table.log.ttl, 7 days by default) then
// plays the part of Kafka's offsets.retention.minutes.
package groupoffsets

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// Fluss is what the store needs from a Fluss client; *fluss.Client has it.
type Fluss interface {
	GetTableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	CreateDatabase(ctx context.Context, name string, d fluss.DatabaseDescriptor, ignoreIfExists bool) error
	CreateTable(ctx context.Context, path fluss.TablePath, d fluss.TableDescriptor, ignoreIfExists bool) error
	ProduceLog(ctx context.Context, tableID int64, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.BucketResult, error)
	FetchLog(ctx context.Context, tableID int64, buckets []fluss.FetchBucket, opt fluss.FetchOptions) ([]fluss.FetchResult, error)
	ListOffsets(ctx context.Context, tableID int64, partitionID *int64, buckets []int32, spec fluss.OffsetSpec) (map[int32]int64, error)
	RefreshTableRoute(ctx context.Context, path fluss.TablePath) (*fluss.TableRoute, error)
}

// DefaultTable is where offsets are kept unless configured otherwise.
const DefaultTable = "ferry_system.consumer_offsets"

// Buckets is the bucket count of a table the store creates.
const Buckets = 8

// columns is the offsets table's schema; an existing table must have
// these columns in this order.
var columns = []types.Field{
	{Name: "group_id", Type: types.DataType{Root: types.String}},
	{Name: "topic", Type: types.DataType{Root: types.String}},
	{Name: "kafka_partition", Type: types.DataType{Root: types.Int}},
	{Name: "committed_offset", Type: types.DataType{Root: types.BigInt}},
	{Name: "leader_epoch", Type: types.DataType{Root: types.Int}},
	{Name: "metadata", Type: types.DataType{Root: types.String, Nullable: true}},
	{Name: "commit_time", Type: types.DataType{Root: types.TimestampLTZ, Precision: 3}},
}

// Store reads and writes the offsets table.
type Store struct {
	fluss  Fluss
	path   fluss.TablePath
	schema *arrow.Schema

	mu   sync.Mutex
	info *fluss.TableInfo // nil until the table was found or created
}

// New returns a store over the table at path ("database.table").
func New(f Fluss, path string) (*Store, error) {
	db, table, ok := strings.Cut(path, ".")
	if !ok || db == "" || table == "" || strings.Contains(table, ".") {
		return nil, fmt.Errorf("groupoffsets: table %q is not database.table", path)
	}
	tp := fluss.TablePath{Database: db, Table: table}
	schema, err := types.ArrowSchema(columns)
	if err != nil {
		return nil, err
	}
	return &Store{fluss: f, path: tp, schema: schema}, nil
}

// table finds the offsets table, creating its database and itself when
// missing. The table is not a topic: kafka.enabled=false keeps it out of
// catalogsvc's listing whatever its -expose.
func (s *Store) table(ctx context.Context) (*fluss.TableInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.info != nil {
		return s.info, nil
	}
	info, err := s.fluss.GetTableInfo(ctx, s.path)
	if c := fluss.CodeOf(err); c == fluss.CodeTableNotExist || c == fluss.CodeDatabaseNotExist {
		if err := s.fluss.CreateDatabase(ctx, s.path.Database, fluss.DatabaseDescriptor{
			Comment: "Ferry's own tables"}, true); err != nil {
			return nil, fmt.Errorf("groupoffsets: create database %s: %w", s.path.Database, err)
		}
		cols := make([]types.Column, len(columns))
		for i, c := range columns {
			cols[i] = types.Column{Name: c.Name, Type: c.Type}
		}
		if err := s.fluss.CreateTable(ctx, s.path, fluss.TableDescriptor{
			Schema:           types.Schema{Columns: cols},
			Comment:          "Kafka consumer group offsets committed through Ferry",
			NumBuckets:       Buckets,
			CustomProperties: map[string]string{"kafka.enabled": "false"},
		}, true); err != nil {
			return nil, fmt.Errorf("groupoffsets: create table %s: %w", s.path, err)
		}
		s.awaitLeaders(ctx)
		info, err = s.fluss.GetTableInfo(ctx, s.path)
	}
	if err != nil {
		return nil, fmt.Errorf("groupoffsets: table %s: %w", s.path, err)
	}
	got := info.Schema.Fields()
	if len(got) != len(columns) {
		return nil, fmt.Errorf("groupoffsets: table %s has %d columns, not Ferry's %d", s.path, len(got), len(columns))
	}
	for i, c := range columns {
		if got[i].Name != c.Name || got[i].Type.Root != c.Type.Root {
			return nil, fmt.Errorf("groupoffsets: table %s column %d is %s %s, not %s %s", s.path, i, got[i].Name, got[i].Type, c.Name, c.Type)
		}
	}
	s.info = info
	return info, nil
}

// newTableLeadersWithin bounds the wait for a table the store created to
// have a leader in every bucket. Fluss assigns them soon after creating it,
// but a loaded two-core machine took more than retryFor (10 s).
const newTableLeadersWithin = time.Minute

// awaitLeaders waits, within newTableLeadersWithin and ctx, until every
// bucket of the store's table has a leader. If they do not come, the calls
// that need them retry and report as for any missing leader.
func (s *Store) awaitLeaders(ctx context.Context) {
	_ = fluss.RetryWithin(ctx, newTableLeadersWithin, func() error {
		r, err := s.fluss.RefreshTableRoute(ctx, s.path)
		if err == nil && !allLed(r.Buckets) {
			err = &fluss.Error{Code: fluss.CodeLeaderNotAvailable, Message: fmt.Sprintf("table %s: a bucket has no leader yet", s.path)}
		}
		return err
	})
}

// allLed reports whether buckets is not empty and each has a leader.
func allLed(buckets []fluss.BucketLocation) bool {
	for _, b := range buckets {
		if b.Leader == fluss.NoLeader {
			return false
		}
	}
	return len(buckets) > 0
}

func bucketOf(group string, buckets int) int32 {
	h := fnv.New32a()
	h.Write([]byte(group))
	return int32(h.Sum32() % uint32(buckets))
}

// Commit appends offsets of group, all in one batch: they are stored
// together or not at all. An offset below 0 is stored as given and reads
// back as no offset (as Delete writes it).
func (s *Store) Commit(ctx context.Context, group string, offsets []*fetchv1.CommittedOffset) error {
	if err := s.appendRows(ctx, group, offsets); err != nil {
		return fmt.Errorf("groupoffsets: commit of group %q: %w", group, err)
	}
	return nil
}

// Delete removes group's committed offsets of parts: it appends a row
// with offset -1 for each, all in one batch, which hides the partition's
// earlier rows from List and Groups.
func (s *Store) Delete(ctx context.Context, group string, parts []*fetchv1.OffsetPartition) error {
	now := time.Now().UnixMilli()
	rows := make([]*fetchv1.CommittedOffset, len(parts))
	for i, p := range parts {
		rows[i] = &fetchv1.CommittedOffset{Topic: p.GetTopic(), Partition: p.GetPartition(), Offset: deleted, LeaderEpoch: -1, CommitTimeMs: now}
	}
	if err := s.appendRows(ctx, group, rows); err != nil {
		return fmt.Errorf("groupoffsets: delete of group %q offsets: %w", group, err)
	}
	return nil
}

// deleted is the committed_offset of a row that removes a partition's
// committed offset.
const deleted = -1

// appendRows writes rows of group to its bucket in one batch.
func (s *Store) appendRows(ctx context.Context, group string, offsets []*fetchv1.CommittedOffset) error {
	if len(offsets) == 0 {
		return nil
	}
	info, err := s.table(ctx)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, s.schema)
	defer b.Release()
	for _, o := range offsets {
		b.Field(0).(*array.StringBuilder).Append(group)
		b.Field(1).(*array.StringBuilder).Append(o.GetTopic())
		b.Field(2).(*array.Int32Builder).Append(o.GetPartition())
		b.Field(3).(*array.Int64Builder).Append(o.GetOffset())
		b.Field(4).(*array.Int32Builder).Append(o.GetLeaderEpoch())
		if o.Metadata == nil {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.StringBuilder).Append(o.GetMetadata())
		}
		b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(o.GetCommitTimeMs()))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	batch, err := logbatch.Build(rec, logbatch.DefaultOptions(int16(info.SchemaID)))
	if err != nil {
		return err
	}
	// A batch without writer id may be stored twice by a retry after a
	// lost answer: harmless here, the latest row of a partition wins.
	err = retry(ctx, func() error {
		res, err := s.fluss.ProduceLog(ctx, info.TableID, fluss.AcksAll, 30*time.Second,
			[]fluss.BucketBatch{{Bucket: bucketOf(group, info.NumBuckets), Records: batch}})
		if err == nil {
			err = res[0].Err
		}
		return err
	})
	s.forgetOn(err)
	return err
}

// forgetOn drops the table info when the table is gone, so that the next
// call creates it again.
func (s *Store) forgetOn(err error) {
	if c := fluss.CodeOf(err); c == fluss.CodeTableNotExist || errors.Is(err, fluss.ErrUnknownTable) {
		s.mu.Lock()
		s.info = nil
		s.mu.Unlock()
	}
}

// rowKey is one partition of one group.
type rowKey struct {
	group, topic string
	partition    int32
}

// List reads group's latest offset of each partition it committed.
func (s *Store) List(ctx context.Context, group string) ([]*fetchv1.CommittedOffset, error) {
	info, err := s.table(ctx)
	if err != nil {
		return nil, err
	}
	latest, err := s.scan(ctx, info, bucketOf(group, info.NumBuckets), func(g string) bool { return g == group })
	if err != nil {
		return nil, fmt.Errorf("groupoffsets: offsets of group %q: %w", group, err)
	}
	out := make([]*fetchv1.CommittedOffset, 0, len(latest))
	for _, o := range latest {
		out = append(out, o)
	}
	return out, nil
}

// Groups names every group with a committed offset, sorted. It reads the
// whole table.
func (s *Store) Groups(ctx context.Context) ([]string, error) {
	info, err := s.table(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for b := range int32(info.NumBuckets) {
		latest, err := s.scan(ctx, info, b, func(string) bool { return true })
		if err != nil {
			return nil, fmt.Errorf("groupoffsets: groups of bucket %d: %w", b, err)
		}
		for k := range latest {
			seen[k.group] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// scan reads bucket from its start and returns the latest live row of
// each partition of the groups keep accepts; a partition whose latest row
// is a deletion is left out.
func (s *Store) scan(ctx context.Context, info *fluss.TableInfo, bucket int32, keep func(group string) bool) (map[rowKey]*fetchv1.CommittedOffset, error) {
	var starts map[int32]int64
	err := retry(ctx, func() (err error) {
		starts, err = s.fluss.ListOffsets(ctx, info.TableID, nil, []int32{bucket}, fluss.OffsetEarliest)
		return err
	})
	if err != nil {
		s.forgetOn(err)
		return nil, err
	}
	dec, err := logbatch.NewDecoder(s.schema, nil)
	if err != nil {
		return nil, err
	}
	latest := map[rowKey]*fetchv1.CommittedOffset{}
	next := starts[bucket]
	for {
		var res []fluss.FetchResult
		err := retry(ctx, func() (err error) {
			res, err = s.fluss.FetchLog(ctx, info.TableID, []fluss.FetchBucket{{Bucket: bucket, Offset: next, MaxBytes: 4 << 20}}, fluss.FetchOptions{})
			if err == nil {
				err = res[0].Err
			}
			return err
		})
		if err != nil {
			s.forgetOn(err)
			return nil, fmt.Errorf("reading at %d: %w", next, err)
		}
		it := logbatch.NewIterator(res[0].Records)
		for it.Next() {
			b := it.Batch()
			next = b.BaseOffset + int64(b.LastOffsetDelta) + 1
			if b.RecordCount == 0 {
				continue
			}
			if err := eachRow(dec, b, keep, func(group string, o *fetchv1.CommittedOffset) {
				k := rowKey{group, o.Topic, o.Partition}
				if o.Offset == deleted {
					delete(latest, k)
				} else {
					latest[k] = o
				}
			}); err != nil {
				return nil, fmt.Errorf("batch at %d: %w", b.BaseOffset, err)
			}
		}
		if err := it.Err(); err != nil && !errors.Is(err, logbatch.ErrShortBatch) {
			return nil, err
		}
		if next >= res[0].HighWatermark {
			return latest, nil
		}
	}
}

// retryFor bounds the retries of one call: long enough for a new table's
// buckets to get leaders, short of clients' request timeouts.
const retryFor = 10 * time.Second

// retry runs call until it succeeds, fails for good, or retryFor passed.
func retry(ctx context.Context, call func() error) error {
	return fluss.RetryWithin(ctx, retryFor, call)
}

// eachRow calls fn with every row of b whose group keep accepts.
func eachRow(dec *logbatch.Decoder, b logbatch.Batch, keep func(group string) bool, fn func(group string, o *fetchv1.CommittedOffset)) error {
	rec, err := dec.Decode(b)
	if err != nil {
		return err
	}
	defer rec.Release()
	groups, ok0 := rec.Column(0).(*array.String)
	topics, ok1 := rec.Column(1).(*array.String)
	parts, ok2 := rec.Column(2).(*array.Int32)
	offs, ok3 := rec.Column(3).(*array.Int64)
	epochs, ok4 := rec.Column(4).(*array.Int32)
	meta, ok5 := rec.Column(5).(*array.String)
	times, ok6 := rec.Column(6).(*array.Timestamp)
	if !(ok0 && ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return errors.New("unexpected column types")
	}
	for i := range int(rec.NumRows()) {
		group := groups.Value(i)
		if !keep(group) {
			continue
		}
		o := &fetchv1.CommittedOffset{Topic: topics.Value(i), Partition: parts.Value(i), Offset: offs.Value(i),
			LeaderEpoch: epochs.Value(i), CommitTimeMs: int64(times.Value(i))}
		if !meta.IsNull(i) {
			m := meta.Value(i)
			o.Metadata = &m
		}
		fn(group, o)
	}
	return nil
}
