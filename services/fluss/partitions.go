package fluss

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
	"github.com/ferrygw/ferry/services/fluss/partitioning"
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
// tools; writers create partitions through PartitionIDs.
func (c *Client) CreatePartition(ctx context.Context, path TablePath, spec PartitionSpec, ignoreIfExists bool) (err error) {
	ctx, end := c.startSpan(ctx, "CreatePartition", attribute.String("fluss.table", path.String()))
	defer end(&err)
	if len(spec) == 0 {
		return fmt.Errorf("fluss: create partition of %s: empty partition spec", path)
	}
	req := &flussrpc.CreatePartitionRequest{TablePath: path.pb(), PartitionSpec: spec.pb(), IgnoreIfExists: proto.Bool(ignoreIfExists)}
	return c.callCoordinator(ctx, APICreatePartition, false, req, &flussrpc.CreatePartitionResponse{})
}

// DropPartition drops a partition of a partitioned table and its data, as
// retention does. With ignoreIfNotExists, a missing partition is not an
// error. For tests and tools.
func (c *Client) DropPartition(ctx context.Context, path TablePath, spec PartitionSpec, ignoreIfNotExists bool) (err error) {
	ctx, end := c.startSpan(ctx, "DropPartition", attribute.String("fluss.table", path.String()))
	defer end(&err)
	if len(spec) == 0 {
		return fmt.Errorf("fluss: drop partition of %s: empty partition spec", path)
	}
	req := &flussrpc.DropPartitionRequest{TablePath: path.pb(), PartitionSpec: spec.pb(), IgnoreIfNotExists: proto.Bool(ignoreIfNotExists)}
	return c.callCoordinator(ctx, APIDropPartition, false, req, &flussrpc.DropPartitionResponse{})
}

// PartitionIDs returns the ids of the named partitions (names as
// partitioning.Getter makes them) of a partitioned table that GetTableInfo
// returned, and caches their bucket placement so ProduceLog and PutKv can
// route to them. With create, missing partitions are created as the Java
// writer's dynamic partition creation does (CreatePartition with
// ignoreIfExists, so a concurrent creator is not an error); without it, a
// missing partition fails with PARTITION_NOT_EXISTS. Which names may be
// created is the caller's decision (partitioning.AutoPartition.Check); names
// the coordinator would refuse fail with PARTITION_SPEC_INVALID_EXCEPTION
// before anything is sent.
//
// Do not create partitions of a table the coordinator may not have finished
// creating: Fluss 0.9.1's coordinator, given a CreatePartition a few
// milliseconds after CreateTable, assigns the partition's buckets before it
// knows the table (a NullPointerException in its TableBucketStateMachine),
// and from then on fails every leader notification to the tablet servers
// ("NotifyLeaderAndIsr batch request ... is not empty"), so no new bucket of
// any table gets a leader until the coordinator restarts.
func (c *Client) PartitionIDs(ctx context.Context, table *TableInfo, names []string, create bool) (_ map[string]int64, err error) {
	ctx, end := c.startSpan(ctx, "PartitionIDs", attribute.String("fluss.table", table.TablePath.String()), attribute.Int("fluss.partitions", len(names)))
	defer end(&err)
	if !table.IsPartitioned() {
		return nil, &Error{Code: CodeTableNotPartitioned, Message: fmt.Sprintf("table %s has no partition keys", table.TablePath)}
	}
	ids := c.meta.partitionIDs(table.TableID, names)
	var missing []string
	for _, n := range names {
		if _, ok := ids[n]; !ok && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return ids, nil
	}
	for _, n := range missing {
		if err := partitioning.ValidateName(n, len(table.PartitionKeys), create); err != nil {
			c.opts.logger.Warn("fluss: refused partition name", "table", table.TablePath.String(), "partition", n, "err", err)
			return nil, &Error{Code: CodePartitionSpecInvalid, Message: fmt.Sprintf("table %s: %v", table.TablePath, err)}
		}
	}
	// One listing answers every name the cache missed; routes come after.
	absent, err := c.addListedIDs(ctx, table, missing, ids)
	if err != nil {
		return nil, err
	}
	if len(absent) > 0 {
		if !create {
			return nil, &Error{Code: CodePartitionNotExists, Message: fmt.Sprintf("table %s has no partition %q", table.TablePath, absent[0])}
		}
		for _, n := range absent {
			spec := PartitionSpec{}
			for i, v := range partitioning.Values(n) {
				spec[table.PartitionKeys[i]] = v
			}
			switch err := c.CreatePartition(ctx, table.TablePath, spec, true); {
			case err == nil:
				c.opts.logger.Info("fluss: created partition", "table", table.TablePath.String(), "partition", n)
			case CodeOf(err) != CodePartitionAlreadyExists:
				return nil, fmt.Errorf("fluss: create partition %q of %s: %w", n, table.TablePath, err)
			}
		}
		if absent, err = c.addListedIDs(ctx, table, absent, ids); err != nil {
			return nil, err
		}
		if len(absent) > 0 {
			// Created and gone again: dropped by retention or by someone else.
			return nil, &Error{Code: CodePartitionNotExists, Message: fmt.Sprintf("table %s: partition %q vanished after it was created", table.TablePath, absent[0])}
		}
	}
	pids := make([]int64, 0, len(missing))
	for _, n := range missing {
		pids = append(pids, ids[n])
	}
	if err := c.fetchMetadata(ctx, []TablePath{table.TablePath}, pids); err != nil {
		return nil, err
	}
	return ids, nil
}

// addListedIDs lists the table's partitions, adds the ids of the wanted
// names to ids and returns the wanted names that do not exist.
func (c *Client) addListedIDs(ctx context.Context, table *TableInfo, wanted []string, ids map[string]int64) ([]string, error) {
	parts, err := c.ListPartitions(ctx, table.TablePath)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]int64, len(parts))
	for _, p := range parts {
		byName[p.Name] = p.ID
	}
	var absent []string
	for _, n := range wanted {
		if id, ok := byName[n]; ok {
			ids[n] = id
		} else {
			absent = append(absent, n)
		}
	}
	return absent, nil
}
