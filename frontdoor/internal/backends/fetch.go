package backends

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/streampool"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// Fetcher reads for consumers through fetchsvc. fetchsvc is stateless:
// every call may go to any instance.
type Fetcher struct {
	unary roundRobin[fetchv1.FetchServiceClient]
}

// NewFetcher calls the fetchsvc instances of backends round robin.
func NewFetcher(backends []streampool.Backend[fetchv1.FetchServiceClient]) *Fetcher {
	return &Fetcher{unary: newRoundRobin("fetchsvc", backends)}
}

// Read answers a Kafka Fetch. Errors keep their gRPC status.
func (f *Fetcher) Read(ctx context.Context, req *fetchv1.ReadRequest) (*fetchv1.ReadResponse, error) {
	return call(ctx, &f.unary, "Read", func(c fetchv1.FetchServiceClient) (*fetchv1.ReadResponse, error) {
		return c.Read(ctx, req)
	})
}

// ListOffsets answers a Kafka ListOffsets for one topic.
func (f *Fetcher) ListOffsets(ctx context.Context, req *fetchv1.ListOffsetsRequest) (*fetchv1.ListOffsetsResponse, error) {
	return call(ctx, &f.unary, "ListOffsets", func(c fetchv1.FetchServiceClient) (*fetchv1.ListOffsetsResponse, error) {
		return c.ListOffsets(ctx, req)
	})
}

// CommitOffsets stores a consumer group's offsets (groups.OffsetStore).
func (f *Fetcher) CommitOffsets(ctx context.Context, group string, offsets []*fetchv1.CommittedOffset) error {
	_, err := call(ctx, &f.unary, "CommitOffsets", func(c fetchv1.FetchServiceClient) (*fetchv1.CommitOffsetsResponse, error) {
		return c.CommitOffsets(ctx, &fetchv1.CommitOffsetsRequest{Group: group, Offsets: offsets})
	})
	return err
}

// ListCommittedOffsets reads a consumer group's offsets (groups.OffsetStore).
func (f *Fetcher) ListCommittedOffsets(ctx context.Context, group string) ([]*fetchv1.CommittedOffset, error) {
	resp, err := call(ctx, &f.unary, "ListCommittedOffsets", func(c fetchv1.FetchServiceClient) (*fetchv1.ListCommittedOffsetsResponse, error) {
		return c.ListCommittedOffsets(ctx, &fetchv1.ListCommittedOffsetsRequest{Group: group})
	})
	return resp.GetOffsets(), err
}

// DeleteCommittedOffsets removes a consumer group's offsets of parts
// (groups.OffsetStore).
func (f *Fetcher) DeleteCommittedOffsets(ctx context.Context, group string, parts []*fetchv1.OffsetPartition) error {
	_, err := call(ctx, &f.unary, "DeleteCommittedOffsets", func(c fetchv1.FetchServiceClient) (*fetchv1.DeleteCommittedOffsetsResponse, error) {
		return c.DeleteCommittedOffsets(ctx, &fetchv1.DeleteCommittedOffsetsRequest{Group: group, Partitions: parts})
	})
	return err
}

// ListOffsetGroups names the groups with committed offsets
// (groups.OffsetStore).
func (f *Fetcher) ListOffsetGroups(ctx context.Context) ([]string, error) {
	resp, err := call(ctx, &f.unary, "ListOffsetGroups", func(c fetchv1.FetchServiceClient) (*fetchv1.ListOffsetGroupsResponse, error) {
		return c.ListOffsetGroups(ctx, &fetchv1.ListOffsetGroupsRequest{})
	})
	return resp.GetGroups(), err
}
