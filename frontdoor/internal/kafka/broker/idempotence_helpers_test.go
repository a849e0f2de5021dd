package broker

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/ferrygw/ferry/services/recordbatch"
)

// idemBatch encodes values as an idempotent producer's batch: producer id,
// epoch and base sequence set.
func idemBatch(producerID int64, epoch int16, seq int32, values ...string) []byte {
	b := batchWith(values, producerID, 0)
	binary.BigEndian.PutUint16(b[recordbatch.OffsetProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[recordbatch.OffsetBaseSequence:], uint32(seq))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}
