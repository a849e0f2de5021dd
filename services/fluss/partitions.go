package fluss

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

// PartitionInfo is one partition of a partitioned table.
type PartitionInfo struct {
	ID int64
	// Values are the partition key values, in the table's partition key
	// order.
	Values []string
	// Name is Fluss's partition name: the values joined by "$".
	Name string
}

// PartitionSpec assigns a value to each partition key column.
type PartitionSpec map[string]string

func (s PartitionSpec) pb() *flussrpc.PartitionSpec {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic requests; the server matches by key
	out := &flussrpc.PartitionSpec{}
	for _, k := range keys {
		out.PartitionKeyValues = append(out.PartitionKeyValues, &flussrpc.KeyValue{Key: proto.String(k), Value: proto.String(s[k])})
	}
	return out
}

// ListPartitions returns the partitions of a partitioned table. It fails
// with CodeTableNotPartitioned for other tables.
func (c *Client) ListPartitions(ctx context.Context, path TablePath) (_ []PartitionInfo, err error) {
	ctx, end := c.startSpan(ctx, "ListPartitions", attribute.String("fluss.table", path.String()))
	defer end(&err)
	var resp flussrpc.ListPartitionInfosResponse
	if err := c.callCoordinator(ctx, APIListPartitions, true, &flussrpc.ListPartitionInfosRequest{TablePath: path.pb()}, &resp); err != nil {
		return nil, err
	}
	out := make([]PartitionInfo, 0, len(resp.GetPartitionsInfo()))
	for _, p := range resp.GetPartitionsInfo() {
		var values []string
		for _, kv := range p.GetPartitionSpec().GetPartitionKeyValues() {
			values = append(values, kv.GetValue())
		}
		out = append(out, PartitionInfo{ID: p.GetPartitionId(), Values: values, Name: strings.Join(values, "$")})
	}
	return out, nil
}

// CreatePartition adds a partition to a partitioned table. With
// ignoreIfExists, an existing partition is not an error. For tests and
// tools: Ferry does not create partitions.
func (c *Client) CreatePartition(ctx context.Context, path TablePath, spec PartitionSpec, ignoreIfExists bool) (err error) {
	ctx, end := c.startSpan(ctx, "CreatePartition", attribute.String("fluss.table", path.String()))
	defer end(&err)
	if len(spec) == 0 {
		return fmt.Errorf("fluss: create partition of %s: empty partition spec", path)
	}
	req := &flussrpc.CreatePartitionRequest{TablePath: path.pb(), PartitionSpec: spec.pb(), IgnoreIfExists: proto.Bool(ignoreIfExists)}
	return c.callCoordinator(ctx, APICreatePartition, false, req, &flussrpc.CreatePartitionResponse{})
}
