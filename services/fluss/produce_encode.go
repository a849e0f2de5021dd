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
)

// produceEncoder encodes a ProduceLogRequest as parts for a vectored write:
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

// encode builds the request for the batches at idxs and returns its parts.
// The parts alias e.scratch and the batches' records until the next encode.
func (e *produceEncoder) encode(acks Acks, tableID int64, timeoutMs int32, batches []BucketBatch, idxs []int) [][]byte {
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
		inner += protowire.SizeTag(produceBucketFieldRecords) + protowire.SizeBytes(len(bb.Records))

		b = protowire.AppendTag(b, produceFieldBuckets, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(inner))
		if bb.PartitionID != nil {
			b = protowire.AppendTag(b, produceBucketFieldPartitionID, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(*bb.PartitionID))
		}
		b = protowire.AppendTag(b, produceBucketFieldBucketID, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(bb.Bucket)))
		b = protowire.AppendTag(b, produceBucketFieldRecords, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(len(bb.Records)))
		e.spans = append(e.spans, produceSpan{start: start, end: len(b)}, produceSpan{records: bb.Records})
		start = len(b)
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
