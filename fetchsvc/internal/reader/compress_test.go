package reader

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// TestConvertLogCompressed: a topic's fetch codec reaches every batch of
// the answer, and the batches hold what the uncompressed answer holds.
func TestConvertLogCompressed(t *testing.T) {
	p, log := benchLog(t, 2500)
	plans := func(context.Context, int16) (*schemaPlan, error) { return p, nil }
	cs := newCompressors(1)
	convert := func(fc catalogv1.FetchCompression) converted {
		codec, err := codecOf(&catalogv1.TopicMapping{FetchCompression: fc})
		if err != nil {
			t.Fatal(err)
		}
		comp, err := cs.get(codec)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.put(comp)
		c, err := convertLog(context.Background(), log, 64<<20, defaultGrowth, comp, plans)
		if err != nil || c.records != 2500 || c.batches != 3 {
			t.Fatalf("%v: %d records in %d batches, %v", fc, c.records, c.batches, err)
		}
		return c
	}
	plain := convert(catalogv1.FetchCompression_FETCH_COMPRESSION_UNSPECIFIED)
	if !bytes.Equal(plain.kafka, convert(catalogv1.FetchCompression_FETCH_COMPRESSION_NONE).kafka) {
		t.Fatal("none differs from unspecified")
	}
	dec := kgo.DefaultDecompressor()
	for fc, codec := range map[catalogv1.FetchCompression]int8{
		catalogv1.FetchCompression_FETCH_COMPRESSION_GZIP: 1,
		catalogv1.FetchCompression_FETCH_COMPRESSION_LZ4:  3,
		catalogv1.FetchCompression_FETCH_COMPRESSION_ZSTD: 4,
	} {
		got := convert(fc)
		if len(got.kafka)*3 > len(plain.kafka) {
			t.Errorf("%v: %d bytes, plain %d", fc, len(got.kafka), len(plain.kafka))
		}
		rest, want := got.kafka, plain.kafka
		for len(rest) > 0 {
			var h, w kmsg.RecordBatch
			if err := h.ReadFrom(rest); err != nil {
				t.Fatal(err)
			}
			if err := w.ReadFrom(want); err != nil {
				t.Fatal(err)
			}
			if int8(h.Attributes&7) != codec || h.FirstOffset != w.FirstOffset || h.NumRecords != w.NumRecords {
				t.Fatalf("%v: batch %+v, plain %+v", fc, h, w)
			}
			records, err := dec.Decompress(h.Records, kgo.CompressionCodecType(codec))
			if err != nil || !bytes.Equal(records, w.Records) {
				t.Fatalf("%v: records differ (%v)", fc, err)
			}
			rest, want = rest[h.Length+12:], want[w.Length+12:]
		}
	}
	if _, err := codecOf(&catalogv1.TopicMapping{FetchCompression: 9}); err == nil {
		t.Fatal("unknown codec accepted")
	}
}

// TestCompressorsReused: an idle compressor is handed out again (a
// garbage collection in between does not drop it); beyond the idle bound
// they are let go.
func TestCompressorsReused(t *testing.T) {
	cs := newCompressors(1)
	a, err := cs.get(rebuild.CodecZstd)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := cs.get(rebuild.CodecZstd)
	cs.put(a)
	cs.put(b) // beyond the bound
	runtime.GC()
	if got, _ := cs.get(rebuild.CodecZstd); got != a {
		t.Fatal("the idle compressor was not reused")
	}
	if got, _ := cs.get(rebuild.CodecZstd); got == b {
		t.Fatal("more compressors kept than the bound")
	}
}
