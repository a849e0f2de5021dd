package kvbatch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Header is a decoded batch header.
type Header struct {
	Magic         byte
	CRC           uint32
	SchemaID      int16
	Attributes    byte
	WriterID      int64
	BatchSequence int32
	RecordCount   int32
}

// Record is one decoded record; Row is nil for a delete. Both alias the
// batch.
type Record struct {
	Key []byte
	Row []byte
}

// Decode checks one whole batch (length, magic, CRC, record framing) and
// returns its header and records, as Fluss's DefaultKvRecordBatch reads
// them. It is for tests and tools; the server does the same checks.
func Decode(b []byte) (Header, []Record, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, nil, fmt.Errorf("kvbatch: %d bytes are shorter than the %d-byte header", len(b), HeaderSize)
	}
	if n := int64(binary.LittleEndian.Uint32(b[offLength:])) + lengthSize; n != int64(len(b)) {
		return h, nil, fmt.Errorf("kvbatch: length field says %d bytes, have %d", n, len(b))
	}
	h = Header{
		Magic:         b[offMagic],
		CRC:           binary.LittleEndian.Uint32(b[offCRC:]),
		SchemaID:      int16(binary.LittleEndian.Uint16(b[offSchemaID:])),
		Attributes:    b[offAttributes],
		WriterID:      int64(binary.LittleEndian.Uint64(b[offWriterID:])),
		BatchSequence: int32(binary.LittleEndian.Uint32(b[offBatchSequence:])),
		RecordCount:   int32(binary.LittleEndian.Uint32(b[offRecordCount:])),
	}
	if h.Magic != MagicV0 {
		return h, nil, fmt.Errorf("kvbatch: magic %d, want %d", h.Magic, MagicV0)
	}
	if got := crc32.Checksum(b[offSchemaID:], castagnoli); got != h.CRC {
		return h, nil, fmt.Errorf("kvbatch: CRC %08x, computed %08x", h.CRC, got)
	}
	if h.RecordCount < 0 {
		return h, nil, fmt.Errorf("kvbatch: record count %d", h.RecordCount)
	}
	recs := make([]Record, 0, min(int(h.RecordCount), len(b)/6))
	p := HeaderSize
	for i := range int(h.RecordCount) {
		if len(b)-p < lengthSize {
			return h, nil, fmt.Errorf("kvbatch: record %d: truncated length", i)
		}
		n := int(binary.LittleEndian.Uint32(b[p:]))
		p += lengthSize
		if n < 0 || n > len(b)-p {
			return h, nil, fmt.Errorf("kvbatch: record %d: length %d overruns the batch", i, n)
		}
		r := b[p : p+n]
		p += n
		kl, w := binary.Uvarint(r)
		if w <= 0 || kl > uint64(len(r)-w) {
			return h, nil, fmt.Errorf("kvbatch: record %d: bad key length", i)
		}
		rec := Record{Key: r[w : w+int(kl)]}
		if rest := r[w+int(kl):]; len(rest) > 0 {
			rec.Row = rest
		}
		recs = append(recs, rec)
	}
	if p != len(b) {
		return h, nil, fmt.Errorf("kvbatch: %d bytes after record %d", len(b)-p, h.RecordCount)
	}
	return h, recs, nil
}
