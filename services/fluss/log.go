package fluss

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

// Acks is how many replicas must have a produced batch before the server
// answers (Fluss accepts exactly 0, 1 and -1).
type Acks int32

const (
	// AcksNone (0): the leader answers after appending locally, like
	// AcksLeader. Unlike Kafka, Fluss still sends a response for acks 0,
	// so ProduceLog waits for it and reports offsets as usual.
	AcksNone Acks = 0
	// AcksLeader (1): the leader answers after appending locally.
	AcksLeader Acks = 1
	// AcksAll (-1): the leader answers once every in-sync replica has the
	// batch (or the timeout passes).
	AcksAll Acks = -1
)

func (a Acks) valid() bool { return a == AcksNone || a == AcksLeader || a == AcksAll }

// BucketBatch is one bucket's encoded batches (e.g. from logbatch), in
// Records or, when Records is nil, in Parts.
type BucketBatch struct {
	PartitionID *int64 // nil for non-partitioned tables
	Bucket      int32
	Records     []byte
	// Parts are the records in pieces, sent one after the other without
	// being joined first (a batch header and the records section it frames
	// in the caller's buffers, or several batches).
	Parts [][]byte
}

// size is the length of the records.
func (b BucketBatch) size() int {
	n := len(b.Records)
	for _, p := range b.Parts {
		n += len(p)
	}
	return n
}

// BucketResult is the outcome for one BucketBatch, in the same position.
type BucketResult struct {
	PartitionID *int64
	Bucket      int32
	// BaseOffset is the log offset of the batch's first record; -1 on error.
	BaseOffset int64
	// Err is nil on success, an *Error from the server, or a transport error
	// (then whether the batch was appended is unknown).
	Err error
}

// ProduceLog appends one batch per bucket to a log table, sending each
// bucket to its leader (one request per leader, leaders in parallel). The
// table id must be known to the client (GetTableInfo or TableRoute).
//
// The error return is for problems that stop the whole call before anything
// is sent (bad arguments, unknown table, closed client). Everything else is
// reported per bucket in the results, which line up with batches. A bucket
// failing with a stale-metadata error (StaleMetadata) or a transport error
// drops the table's cached placement, so a retry asks the cluster again.
// ProduceLog itself never retries: without an idempotent writer, resending a
// batch whose outcome is unknown could duplicate it.
func (c *Client) ProduceLog(ctx context.Context, tableID int64, acks Acks, timeout time.Duration, batches []BucketBatch) (_ []BucketResult, err error) {
	ctx, end := c.startSpan(ctx, "ProduceLog", attribute.Int64("fluss.table_id", tableID), attribute.Int("fluss.batches", len(batches)))
	defer end(&err)
	if err := c.checkWrite("produce", tableID, acks, timeout, batches); err != nil {
		return nil, err
	}
	if len(batches) == 0 {
		return nil, nil
	}

	results := make([]BucketResult, len(batches))
	keys := make([]leaderKey, len(batches))
	for i, b := range batches {
		results[i] = BucketResult{PartitionID: b.PartitionID, Bucket: b.Bucket, BaseOffset: -1}
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
		c.produceToLeader(ctx, nodes[id], tableID, acks, timeout, batches, idxs, results)
	})

	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
		}
	}
	if failed > 0 {
		span := trace.SpanFromContext(ctx)
		span.SetAttributes(attribute.Int("fluss.failed_buckets", failed))
		for _, r := range results {
			if staleRoute(r.Err) {
				c.meta.invalidate(tableID)
				break
			}
		}
	}
	return results, nil
}

// checkWrite validates the arguments shared by ProduceLog and PutKv: the
// error is for a call that must not send anything.
func (c *Client) checkWrite(op string, tableID int64, acks Acks, timeout time.Duration, batches []BucketBatch) error {
	if !acks.valid() {
		return fmt.Errorf("fluss: %s: acks %d is not 0, 1 or -1", op, acks)
	}
	if timeout <= 0 || timeout.Milliseconds() > math.MaxInt32 {
		return fmt.Errorf("fluss: %s: timeout %v must be positive and below 2^31 ms", op, timeout)
	}
	if len(batches) == 0 {
		return nil
	}
	if _, ok := c.meta.pathOf(tableID); !ok {
		return fmt.Errorf("%w: %d", ErrUnknownTable, tableID)
	}
	seen := make(map[[2]int64]bool, len(batches))
	for i, b := range batches {
		k := bucketKey(b.PartitionID, b.Bucket)
		if seen[k] {
			// Fluss keys a write request by bucket; two batches for one
			// bucket in one request would lose one result.
			return fmt.Errorf("fluss: %s: batch %d repeats bucket %d (partition %d)", op, i, b.Bucket, k[0])
		}
		seen[k] = true
		if b.Records != nil && b.Parts != nil {
			return fmt.Errorf("fluss: %s: batch %d for bucket %d has both Records and Parts", op, i, b.Bucket)
		}
		if b.size() == 0 {
			return fmt.Errorf("fluss: %s: batch %d for bucket %d is empty", op, i, b.Bucket)
		}
	}
	return nil
}

// produceToLeader sends the batches at idxs to one leader and fills in their
// results. Each goroutine writes only its own positions of results.
func (c *Client) produceToLeader(ctx context.Context, node ServerNode, tableID int64, acks Acks, timeout time.Duration,
	batches []BucketBatch, idxs []int, results []BucketResult) {
	enc := produceEncoders.Get().(*produceEncoder)
	defer produceEncoders.Put(enc)
	parts := enc.encode(acks, tableID, int32(timeout.Milliseconds()), batches, idxs)
	var resp flussrpc.ProduceLogResponse
	if err := c.callServerParts(ctx, node.Addr(), APIProduceLog, parts, &resp); err != nil {
		for _, i := range idxs {
			results[i].Err = err
		}
		return
	}
	got := make(map[[2]int64]*flussrpc.ProduceLogResponseBucket, len(resp.GetBucketsResp()))
	for _, br := range resp.GetBucketsResp() {
		got[bucketKey(br.PartitionId, br.GetBucketId())] = br
	}
	for _, i := range idxs {
		br, ok := got[bucketKey(batches[i].PartitionID, batches[i].Bucket)]
		if !ok {
			results[i].Err = fmt.Errorf("%w: produce response from %s has no result for bucket %d", ErrProtocol, node.Addr(), batches[i].Bucket)
			continue
		}
		if err := newError(br.GetErrorCode(), br.GetErrorMessage()); err != nil {
			results[i].Err = err
			continue
		}
		if br.BaseOffset == nil {
			results[i].Err = fmt.Errorf("%w: produce response from %s has no base offset for bucket %d", ErrProtocol, node.Addr(), batches[i].Bucket)
			continue
		}
		if br.GetBaseOffset() < 0 {
			// Fluss answers success with offset -1 when the records held no
			// complete log batch (it appended nothing): a caller bug that
			// would otherwise look like a write.
			results[i].Err = fmt.Errorf("%w: bucket %d: server appended nothing from %d bytes of records (no complete log batch)",
				ErrInvalidRecords, batches[i].Bucket, batches[i].size())
			c.opts.logger.Warn("fluss: produce appended nothing", "table_id", tableID, "bucket", batches[i].Bucket,
				"records_bytes", batches[i].size(), "server", node.Addr())
			continue
		}
		results[i].BaseOffset = br.GetBaseOffset()
	}
}

// leaderKey names a bucket of the table a call is about.
type leaderKey struct {
	partitionID *int64
	bucket      int32
}

// groupByLeader looks up each bucket's leader and groups positions by leader
// id. Cache misses and leaderless buckets cause at most one metadata
// refresh per call, not one per bucket. Per-position lookup failures come
// back in errs (nil entries for found leaders); err is for a closed client
// or a canceled call.
func (c *Client) groupByLeader(ctx context.Context, tableID int64, keys []leaderKey) (
	groups map[int32][]int, nodes map[int32]ServerNode, errs []error, err error) {
	groups = make(map[int32][]int)
	nodes = make(map[int32]ServerNode)
	errs = make([]error, len(keys))
	var missed []int
	for i, k := range keys {
		if _, errs[i] = c.lookupLeader(tableID, k.partitionID, k.bucket); errs[i] != nil {
			missed = append(missed, i)
		}
	}
	refreshFailed := false
	if len(missed) > 0 {
		// One refresh covers the table and every partition that missed.
		var pids []int64
		for _, i := range missed {
			if p := keys[i].partitionID; p != nil && !slices.Contains(pids, *p) {
				pids = append(pids, *p)
			}
		}
		if rerr := c.refreshForPartitions(ctx, tableID, pids); rerr != nil {
			if errors.Is(rerr, ErrClosed) || ctx.Err() != nil {
				return nil, nil, nil, rerr
			}
			for _, i := range missed {
				errs[i] = rerr
			}
			refreshFailed = true
		}
	}
	for i, k := range keys {
		if errs[i] != nil && refreshFailed {
			continue
		}
		n, lerr := c.lookupLeader(tableID, k.partitionID, k.bucket)
		errs[i] = lerr
		if lerr == nil {
			groups[n.ID] = append(groups[n.ID], i)
			nodes[n.ID] = n
		}
	}
	return groups, nodes, errs, nil
}

// forEachLeader runs fn for every leader's group, in parallel; the last group
// runs on the calling goroutine, so the common single-leader case starts no
// goroutine. It returns when all are done.
func forEachLeader(groups map[int32][]int, fn func(id int32, idxs []int)) {
	var wg sync.WaitGroup
	n := 0
	for id, idxs := range groups {
		n++
		if n == len(groups) {
			fn(id, idxs)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(id, idxs)
		}()
	}
	wg.Wait()
}

// produceEncoders recycles request encoders (their scratch buffers) across
// ProduceLog calls.
var produceEncoders = sync.Pool{New: func() any { return new(produceEncoder) }}

func bucketKey(partitionID *int64, bucket int32) [2]int64 {
	p := int64(-1)
	if partitionID != nil {
		p = *partitionID
	}
	return [2]int64{p, int64(bucket)}
}

// FetchBucket asks for one bucket's records from an offset.
type FetchBucket struct {
	PartitionID *int64
	Bucket      int32
	Offset      int64
	// MaxBytes bounds this bucket's records; 0 means 1 MiB.
	MaxBytes int32
}

// FetchResult is one bucket's answer to FetchLog.
type FetchResult struct {
	PartitionID   *int64
	Bucket        int32
	HighWatermark int64
	// LogStartOffset is the first offset the bucket's log still holds
	// (locally or in remote storage); -1 when the server did not say.
	LogStartOffset int64
	// Records are the raw log batches, as stored (possibly several, the
	// last possibly cut short by MaxBytes).
	Records []byte
	// RemoteEndOffset, with Err ErrRemoteLog, is the highest end offset of
	// the remote log segments the server named for the offset read: the
	// local log starts at or before it (or just after, as the end is
	// inclusive or not).
	RemoteEndOffset int64
	Err             error
}

// FetchOptions tune FetchLog. Zero values pick the defaults.
type FetchOptions struct {
	MaxBytes  int32 // whole response; default 16 MiB
	MinBytes  int32 // server waits for this much; default 1
	MaxWaitMs int32 // server waits at most this long; default 0 (no wait)
}

// FetchLog reads records from a log table's buckets, asking each bucket's
// leader. It is for read-back in tools and tests, not a consumer: it does no
// offset tracking and no remote-log reads (buckets whose data was tiered
// away come back with an error).
func (c *Client) FetchLog(ctx context.Context, tableID int64, buckets []FetchBucket, opt FetchOptions) (_ []FetchResult, err error) {
	ctx, end := c.startSpan(ctx, "FetchLog", attribute.Int64("fluss.table_id", tableID))
	defer end(&err)
	if _, ok := c.meta.pathOf(tableID); !ok {
		return nil, fmt.Errorf("%w: %d", ErrUnknownTable, tableID)
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = 16 << 20
	}
	if opt.MinBytes <= 0 {
		opt.MinBytes = 1
	}
	results := make([]FetchResult, len(buckets))
	keys := make([]leaderKey, len(buckets))
	for i, b := range buckets {
		results[i] = FetchResult{PartitionID: b.PartitionID, Bucket: b.Bucket, HighWatermark: -1, LogStartOffset: -1}
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
		c.fetchFromLeader(ctx, nodes[id], tableID, opt, buckets, idxs, results)
	})
	for _, r := range results {
		if staleRoute(r.Err) {
			c.meta.invalidate(tableID)
			break
		}
	}
	return results, nil
}

func (c *Client) fetchFromLeader(ctx context.Context, node ServerNode, tableID int64, opt FetchOptions,
	buckets []FetchBucket, idxs []int, results []FetchResult) {
	tr := &flussrpc.FetchLogRequestTable{TableId: proto.Int64(tableID), ProjectionPushdownEnabled: proto.Bool(false)}
	for _, i := range idxs {
		b := buckets[i]
		mb := b.MaxBytes
		if mb <= 0 {
			mb = 1 << 20
		}
		tr.BucketsReq = append(tr.BucketsReq, &flussrpc.FetchLogRequestBucket{
			PartitionId: b.PartitionID, BucketId: proto.Int32(b.Bucket),
			FetchOffset: proto.Int64(b.Offset), MaxFetchBytes: proto.Int32(mb),
		})
	}
	req := &flussrpc.FetchLogRequest{
		FollowerServerId: proto.Int32(-1),
		MaxBytes:         proto.Int32(opt.MaxBytes),
		MinBytes:         proto.Int32(opt.MinBytes),
		MaxWaitMs:        proto.Int32(opt.MaxWaitMs),
		TablesReq:        []*flussrpc.FetchLogRequestTable{tr},
	}
	var resp flussrpc.FetchLogResponse
	if err := c.callServer(ctx, node.Addr(), APIFetchLog, true, req, &resp); err != nil {
		for _, i := range idxs {
			results[i].Err = err
		}
		return
	}
	got := make(map[[2]int64]*flussrpc.FetchLogResponseBucket)
	for _, t := range resp.GetTablesResp() {
		if t.GetTableId() != tableID {
			continue
		}
		for _, br := range t.GetBucketsResp() {
			got[bucketKey(br.PartitionId, br.GetBucketId())] = br
		}
	}
	for _, i := range idxs {
		br, ok := got[bucketKey(buckets[i].PartitionID, buckets[i].Bucket)]
		if !ok {
			results[i].Err = fmt.Errorf("%w: fetch response from %s has no result for bucket %d", ErrProtocol, node.Addr(), buckets[i].Bucket)
			continue
		}
		if err := newError(br.GetErrorCode(), br.GetErrorMessage()); err != nil {
			results[i].Err = err
			continue
		}
		if br.RemoteLogFetchInfo != nil {
			for _, seg := range br.RemoteLogFetchInfo.GetRemoteLogSegments() {
				results[i].RemoteEndOffset = max(results[i].RemoteEndOffset, seg.GetRemoteLogEndOffset())
			}
			results[i].Err = fmt.Errorf("%w: bucket %d at offset %d (FetchLog does not read remote storage)", ErrRemoteLog, buckets[i].Bucket, buckets[i].Offset)
			continue
		}
		results[i].HighWatermark = br.GetHighWatermark()
		if br.LogStartOffset != nil {
			results[i].LogStartOffset = br.GetLogStartOffset()
		}
		results[i].Records = br.GetRecords()
	}
}

// OffsetSpec picks which offset ListOffsets returns (Fluss's
// ListOffsetsParam offset types).
type OffsetSpec int32

const (
	// OffsetEarliest is the first offset still in the log.
	OffsetEarliest OffsetSpec = 0
	// OffsetLatest is the offset the next appended record will get (the
	// high watermark for clients).
	OffsetLatest OffsetSpec = 1
	// offsetByTimestamp is the first offset whose batch was committed at
	// or after a timestamp (OffsetsForTimestamp).
	offsetByTimestamp OffsetSpec = 2
)

// ListOffsets returns, per bucket, the earliest or latest offset. Buckets are
// asked of their leaders. partitionID is nil for non-partitioned tables. The
// result maps bucket id to offset; buckets that failed are in the error
// (errors.Join of per-bucket errors), next to the ones that succeeded.
func (c *Client) ListOffsets(ctx context.Context, tableID int64, partitionID *int64, buckets []int32, spec OffsetSpec) (map[int32]int64, error) {
	if spec != OffsetEarliest && spec != OffsetLatest {
		return nil, fmt.Errorf("fluss: list offsets: offset spec %d is not earliest (0) or latest (1)", spec)
	}
	return c.listOffsets(ctx, tableID, partitionID, buckets, spec, nil)
}

// OffsetsForTimestamp returns, per bucket, the offset of the first batch
// the leader committed (appended) at or after timestampMs, epoch
// milliseconds: Fluss indexes its log by commit time, not by any column.
// For a timestamp after the last batch it is the latest offset. Results and
// errors are as for ListOffsets.
func (c *Client) OffsetsForTimestamp(ctx context.Context, tableID int64, partitionID *int64, buckets []int32, timestampMs int64) (map[int32]int64, error) {
	return c.listOffsets(ctx, tableID, partitionID, buckets, offsetByTimestamp, &timestampMs)
}

func (c *Client) listOffsets(ctx context.Context, tableID int64, partitionID *int64, buckets []int32, spec OffsetSpec, timestampMs *int64) (_ map[int32]int64, err error) {
	ctx, end := c.startSpan(ctx, "ListOffsets", attribute.Int64("fluss.table_id", tableID), attribute.Int("fluss.offset_type", int(spec)))
	defer end(&err)
	keys := make([]leaderKey, len(buckets))
	for i, b := range buckets {
		keys[i] = leaderKey{partitionID, b}
	}
	byPos, nodes, lookupErrs, err := c.groupByLeader(ctx, tableID, keys)
	if err != nil {
		return nil, err
	}
	var errs []error
	for i, e := range lookupErrs {
		if e != nil {
			errs = append(errs, fmt.Errorf("bucket %d: %w", buckets[i], e))
		}
	}
	groups := make(map[int32][]int32, len(byPos))
	for id, idxs := range byPos {
		for _, i := range idxs {
			groups[id] = append(groups[id], buckets[i])
		}
	}
	out := make(map[int32]int64, len(buckets))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, bs := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &flussrpc.ListOffsetsRequest{
				FollowerServerId: proto.Int32(-1),
				OffsetType:       proto.Int32(int32(spec)),
				TableId:          proto.Int64(tableID),
				PartitionId:      partitionID,
				BucketId:         bs,
				StartTimestamp:   timestampMs,
			}
			var resp flussrpc.ListOffsetsResponse
			rerr := c.callServer(ctx, nodes[id].Addr(), APIListOffsets, true, req, &resp)
			mu.Lock()
			defer mu.Unlock()
			if rerr != nil {
				errs = append(errs, fmt.Errorf("buckets %v: %w", bs, rerr))
				return
			}
			for _, br := range resp.GetBucketsResp() {
				if e := newError(br.GetErrorCode(), br.GetErrorMessage()); e != nil {
					errs = append(errs, fmt.Errorf("bucket %d: %w", br.GetBucketId(), e))
					continue
				}
				out[br.GetBucketId()] = br.GetOffset()
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if staleRoute(e) {
			c.meta.invalidate(tableID)
			break
		}
	}
	for _, b := range buckets {
		if _, ok := out[b]; !ok && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("%w: no offset returned for bucket %d", ErrProtocol, b))
		}
	}
	return out, errors.Join(errs...)
}

// InitWriter asks a tablet server for a new writer id, used by idempotent
// producers to tag their batches. paths are the tables the writer will
// write to.
func (c *Client) InitWriter(ctx context.Context, paths ...TablePath) (_ int64, err error) {
	ctx, end := c.startSpan(ctx, "InitWriter")
	defer end(&err)
	if len(c.Servers()) == 0 {
		if err := c.fetchMetadata(ctx, nil, nil); err != nil {
			return 0, err
		}
	}
	req := &flussrpc.InitWriterRequest{}
	for _, p := range paths {
		req.TablePath = append(req.TablePath, p.pb())
	}
	var errs []error
	for _, n := range c.Servers() {
		var resp flussrpc.InitWriterResponse
		err := c.callServer(ctx, n.Addr(), APIInitWriter, false, req, &resp)
		if err == nil {
			return resp.GetWriterId(), nil
		}
		errs = append(errs, err)
		var fe *Error
		if errors.As(err, &fe) || ctx.Err() != nil {
			break // the server answered: another would answer the same
		}
	}
	if len(errs) == 0 {
		return 0, fmt.Errorf("%w: no tablet server in metadata", ErrNoLeader)
	}
	return 0, fmt.Errorf("fluss: init writer: %w", errors.Join(errs...))
}
