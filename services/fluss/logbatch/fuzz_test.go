package logbatch_test

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// FuzzDecode feeds corrupted batches to the read path, which handles bytes
// from the network: it may reject them but must not panic or hang.
func FuzzDecode(f *testing.F) {
	cols := goldentest.AllTypesColumns()[:12]
	rec, err := goldentest.Record(memory.NewGoAllocator(), cols, 6, 1, 30)
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range []logbatch.Compression{logbatch.CompressionNone, logbatch.CompressionLZ4Frame, logbatch.CompressionZSTD} {
		o := logbatch.DefaultOptions(1)
		o.Compression = c
		b, err := logbatch.Build(rec, o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	schema, err := types.ArrowSchema(cols)
	if err != nil {
		f.Fatal(err)
	}
	dec, err := logbatch.NewDecoder(schema, memory.NewGoAllocator())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// The engine owns in (it must not be modified), so work on a copy.
		b := append([]byte(nil), in...)
		// Most mutations break the CRC, which stops everything at the
		// header; re-seal the batch so the Arrow part gets exercised too.
		if len(b) >= logbatch.HeaderSize(logbatch.MagicV0) && b[12] == logbatch.MagicV0 {
			binary.LittleEndian.PutUint32(b[8:], uint32(len(b)-logbatch.LogOverhead))
			binary.LittleEndian.PutUint32(b[21:], crc32.Checksum(b[25:], crc32.MakeTable(crc32.Castagnoli)))
		}
		it := logbatch.NewIterator(b)
		for it.Next() {
			batch := it.Batch()
			_, _ = logbatch.ParseMessage(batch.Arrow)
			if r, err := dec.Decode(batch); err == nil {
				r.Release()
			}
		}
	})
}
