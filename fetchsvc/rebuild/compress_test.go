package rebuild

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/services/recordbatch"
)

// TestCompressorBatches: every codec's batch carries the uncompressed
// batch's records, decoded with franz-go's decompressor as a consumer
// would, under a header that differs only in length, codec bits and CRC;
// a compressor is reused across batches.
func TestCompressorBatches(t *testing.T) {
	recs := make([]Record, 50)
	for i := range recs {
		recs[i] = Record{Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf(`{"id":%d,"name":"name-of-the-row"}`, i)),
			Timestamp: 1000 + int64(i), OffsetDelta: int32(i), Headers: []Header{{Key: "h", Value: []byte("v")}}}
	}
	plain, err := recordbatch.AppendBatch(nil, 500, 49, recs)
	if err != nil {
		t.Fatal(err)
	}
	dec := kgo.DefaultDecompressor()
	for _, codec := range []Codec{CodecGzip, CodecLZ4, CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			c, err := NewCompressor(codec)
			if err != nil {
				t.Fatal(err)
			}
			out := []byte("prefix")
			for range 2 {
				if out, err = c.AppendBatch(out, 500, 49, recs); err != nil {
					t.Fatal(err)
				}
			}
			rest := out[len("prefix"):]
			for n := 0; len(rest) > 0; n++ {
				var h kmsg.RecordBatch
				if err := h.ReadFrom(rest); err != nil {
					t.Fatalf("batch %d: %v", n, err)
				}
				size := int(h.Length) + 12
				b := rest[:size]
				rest = rest[size:]
				if Codec(h.Attributes&7) != codec || h.FirstOffset != 500 || h.NumRecords != 50 || h.LastOffsetDelta != 49 {
					t.Fatalf("batch %d: header %+v", n, h)
				}
				if got := crc32.Checksum(b[recordbatch.OffsetAttributes:], crc32.MakeTable(crc32.Castagnoli)); got != binary.BigEndian.Uint32(b[recordbatch.OffsetCRC:]) {
					t.Fatalf("batch %d: CRC mismatch", n)
				}
				if len(b) >= len(plain) {
					t.Errorf("batch %d: %d bytes compressed, %d plain", n, len(b), len(plain))
				}
				records, err := dec.Decompress(h.Records, kgo.CompressionCodecType(codec))
				if err != nil {
					t.Fatalf("batch %d: %v", n, err)
				}
				if !bytes.Equal(records, plain[recordbatch.HeaderSize:]) {
					t.Fatalf("batch %d: records differ after decompression", n)
				}
				if !bytes.Equal(b[:recordbatch.OffsetBatchLength], plain[:recordbatch.OffsetBatchLength]) || !bytes.Equal(b[recordbatch.OffsetAttributes+2:recordbatch.HeaderSize], plain[recordbatch.OffsetAttributes+2:recordbatch.HeaderSize]) {
					t.Fatalf("batch %d: header fields differ from the plain batch", n)
				}
			}
		})
	}
}

func TestCompressorNoneAndUnknown(t *testing.T) {
	c, err := NewCompressor(CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	recs := []Record{{Value: []byte("x")}}
	got, err := c.AppendBatch(nil, 3, 0, recs)
	want, _ := recordbatch.AppendBatch(nil, 3, 0, recs)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("none: %v, differs %v", err, !bytes.Equal(got, want))
	}
	if _, err := NewCompressor(2); err == nil {
		t.Fatal("snappy accepted")
	}
}

// BenchmarkCompressor: one batch of 1000 JSON records per codec, per record.
func BenchmarkCompressor(b *testing.B) {
	recs := make([]Record, 1000)
	for i := range recs {
		recs[i] = Record{Value: fmt.Appendf(nil, `{"id":%d,"n":%d,"score":%g,"ok":true,"note":"a note","name":"name-of-the-row","amount":"%d.01"}`, i, i%1000, float64(i)/7, i), OffsetDelta: int32(i)}
	}
	for _, codec := range []Codec{CodecNone, CodecLZ4, CodecZstd, CodecGzip} {
		b.Run(codec.String(), func(b *testing.B) {
			c, err := NewCompressor(codec)
			if err != nil {
				b.Fatal(err)
			}
			var out []byte
			for b.Loop() {
				if out, err = c.AppendBatch(out[:0], 0, 999, recs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
			b.ReportMetric(float64(len(out))/float64(len(recs)), "bytes/record")
		})
	}
}

// TestCompressorLeavesEmptyBatchesPlain: a batch without records (a Fluss
// batch that only takes offsets) is written uncompressed whatever the
// codec, as Kafka writes its own; librdkafka 2.0 aborts decompressing an
// lz4 frame of nothing.
func TestCompressorLeavesEmptyBatchesPlain(t *testing.T) {
	plain, err := recordbatch.AppendBatch(nil, 7, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []Codec{CodecGzip, CodecLZ4, CodecZstd} {
		c, err := NewCompressor(codec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.AppendBatch(nil, 7, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, plain) {
			t.Errorf("%v: empty batch %x, want the plain one %x", codec, got, plain)
		}
	}
}
