package kafkabatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/services/recordbatch"
)

func loadFixtures(t testing.TB) (Manifest, map[string][]byte) {
	t.Helper()
	m, err := LoadManifest("testdata")
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	raw := map[string][]byte{}
	for _, f := range m.Fixtures {
		b, err := os.ReadFile(filepath.Join("testdata", f.File))
		if err != nil {
			t.Fatal(err)
		}
		raw[f.File] = b
	}
	return m, raw
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func strOrNil(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func eqPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// TestFixtures decodes every batch real clients produced and compares the
// records with what the clients were asked to send.
func TestFixtures(t *testing.T) {
	m, raw := loadFixtures(t)
	codecs := map[string]bool{}
	clients := map[string]bool{}
	d := NewDecoder(0)
	for _, f := range m.Fixtures {
		t.Run(f.File, func(t *testing.T) {
			b, err := d.Decode(raw[f.File])
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := b.Header.Codec().String(); got != f.Codec {
				t.Errorf("codec %s, want %s", got, f.Codec)
			}
			codecs[f.Codec] = true
			clients[strings.Fields(f.Client)[0]] = true
			if len(b.Records) != len(f.Records) {
				t.Fatalf("%d records, want %d", len(b.Records), len(f.Records))
			}
			maxTS := int64(-1 << 63)
			for i, want := range f.Records {
				r := &b.Records[i]
				if !eqPtr(strOrNil(r.Key), want.Key.str()) {
					t.Errorf("record %d key %q, want %v", i, r.Key, want.Key)
				}
				if !eqPtr(strOrNil(r.Value), want.Value.str()) {
					t.Errorf("record %d value %q, want %v", i, r.Value, want.Value)
				}
				if len(r.Headers) != len(want.Headers) {
					t.Errorf("record %d: %d headers, want %d", i, len(r.Headers), len(want.Headers))
				} else {
					for j, h := range want.Headers {
						if string(r.Headers[j].Key) != h.Key || !eqPtr(strOrNil(r.Headers[j].Value), h.Value) {
							t.Errorf("record %d header %d = %q:%q, want %q:%v", i, j, r.Headers[j].Key, r.Headers[j].Value, h.Key, h.Value)
						}
					}
				}
				if want.Timestamp != nil && b.Timestamp(r) != *want.Timestamp {
					t.Errorf("record %d timestamp %d, want %d", i, b.Timestamp(r), *want.Timestamp)
				}
				maxTS = max(maxTS, b.Timestamp(r))
			}
			if b.Header.MaxTimestamp != maxTS {
				t.Errorf("header max timestamp %d, records' max %d", b.Header.MaxTimestamp, maxTS)
			}
		})
	}
	for _, c := range codecOrder {
		if !codecs[c] {
			t.Errorf("no fixture for codec %s", c)
		}
	}
	for _, c := range []string{"franz-go", "kcat", "java"} {
		if !clients[c] {
			t.Errorf("no %s fixtures", c)
		}
	}
}

// resum recomputes the CRC after a test changed covered bytes, so the test
// reaches the check it targets rather than the CRC check.
func resum(b []byte) []byte {
	binary.BigEndian.PutUint32(b[recordbatch.OffsetCRC:], crc32.Checksum(b[recordbatch.OffsetAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func mutate(src []byte, f func(b []byte) []byte) []byte {
	return f(append([]byte(nil), src...))
}

func TestDecodeRejects(t *testing.T) {
	plain := fixture(t, "franz-go-mixed-none.batch")
	gz := fixture(t, "franz-go-mixed-gzip.batch")
	tests := []struct {
		name string
		in   []byte
		code int16
		msg  string
	}{
		{"empty", nil, kerr.InvalidRecord.Code, "got none"},
		{"header only prefix", plain[:40], kerr.CorruptMessage.Code, "shorter than"},
		{"truncated", plain[:len(plain)-1], kerr.CorruptMessage.Code, "truncated"},
		{"trailing byte", append(append([]byte(nil), plain...), 0), kerr.InvalidRecord.Code, "more than one record batch"},
		{"two batches", append(append([]byte(nil), plain...), gz...), kerr.InvalidRecord.Code, "more than one record batch"},
		{"length too short", mutate(plain, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[recordbatch.OffsetBatchLength:], uint32(len(b)-recordbatch.OffsetLeaderEpoch-10))
			return b
		}), kerr.CorruptMessage.Code, "CRC does not match"},
		{"length below header", mutate(plain, func(b []byte) []byte { binary.BigEndian.PutUint32(b[recordbatch.OffsetBatchLength:], 3); return b }), kerr.CorruptMessage.Code, "shorter than the header"},
		{"bad crc", mutate(plain, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), kerr.CorruptMessage.Code, "CRC mismatch"},
		{"crc field flipped", mutate(plain, func(b []byte) []byte { b[recordbatch.OffsetCRC] ^= 0x80; return b }), kerr.CorruptMessage.Code, "CRC mismatch"},
		{"magic 1", mutate(plain, func(b []byte) []byte { b[recordbatch.OffsetMagic] = 1; return b }), kerr.InvalidRecord.Code, "magic 1"},
		{"control batch", mutate(plain, func(b []byte) []byte { b[recordbatch.OffsetAttributes+1] |= recordbatch.AttrControl; return resum(b) }), kerr.InvalidRecord.Code, "control"},
		{"codec 5", mutate(plain, func(b []byte) []byte { b[recordbatch.OffsetAttributes+1] |= 5; return resum(b) }), kerr.UnsupportedCompressionType.Code, "codec 5"},
		{"codec 7", mutate(plain, func(b []byte) []byte { b[recordbatch.OffsetAttributes+1] |= 7; return resum(b) }), kerr.UnsupportedCompressionType.Code, "codec 7"},
		{"count too high", mutate(plain, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[recordbatch.OffsetRecordCount:], 6)
			binary.BigEndian.PutUint32(b[recordbatch.OffsetLastOffsetDelta:], 5)
			return resum(b)
		}), kerr.CorruptMessage.Code, "holds only 5"},
		{"count too low", mutate(plain, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[recordbatch.OffsetRecordCount:], 4)
			binary.BigEndian.PutUint32(b[recordbatch.OffsetLastOffsetDelta:], 3)
			return resum(b)
		}), kerr.CorruptMessage.Code, "bytes after its 4 records"},
		{"count huge", mutate(plain, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[recordbatch.OffsetRecordCount:], 1<<30)
			binary.BigEndian.PutUint32(b[recordbatch.OffsetLastOffsetDelta:], 1<<30-1)
			return resum(b)
		}), kerr.CorruptMessage.Code, "can hold at most"},
		{"count negative", mutate(plain, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[recordbatch.OffsetRecordCount:], 0xffffffff)
			return resum(b)
		}), kerr.CorruptMessage.Code, "negative"},
		{"count zero", mutate(plain, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[recordbatch.OffsetRecordCount:], 0)
			return resum(b)
		}), kerr.CorruptMessage.Code, "no records"},
		{"last offset delta", mutate(plain, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[recordbatch.OffsetLastOffsetDelta:], 9)
			return resum(b)
		}), kerr.CorruptMessage.Code, "last offset delta"},
		{"first record length too large", mutate(plain, func(b []byte) []byte {
			// A 5-byte varint claiming ~1 GiB; the rest shifts but the check
			// must come before anything is sized from it.
			out := append(b[:recordbatch.HeaderSize:recordbatch.HeaderSize], 0x80, 0x80, 0x80, 0x80, 0x08)
			out = append(out, b[recordbatch.HeaderSize+2:]...)
			binary.BigEndian.PutUint32(out[recordbatch.OffsetBatchLength:], uint32(len(out)-recordbatch.OffsetLeaderEpoch))
			return resum(out)
		}), kerr.CorruptMessage.Code, "exceeds"},
		{"offset delta out of order", mutate(plain, func(b []byte) []byte {
			// First record: length varint, attributes, timestamp delta 0
			// (one byte), then the offset delta.
			_, n := binary.Varint(b[recordbatch.HeaderSize:])
			b[recordbatch.HeaderSize+n+2] = 2 // zigzag 1
			return resum(b)
		}), kerr.CorruptMessage.Code, "offset delta 1"},
		{"gzip garbage", mutate(gz, func(b []byte) []byte {
			b[recordbatch.HeaderSize+12] ^= 0xff
			b[recordbatch.HeaderSize+13] ^= 0xff
			return resum(b)
		}), kerr.CorruptMessage.Code, "decompress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewDecoder(0).Decode(tt.in)
			var e *recordbatch.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *recordbatch.Error", err, err)
			}
			if e.Code != tt.code || !strings.Contains(e.Msg, tt.msg) {
				t.Fatalf("got code %d %q, want code %d containing %q", e.Code, e.Msg, tt.code, tt.msg)
			}
		})
	}
}

// TestDecompressedBound checks that every codec stops at the bound instead
// of inflating a batch without limit.
func TestDecompressedBound(t *testing.T) {
	for _, c := range []string{"gzip", "snappy", "lz4", "zstd"} {
		t.Run(c, func(t *testing.T) {
			in := fixture(t, "franz-go-bench-"+c+".batch")
			full, err := NewDecoder(0).Decode(in)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := NewDecoder(full.RawSize).Decode(in); err != nil {
				t.Fatalf("at exactly the decompressed size: %v", err)
			}
			_, err = NewDecoder(full.RawSize - 1).Decode(in)
			var e *recordbatch.Error
			if !errors.As(err, &e) || e.Code != kerr.CorruptMessage.Code || !strings.Contains(e.Msg, "more than") {
				t.Fatalf("one byte under the decompressed size: %v", err)
			}
		})
	}
}

// TestSnappyXerial reframes a real client's snappy batch the way the Java
// client's snappy-java stream writes it (several chunks) and checks both
// framings decode to the same records.
func TestSnappyXerial(t *testing.T) {
	in := fixture(t, "franz-go-bench-snappy.batch")
	raw, err := snappy.Decode(nil, in[recordbatch.HeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	framed := append([]byte(nil), in[:recordbatch.HeaderSize]...)
	framed = append(framed, xerialMagic...)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	for chunk := 32 << 10; len(raw) > 0; {
		n := min(chunk, len(raw))
		block := snappy.Encode(nil, raw[:n])
		framed = binary.BigEndian.AppendUint32(framed, uint32(len(block)))
		framed = append(framed, block...)
		raw = raw[n:]
	}
	binary.BigEndian.PutUint32(framed[recordbatch.OffsetBatchLength:], uint32(len(framed)-recordbatch.OffsetLeaderEpoch))
	resum(framed)

	want, err := NewDecoder(0).Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewDecoder(0).Decode(framed)
	if err != nil {
		t.Fatalf("xerial: %v", err)
	}
	if len(got.Records) != len(want.Records) {
		t.Fatalf("%d records, want %d", len(got.Records), len(want.Records))
	}
	for i := range got.Records {
		if !bytes.Equal(got.Records[i].Value, want.Records[i].Value) || !bytes.Equal(got.Records[i].Key, want.Records[i].Key) {
			t.Fatalf("record %d differs", i)
		}
	}

	// A chunk length past the end must be refused, not read.
	bad := append([]byte(nil), framed...)
	binary.BigEndian.PutUint32(bad[recordbatch.HeaderSize+xerialHeaderSize:], 1<<31-1)
	resum(bad)
	if _, err := NewDecoder(0).Decode(bad); err == nil || !strings.Contains(err.Error(), "chunk of") {
		t.Fatalf("oversized xerial chunk: %v", err)
	}
}

// TestDecoderReuse decodes different codecs in turn with one Decoder, as a
// pooled decoder does, and checks nothing leaks from one batch to the next.
func TestDecoderReuse(t *testing.T) {
	m, raw := loadFixtures(t)
	d := NewDecoder(0)
	for round := 0; round < 2; round++ {
		for _, f := range m.Fixtures {
			b, err := d.Decode(raw[f.File])
			if err != nil {
				t.Fatalf("%s: %v", f.File, err)
			}
			if len(b.Records) != len(f.Records) {
				t.Fatalf("%s: %d records, want %d", f.File, len(b.Records), len(f.Records))
			}
			for i, r := range b.Records {
				if len(r.Headers) != len(f.Records[i].Headers) {
					t.Fatalf("%s record %d: %d headers, want %d", f.File, i, len(r.Headers), len(f.Records[i].Headers))
				}
			}
		}
	}
}

func FuzzDecodeBatch(f *testing.F) {
	m, raw := loadFixtures(f)
	for _, fx := range m.Fixtures {
		if fx.Set != "bench" {
			f.Add(raw[fx.File])
		}
	}
	d := NewDecoder(1 << 20)
	f.Fuzz(func(t *testing.T, in []byte) {
		// Mutations almost never keep the length and CRC right, which would
		// stop every input at the header; repair them so the fuzzer reaches
		// decompression and record parsing (the unit tests cover the header
		// checks themselves).
		if len(in) >= recordbatch.HeaderSize {
			binary.BigEndian.PutUint32(in[recordbatch.OffsetBatchLength:], uint32(len(in)-recordbatch.OffsetLeaderEpoch))
			resum(in)
		}
		b, err := d.Decode(in)
		if err != nil {
			var e *recordbatch.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is %T, not *recordbatch.Error", err, err)
			}
			return
		}
		if len(b.Records) != int(b.Header.RecordCount) {
			t.Fatalf("%d records, header says %d", len(b.Records), b.Header.RecordCount)
		}
		for i, r := range b.Records {
			if int(r.OffsetDelta) != i {
				t.Fatalf("record %d offset delta %d", i, r.OffsetDelta)
			}
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	for _, c := range codecOrder {
		b.Run(c, func(b *testing.B) {
			in := fixture(b, "franz-go-bench-"+c+".batch")
			d := NewDecoder(0)
			batch, err := d.Decode(in)
			if err != nil {
				b.Fatal(err)
			}
			n := len(batch.Records)
			b.SetBytes(int64(batch.RawSize))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := d.Decode(in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// TestDecoderLeavesNoGoroutines: pooled decoders are dropped by sync.Pool
// without Close, which is only safe if the codecs (zstd in particular)
// started nothing that outlives them.
func TestDecoderLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, c := range codecOrder {
		in := fixture(t, "franz-go-bench-"+c+".batch")
		for i := 0; i < 5; i++ {
			if _, err := NewDecoder(0).Decode(in); err != nil {
				t.Fatal(err)
			}
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines before decoding, %d after", before, after)
	}
}
