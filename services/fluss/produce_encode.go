package fluss

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// ProduceLogRequest field numbers (FlussApi.proto, mirrored in
// proto/fluss/rpc/v1): the request and its per-bucket entries.
const (
	produceFieldAcks      protowire.Number = 1
	produceFieldTableID   protowire.Number = 2
	produceFieldTimeoutMs protowire.Number = 3
	produceFieldBuckets   protowire.Number = 4

	produceBucketFieldPartitionID protowire.Number = 1
	produceBucketFieldBucketID    protowire.Number = 2
	produceBucketFieldRecords     protowire.Number = 3

	// PutKvRequest shares acks, table id, timeout and the bucket message's
	// fields; its buckets are field 5 (after target_columns, which Ferry
	// never sets) and agg_mode follows them.
	putKvFieldBuckets protowire.Number = 5
	putKvFieldAggMode protowire.Number = 6
)

// aggModeAggregate is PutKvRequest.agg_mode 0: merge through the table's
// merge engine, what the Java client sends by default.
const aggModeAggregate = 0

// produceEncoder encodes a ProduceLogRequest (or PutKvRequest) as parts for a vectored write:
// the small protobuf framing goes into one scratch buffer, and each bucket's
// records are referenced where the caller keeps them, never copied. The
// bytes are exactly what proto.Marshal produces for the same request
// (fields in number order), which the tests check.
type produceEncoder struct {
	scratch []byte
	// spans lists the parts in order: scratch[start:end], or a records
	// slice when records is non-nil. Offsets, not slices, because scratch
	// may move while it grows.
	spans []produceSpan
}

type produceSpan struct {
	start, end int
	records    []byte
}

// encode builds the ProduceLogRequest for the batches at idxs and returns
// its parts. The parts alias e.scratch and the batches' records until the
// next encode.
func (e *produceEncoder) encode(acks Acks, tableID int64, timeoutMs int32, batches []BucketBatch, idxs []int) [][]byte {
	return e.encodeRequest(acks, tableID, timeoutMs, produceFieldBuckets, -1, batches, idxs)
}

// encodePutKv is encode for a PutKvRequest writing whole rows (no target
// columns) with agg_mode aggregate.
func (e *produceEncoder) encodePutKv(acks Acks, tableID int64, timeoutMs int32, batches []BucketBatch, idxs []int) [][]byte {
	return e.encodeRequest(acks, tableID, timeoutMs, putKvFieldBuckets, aggModeAggregate, batches, idxs)
}

// encodeRequest writes the shared layout: acks, table id, timeout, one
// bucket message per batch under bucketsField, then agg_mode unless it is
// negative.
func (e *produceEncoder) encodeRequest(acks Acks, tableID int64, timeoutMs int32, bucketsField protowire.Number, aggMode int32,
	batches []BucketBatch, idxs []int) [][]byte {
	e.scratch = e.scratch[:0]
	e.spans = e.spans[:0]
	b := e.scratch
	b = protowire.AppendTag(b, produceFieldAcks, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(int64(acks))) // int32: negative values sign-extend to 10 bytes
	b = protowire.AppendTag(b, produceFieldTableID, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(tableID))
	b = protowire.AppendTag(b, produceFieldTimeoutMs, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(int64(timeoutMs)))
	start := 0
	for _, i := range idxs {
		bb := batches[i]
		// The bucket message: optional partition id, bucket id, records.
		inner := 0
		if bb.PartitionID != nil {
			inner += protowire.SizeTag(produceBucketFieldPartitionID) + protowire.SizeVarint(uint64(*bb.PartitionID))
		}
		inner += protowire.SizeTag(produceBucketFieldBucketID) + protowire.SizeVarint(uint64(int64(bb.Bucket)))
		inner += protowire.SizeTag(produceBucketFieldRecords) + protowire.SizeBytes(bb.size())

		b = protowire.AppendTag(b, bucketsField, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(inner))
		if bb.PartitionID != nil {
			b = protowire.AppendTag(b, produceBucketFieldPartitionID, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(*bb.PartitionID))
		}
		b = protowire.AppendTag(b, produceBucketFieldBucketID, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(bb.Bucket)))
		b = protowire.AppendTag(b, produceBucketFieldRecords, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(bb.size()))
		e.spans = append(e.spans, produceSpan{start: start, end: len(b)})
		if bb.Parts == nil {
			e.spans = append(e.spans, produceSpan{records: bb.Records})
		}
		for _, p := range bb.Parts {
			if len(p) > 0 {
				e.spans = append(e.spans, produceSpan{records: p})
			}
		}
		start = len(b)
	}
	if aggMode >= 0 {
		b = protowire.AppendTag(b, putKvFieldAggMode, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(aggMode))
	}
	if start < len(b) {
		e.spans = append(e.spans, produceSpan{start: start, end: len(b)})
	}
	e.scratch = b
	parts := make([][]byte, 0, len(e.spans))
	for _, s := range e.spans {
		if s.records != nil {
			parts = append(parts, s.records)
		} else {
			parts = append(parts, b[s.start:s.end])
		}
	}
	return parts
}
