package reader

import (
	"context"
	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	"hash/crc32"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/services/fluss/logbatch"
)

// A Fluss batch without records (a primary-key write that changed nothing)
// takes offsets: it is served as a Kafka batch without records spanning
// them, so a consumer fetching there steps over it by its last offset delta
// instead of getting nothing below the high watermark.
func TestConvertLogKeepsEmptyBatches(t *testing.T) {
	p, log := benchLog(t, 3) // offsets 0-2
	rb := array.NewRecordBuilder(memory.DefaultAllocator, p.arrow)
	empty := rb.NewRecordBatch()
	defer empty.Release()
	rb.Release()
	for _, off := range []int64{3, 4} {
		b, err := logbatch.Build(empty, logbatch.DefaultOptions(0))
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, stampOffset(b, off)...)
	}
	plans := func(context.Context, int16) (*schemaPlan, error) { return p, nil }
	comp, err := rebuild.NewCompressor(rebuild.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		from   int // byte position in log of the first batch converted
		bases  []int64
		counts []int
	}{
		{"records then empty batches", 0, []int64{0, 3, 4}, []int{3, 0, 0}},
		{"only empty batches", len(log) - 2*logbatch.HeaderSize(logbatch.MagicV0), []int64{3, 4}, []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := convertLog(context.Background(), log[tc.from:], 1<<20, defaultGrowth, comp, plans)
			if err != nil {
				t.Fatal(err)
			}
			if c.batches != len(tc.bases) || c.records != tc.counts[0] {
				t.Fatalf("%d batches, %d records; want %d, %d", c.batches, c.records, len(tc.bases), tc.counts[0])
			}
			rest := c.kafka
			for i, base := range tc.bases {
				var kb kmsg.RecordBatch
				if err := kb.ReadFrom(rest); err != nil {
					t.Fatalf("batch %d: %v", i, err)
				}
				size := 12 + int(kb.Length)
				if kb.FirstOffset != base || int(kb.NumRecords) != tc.counts[i] || kb.Magic != 2 {
					t.Errorf("batch %d: base %d, %d records, magic %d; want base %d, %d records, magic 2",
						i, kb.FirstOffset, kb.NumRecords, kb.Magic, base, tc.counts[i])
				}
				if want := int32(max(tc.counts[i]-1, 0)); kb.LastOffsetDelta != want {
					t.Errorf("batch %d: last offset delta %d, want %d", i, kb.LastOffsetDelta, want)
				}
				if crc := crc32.Checksum(rest[21:size], crc32.MakeTable(crc32.Castagnoli)); uint32(kb.CRC) != crc {
					t.Errorf("batch %d: CRC %x, computed %x", i, uint32(kb.CRC), crc)
				}
				rest = rest[size:]
			}
			if len(rest) != 0 {
				t.Errorf("%d bytes after the batches", len(rest))
			}
		})
	}
}
