package logbatch

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
)

// Buffers of ones (validity bitmaps without nulls) are compressed once per
// length, codec and level, and what comes from the cache is what the codec
// gives; other buffers are never taken for one.
func TestCompressCachesOnes(t *testing.T) {
	for _, opts := range []Options{
		{Compression: CompressionLZ4Frame},
		{Compression: CompressionZSTD},
		{Compression: CompressionZSTD, ZSTDLevel: 9},
	} {
		var c codecs
		var mem slab
		for _, n := range []int{1, 2, 7, 8, 9, 42, 1000, onesMaxLen} {
			for _, last := range []byte{0xFF, 0x01, 0x7F} {
				raw := bytes.Repeat([]byte{0xFF}, n)
				raw[n-1] = last
				var fresh codecs
				want, err := fresh.compressAny(&slab{}, raw, opts)
				if err != nil {
					t.Fatal(err)
				}
				for round := range 2 {
					got, err := c.compress(&mem, raw, opts)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("%s, %d bytes ending %#x, round %d: not the codec's output", opts.Compression, n, last, round)
					}
				}
				if _, ok := c.ones[onesKey{opts.Compression, opts.ZSTDLevel, n, last}]; !ok {
					t.Fatalf("%s, %d bytes ending %#x: not cached", opts.Compression, n, last)
				}
				if n > 1 {
					// Same length and last byte, a zero bit inside.
					other := bytes.Clone(raw)
					other[n/2-1] = 0xEF
					want, _ := (&codecs{}).compressAny(&slab{}, other, opts)
					got, _ := c.compress(&mem, other, opts)
					if !bytes.Equal(got, want) {
						t.Fatalf("%s, %d bytes with a zero bit: answered from the cache", opts.Compression, n)
					}
				}
			}
		}
		entries := len(c.ones)
		big := bytes.Repeat([]byte{0xFF}, onesMaxLen+1)
		if _, err := c.compress(&mem, big, opts); err != nil {
			t.Fatal(err)
		}
		if len(c.ones) != entries {
			t.Fatalf("%s: a buffer over %d bytes was cached", opts.Compression, onesMaxLen)
		}
	}
}

// A Builder reused for batch after batch (its scratch memory holding the
// previous batch's bytes) builds what a new one does.
func TestBuilderReuseMatchesNew(t *testing.T) {
	reused := NewBuilder()
	for _, comp := range []Compression{CompressionLZ4Frame, CompressionZSTD, CompressionNone} {
		for i, rows := range []int{3000, 10, 700, 1} {
			rec, err := goldentest.Record(memory.NewGoAllocator(), goldentest.AllTypesColumns(), rows, uint64(i), 15)
			if err != nil {
				t.Fatal(err)
			}
			opts := DefaultOptions(1)
			opts.Compression = comp
			got, err := reused.Append(nil, rec, opts)
			if err != nil {
				t.Fatal(err)
			}
			want, err := NewBuilder().Append(nil, rec, opts)
			if err != nil {
				t.Fatal(err)
			}
			rec.Release()
			if !bytes.Equal(got, want) {
				t.Fatalf("%s, %d rows: the reused builder's batch differs", comp, rows)
			}
		}
	}
}
