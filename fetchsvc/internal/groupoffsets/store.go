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
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/systable"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// Fluss is what the store needs from a Fluss client; *fluss.Client has it.
type Fluss = systable.Fluss

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
	table *systable.Table
}

// New returns a store over the table at path ("database.table"), created
// (with its database) when first needed or by Prepare.
func New(f Fluss, path string, opts systable.Options) (*Store, error) {
	t, err := systable.New(f, systable.Spec{
		Path:    path,
		Columns: columns,
		Buckets: Buckets,
		// The bucket a group hashes to is taken modulo the table's own
		// count: an existing table may have another.
		AnyBuckets: true,
		Comment:    "Kafka consumer group offsets committed through Ferry",
	}, opts)
	if err != nil {
		return nil, fmt.Errorf("groupoffsets: %w", err)
	}
	return &Store{table: t}, nil
}

// Table is the offsets table, for a service to prepare at start.
func (s *Store) Table() *systable.Table { return s.table }

// info finds the offsets table, creating it when missing.
func (s *Store) info(ctx context.Context) (*fluss.TableInfo, error) {
	info, err := s.table.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("groupoffsets: %w", err)
	}
	return info, nil
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
	info, err := s.info(ctx)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, s.table.Schema())
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
	// A retry after a lost answer may store the batch twice: harmless
	// here, the latest row of a partition wins.
	return s.table.Append(ctx, bucketOf(group, info.NumBuckets), rec)
}

// rowKey is one partition of one group.
type rowKey struct {
	group, topic string
	partition    int32
}

// List reads group's latest offset of each partition it committed.
func (s *Store) List(ctx context.Context, group string) ([]*fetchv1.CommittedOffset, error) {
	info, err := s.info(ctx)
	if err != nil {
		return nil, err
	}
	latest, err := s.scan(ctx, bucketOf(group, info.NumBuckets), func(g string) bool { return g == group })
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
	info, err := s.info(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for b := range int32(info.NumBuckets) {
		latest, err := s.scan(ctx, b, func(string) bool { return true })
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
func (s *Store) scan(ctx context.Context, bucket int32, keep func(group string) bool) (map[rowKey]*fetchv1.CommittedOffset, error) {
	latest := map[rowKey]*fetchv1.CommittedOffset{}
	_, err := s.table.Scan(ctx, bucket, 0, func(rec arrow.RecordBatch) error {
		return eachRow(rec, keep, func(group string, o *fetchv1.CommittedOffset) {
			k := rowKey{group, o.Topic, o.Partition}
			if o.Offset == deleted {
				delete(latest, k)
			} else {
				latest[k] = o
			}
		})
	})
	if err != nil {
		return nil, err
	}
	return latest, nil
}

// eachRow calls fn with every row of rec whose group keep accepts.
func eachRow(rec arrow.RecordBatch, keep func(group string) bool, fn func(group string, o *fetchv1.CommittedOffset)) error {
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
