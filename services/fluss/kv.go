package fluss

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

// PutKvResult is the outcome for one KV batch, in the same position as the
// batch.
type PutKvResult struct {
	PartitionID *int64
	Bucket      int32
	// LogEndOffset is the bucket's changelog end offset after the write:
	// the offset the next changelog record will get (not the offset of this
	// batch's first change). -1 on error.
	LogEndOffset int64
	// Err is nil on success, an *Error from the server, or a transport error
	// (then whether the batch was applied is unknown).
	Err error
}

// PutKv writes one KV record batch per bucket (see the kvbatch package:
// upserts of whole rows and deletes by key) to a primary-key table, sending
// each bucket to its leader. The request leaves target_columns unset (every
// column is written) and asks for the table's merge engine, as the Java
// UpsertWriter does by default.
//
// Errors, routing and retries are as in ProduceLog: the error return stops
// the whole call before anything is sent, everything else is per bucket,
// stale routes are dropped from the cache, and nothing is retried.
func (c *Client) PutKv(ctx context.Context, tableID int64, acks Acks, timeout time.Duration, batches []BucketBatch) (_ []PutKvResult, err error) {
	ctx, end := c.startSpan(ctx, "PutKv", attribute.Int64("fluss.table_id", tableID), attribute.Int("fluss.batches", len(batches)))
	defer end(&err)
	if err := c.checkWrite("put kv", tableID, acks, timeout, batches); err != nil {
		return nil, err
	}
	if len(batches) == 0 {
		return nil, nil
	}
	results := make([]PutKvResult, len(batches))
	keys := make([]leaderKey, len(batches))
	for i, b := range batches {
		results[i] = PutKvResult{PartitionID: b.PartitionID, Bucket: b.Bucket, LogEndOffset: -1}
		keys[i] = leaderKey{b.PartitionID, b.Bucket}
	}
	groups, nodes, errs, err := c.groupByLeader(ctx, tableID, keys)
	if err != nil {
		return nil, err
	}
	for i, e := range errs {
		results[i].Err = e
	}
	forEachLeader(groups, func(id int32, idxs []int) {
		c.putKvToLeader(ctx, nodes[id], tableID, acks, timeout, batches, idxs, results)
	})
	failed, stale := 0, false
	for _, r := range results {
		if r.Err != nil {
			failed++
			stale = stale || staleRoute(r.Err)
		}
	}
	if failed > 0 {
		trace.SpanFromContext(ctx).SetAttributes(attribute.Int("fluss.failed_buckets", failed))
	}
	if stale {
		c.meta.invalidate(tableID)
	}
	return results, nil
}

// putKvToLeader sends the batches at idxs to one leader and fills in their
// results. Each goroutine writes only its own positions of results.
func (c *Client) putKvToLeader(ctx context.Context, node ServerNode, tableID int64, acks Acks, timeout time.Duration,
	batches []BucketBatch, idxs []int, results []PutKvResult) {
	enc := produceEncoders.Get().(*produceEncoder)
	defer produceEncoders.Put(enc)
	parts := enc.encodePutKv(acks, tableID, int32(timeout.Milliseconds()), batches, idxs)
	var resp flussrpc.PutKvResponse
	if err := c.callServerParts(ctx, node.Addr(), APIPutKv, parts, &resp); err != nil {
		for _, i := range idxs {
			results[i].Err = err
		}
		return
	}
	got := make(map[[2]int64]*flussrpc.PutKvResponseBucket, len(resp.GetBucketsResp()))
	for _, br := range resp.GetBucketsResp() {
		got[bucketKey(br.PartitionId, br.GetBucketId())] = br
	}
	for _, i := range idxs {
		br, ok := got[bucketKey(batches[i].PartitionID, batches[i].Bucket)]
		switch {
		case !ok:
			results[i].Err = fmt.Errorf("%w: put kv response from %s has no result for bucket %d", ErrProtocol, node.Addr(), batches[i].Bucket)
		case br.GetErrorCode() != int32(CodeNone):
			results[i].Err = newError(br.GetErrorCode(), br.GetErrorMessage())
		case br.LogEndOffset == nil:
			results[i].Err = fmt.Errorf("%w: put kv response from %s has no log end offset for bucket %d", ErrProtocol, node.Addr(), batches[i].Bucket)
		default:
			results[i].LogEndOffset = br.GetLogEndOffset()
		}
	}
}
