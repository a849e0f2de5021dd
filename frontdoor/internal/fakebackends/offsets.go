package fakebackends

import (
	"context"
	"sort"
	"sync"

	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// Offsets is fetchsvc's committed-offsets API in memory: each group's rows
// in commit order, the latest row of a partition winning and a row with
// offset -1 deleting it, as in the Fluss offsets table. Read and
// ListOffsets are not served.
type Offsets struct {
	fetchv1.UnimplementedFetchServiceServer

	mu   sync.Mutex
	rows map[string][]*fetchv1.CommittedOffset
}

// NewOffsets returns a store without offsets.
func NewOffsets() *Offsets { return &Offsets{rows: map[string][]*fetchv1.CommittedOffset{}} }

// CommitOffsets implements FetchService.
func (f *Offsets) CommitOffsets(_ context.Context, r *fetchv1.CommitOffsetsRequest) (*fetchv1.CommitOffsetsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows[r.Group] = append(f.rows[r.Group], r.Offsets...)
	return &fetchv1.CommitOffsetsResponse{}, nil
}

// DeleteCommittedOffsets implements FetchService.
func (f *Offsets) DeleteCommittedOffsets(_ context.Context, r *fetchv1.DeleteCommittedOffsetsRequest) (*fetchv1.DeleteCommittedOffsetsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range r.Partitions {
		f.rows[r.Group] = append(f.rows[r.Group], &fetchv1.CommittedOffset{Topic: p.Topic, Partition: p.Partition, Offset: -1})
	}
	return &fetchv1.DeleteCommittedOffsetsResponse{}, nil
}

// live is group's latest row of each partition, without deletions.
func (f *Offsets) live(group string) []*fetchv1.CommittedOffset {
	type key struct {
		topic string
		part  int32
	}
	latest := map[key]*fetchv1.CommittedOffset{}
	for _, o := range f.rows[group] {
		latest[key{o.Topic, o.Partition}] = o
	}
	var out []*fetchv1.CommittedOffset
	for _, o := range latest {
		if o.Offset >= 0 {
			out = append(out, o)
		}
	}
	return out
}

// ListCommittedOffsets implements FetchService.
func (f *Offsets) ListCommittedOffsets(_ context.Context, r *fetchv1.ListCommittedOffsetsRequest) (*fetchv1.ListCommittedOffsetsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &fetchv1.ListCommittedOffsetsResponse{Offsets: f.live(r.Group)}, nil
}

// ListOffsetGroups implements FetchService.
func (f *Offsets) ListOffsetGroups(context.Context, *fetchv1.ListOffsetGroupsRequest) (*fetchv1.ListOffsetGroupsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for g := range f.rows {
		if len(f.live(g)) > 0 {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return &fetchv1.ListOffsetGroupsResponse{Groups: out}, nil
}
