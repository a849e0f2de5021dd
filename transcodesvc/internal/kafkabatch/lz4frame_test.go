package kafkabatch

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pierrec/lz4/v4"

	"github.com/ferrygw/ferry/services/recordbatch"
)

// lz4Reference decompresses with the lz4 package's own frame reader, which
// verifies every checksum.
func lz4Reference(src []byte) ([]byte, error) {
	return io.ReadAll(lz4.NewReader(bytes.NewReader(src)))
}

// lz4Text is compressible but not trivial: words drawn at random.
func lz4Text(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	words := strings.Fields(`{"id": 17, "name": "ferry", "price": 12.5, "ok": true, "day": "2026-12-04", "at": "2026-12-04T08:00:00Z"}`)
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(4) == 0 {
			b.WriteByte(byte(r.IntN(256)))
		}
	}
	return b.Bytes()[:n]
}

// lz4Random does not compress: its blocks are stored.
func lz4Random(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.N(256))
	}
	return b
}

func lz4Compress(t testing.TB, data []byte, opts ...lz4.Option) []byte {
	t.Helper()
	var out bytes.Buffer
	w := lz4.NewWriter(&out)
	if err := w.Apply(opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestLZ4Frames decodes what real clients sent (librdkafka links its
// blocks, the Java client and franz-go do not) and frames with every
// optional field, and compares with the checking reader.
func TestLZ4Frames(t *testing.T) {
	cases := map[string][]byte{}
	for _, name := range []string{"franz-go-bench-lz4.batch", "franz-go-mixed-lz4.batch", "java-mixed-lz4.batch", "kcat-mixed-lz4.batch"} {
		cases[name] = fixture(t, name)[recordbatch.HeaderSize:]
	}
	// Every client above writes independent blocks. This frame links its
	// 64 KiB blocks and checksums each (lz4 1.9.4's command line: lz4 -BD
	// -B4 -BX on 150 000 bytes of text), as LZ4 libraries do by default.
	linked := fixture(t, "lz4-linked-blocks.lz4")
	if linked[4]&lz4FlagIndep != 0 || linked[4]&lz4FlagBlockSum == 0 {
		t.Fatalf("lz4-linked-blocks.lz4: FLG %#02x", linked[4])
	}
	cases["linked blocks"] = linked
	big := lz4Text(300<<10, 1)
	cases["64 KiB blocks, checksums"] = lz4Compress(t, big, lz4.BlockSizeOption(lz4.Block64Kb), lz4.BlockChecksumOption(true), lz4.ChecksumOption(true))
	cases["content size"] = lz4Compress(t, big, lz4.SizeOption(uint64(len(big))), lz4.ChecksumOption(false))
	cases["4 MiB blocks"] = lz4Compress(t, big, lz4.BlockSizeOption(lz4.Block4Mb))
	cases["random: blocks stored"] = lz4Compress(t, lz4Random(100<<10), lz4.BlockSizeOption(lz4.Block64Kb))
	two := append(lz4Compress(t, big[:1000]), lz4Compress(t, big[1000:5000])...)
	cases["two frames"] = two
	skippable := []byte{0x5A, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'}
	cases["skippable frame first"] = append(append([]byte(nil), skippable...), lz4Compress(t, big[:2000])...)
	for name, src := range cases {
		want, err := lz4Reference(src)
		if err != nil {
			t.Fatalf("%s: reference reader: %v", name, err)
		}
		got, err := lz4Frames(src, []byte("kept"), 1<<30)
		if err != nil || !bytes.Equal(got[:4], []byte("kept")) || !bytes.Equal(got[4:], want) {
			t.Fatalf("%s: %d bytes, %v; want %d bytes", name, len(got)-4, err, len(want))
		}
	}
}

func TestLZ4FramesRejects(t *testing.T) {
	good := lz4Compress(t, lz4Text(200<<10, 2), lz4.BlockSizeOption(lz4.Block64Kb), lz4.BlockChecksumOption(true), lz4.ChecksumOption(true))
	// Every truncation fails (a frame cut at a block boundary lacks its
	// end mark), and none panics.
	for n := 0; n < len(good); n += 1 + n/50 {
		if _, err := lz4Frames(good[:n], nil, 1<<30); err == nil && n > 0 {
			t.Fatalf("accepted %d of %d bytes", n, len(good))
		}
	}
	bad := map[string][]byte{
		"magic":      append([]byte{1, 2, 3, 4}, good[4:]...),
		"version":    append(append([]byte(nil), good[:4]...), append([]byte{good[4] &^ 0xC0}, good[5:]...)...),
		"block size": append(append([]byte(nil), good[:5]...), append([]byte{0x10}, good[6:]...)...),
	}
	for name, src := range bad {
		if _, err := lz4Frames(src, nil, 1<<30); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// The bound holds for compressed and stored blocks alike.
	text, random := lz4Text(100<<10, 3), lz4Random(100<<10)
	for name, c := range map[string]struct {
		data, src []byte
	}{"compressed": {text, lz4Compress(t, text)}, "stored": {random, lz4Compress(t, random)}} {
		data, src := c.data, c.src
		if _, err := lz4Frames(src, nil, len(data)); err != nil {
			t.Fatalf("%s at exactly its size: %v", name, err)
		}
		_, err := lz4Frames(src, nil, len(data)-1)
		var e *recordbatch.Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, "more than") {
			t.Fatalf("%s one byte under its size: %v", name, err)
		}
	}
}

// FuzzLZ4Frames: never a panic, and whatever the checking reader decodes
// decodes the same here.
func FuzzLZ4Frames(f *testing.F) {
	f.Add(lz4Compress(f, lz4Text(5000, 4)))
	f.Add(lz4Compress(f, lz4Text(70<<10, 5), lz4.BlockSizeOption(lz4.Block64Kb), lz4.BlockChecksumOption(true)))
	f.Add(fixture(f, "kcat-mixed-lz4.batch")[recordbatch.HeaderSize:])
	f.Add(fixture(f, "lz4-linked-blocks.lz4"))
	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := lz4Frames(src, nil, 1<<20)
		want, werr := lz4Reference(src)
		if werr == nil && len(want) <= 1<<20 && (err != nil || !bytes.Equal(got, want)) {
			t.Fatalf("reference decodes %d bytes, lz4Frames %d bytes, %v", len(want), len(got), err)
		}
	})
}
