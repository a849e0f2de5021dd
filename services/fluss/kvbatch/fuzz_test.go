package kvbatch_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/ferrygw/ferry/services/fluss/kvbatch"
)

// FuzzDecode feeds corrupted batches to Decode: it may reject them but must
// not panic, and what it accepts must rebuild to the same bytes.
func FuzzDecode(f *testing.F) {
	b := kvbatch.NewBuilder()
	_ = b.Append([]byte{1, 2}, []byte{0, 5, 'a'})
	_ = b.AppendDelete([]byte{3})
	seed, _ := b.Build(kvbatch.Options{SchemaID: 1, WriterID: 7, BatchSequence: 0})
	f.Add(bytes.Clone(seed))
	f.Fuzz(func(t *testing.T, in []byte) {
		// Re-seal length and CRC so that mutations reach the records.
		if len(in) >= kvbatch.HeaderSize {
			binary.LittleEndian.PutUint32(in, uint32(len(in)-4))
			binary.LittleEndian.PutUint32(in[5:], crc32.Checksum(in[9:], crc32.MakeTable(crc32.Castagnoli)))
		}
		h, recs, err := kvbatch.Decode(in)
		if err != nil || h.Attributes != 0 || (h.WriterID == kvbatch.NoWriterID) != (h.BatchSequence == kvbatch.NoBatchSequence) ||
			h.WriterID < kvbatch.NoWriterID || h.BatchSequence < kvbatch.NoBatchSequence || h.SchemaID < 0 {
			return
		}
		rb := kvbatch.NewBuilder()
		for _, r := range recs {
			if err := rb.Append(r.Key, r.Row); err != nil {
				return // an empty key decodes but is never built
			}
		}
		out, err := rb.Build(kvbatch.Options{SchemaID: h.SchemaID, WriterID: h.WriterID, BatchSequence: h.BatchSequence})
		if err != nil {
			t.Fatal(err)
		}
		// A key length varint may be written non-minimally; Go writes it minimally.
		if len(out) == len(in) && !bytes.Equal(out, in) {
			t.Fatalf("decoded and rebuilt batch differs:\n% x\n% x", in, out)
		}
	})
}
