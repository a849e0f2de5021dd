package kafka

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Record batch v2 header layout (DefaultRecordBatch).
const (
	batchLengthOffset     = 8
	batchMagicOffset      = 16
	batchAttributesOffset = 21
	batchLastDeltaOffset  = 23
	batchProducerIDOffset = 43
	batchEpochOffset      = 51
	batchBaseSeqOffset    = 53
	batchRecordsOffset    = 61 // header size
	batchLogOverhead      = 12 // baseOffset + batchLength

	attrTransactional = 0x10
	attrControl       = 0x20
)

// batchProblem is why a partition's records were refused before
// transcoding, as a Kafka error.
type batchProblem struct {
	code int16
	msg  string
}

// checkBatch does the checks a broker does on the frame of a produce
// payload before looking inside: exactly one magic-2 batch of consistent
// length, within the size limit, neither transactional nor control, and,
// when it names a producer, with a usable epoch and sequence. The CRC and
// the records themselves are checked by transcodesvc.
func checkBatch(b []byte, maxBytes int) *batchProblem {
	switch {
	case len(b) == 0:
		return &batchProblem{kerr.InvalidRecord.Code, "produce request with version 3+ must contain exactly one record batch; got none"}
	case len(b) > maxBytes:
		return &batchProblem{kerr.MessageTooLarge.Code, fmt.Sprintf("record batch of %d bytes exceeds the limit of %d bytes", len(b), maxBytes)}
	case len(b) < batchRecordsOffset:
		return &batchProblem{kerr.CorruptMessage.Code, fmt.Sprintf("record batch of %d bytes is shorter than the %d-byte v2 header", len(b), batchRecordsOffset)}
	}
	if magic := int8(b[batchMagicOffset]); magic != 2 {
		return &batchProblem{kerr.InvalidRecord.Code, fmt.Sprintf("record batch magic %d; produce v3+ requires magic 2", magic)}
	}
	length := int64(int32(binary.BigEndian.Uint32(b[batchLengthOffset:])))
	total := length + batchLogOverhead
	switch {
	case length < batchRecordsOffset-batchLogOverhead || total > int64(len(b)):
		return &batchProblem{kerr.CorruptMessage.Code, fmt.Sprintf("record batch length %d does not fit the %d bytes sent", length, len(b))}
	case total < int64(len(b)):
		return &batchProblem{kerr.InvalidRecord.Code, "produce request with version 3+ must contain exactly one record batch; got more"}
	}
	attrs := binary.BigEndian.Uint16(b[batchAttributesOffset:])
	switch {
	case attrs&attrControl != 0:
		return &batchProblem{kerr.InvalidRecord.Code, "control batches cannot be produced"}
	case attrs&attrTransactional != 0:
		return &batchProblem{kerr.TransactionalIDAuthorizationFailed.Code, "transactional produce is not supported by ferry"}
	}
	id := producerOf(b)
	switch {
	case id.producerID < -1:
		return &batchProblem{kerr.InvalidRecord.Code, fmt.Sprintf("record batch producer id %d is negative but not -1", id.producerID)}
	case id.producerID >= 0 && (id.epoch < 0 || id.firstSeq < 0):
		return &batchProblem{kerr.InvalidRecord.Code, fmt.Sprintf("idempotent record batch of producer %d has epoch %d and base sequence %d; both must be non-negative",
			id.producerID, id.epoch, id.firstSeq)}
	case id.producerID >= 0 && int32(binary.BigEndian.Uint32(b[batchLastDeltaOffset:])) < 0:
		return &batchProblem{kerr.InvalidRecord.Code, "record batch last offset delta is negative"}
	}
	return nil
}

// producerOf reads the producer fields of a batch header checkBatch
// accepted. The last sequence wraps past MaxInt32 as Kafka's does.
func producerOf(b []byte) batchIdentity {
	id := batchIdentity{
		producerID: int64(binary.BigEndian.Uint64(b[batchProducerIDOffset:])),
		epoch:      int16(binary.BigEndian.Uint16(b[batchEpochOffset:])),
		firstSeq:   int32(binary.BigEndian.Uint32(b[batchBaseSeqOffset:])),
	}
	delta := int32(binary.BigEndian.Uint32(b[batchLastDeltaOffset:]))
	if id.firstSeq > math.MaxInt32-delta {
		id.lastSeq = delta - (math.MaxInt32 - id.firstSeq) - 1
	} else {
		id.lastSeq = id.firstSeq + delta
	}
	return id
}
