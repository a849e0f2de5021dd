package logbatch_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pierrec/lz4/v4"

	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/types"
)

func allTypesRecord(t testing.TB, rows int, seed uint64) ([]types.Field, arrow.RecordBatch) {
	t.Helper()
	cols := goldentest.AllTypesColumns()
	rec, err := goldentest.Record(memory.NewGoAllocator(), cols, rows, seed, 20)
	if err != nil {
		t.Fatal(err)
	}
	return cols, rec
}

func TestRoundTripEveryCompression(t *testing.T) {
	cols, rec := allTypesRecord(t, 300, 5)
	defer rec.Release()
	for _, c := range []logbatch.Compression{logbatch.CompressionNone, logbatch.CompressionLZ4Frame, logbatch.CompressionZSTD} {
		for _, magic := range []byte{logbatch.MagicV0, logbatch.MagicV1} {
			t.Run(c.String(), func(t *testing.T) {
				opts := logbatch.DefaultOptions(9)
				opts.Compression = c
				opts.Magic = magic
				opts.WriterID, opts.BatchSequence = 77, 12
				b, err := logbatch.Build(rec, opts)
				if err != nil {
					t.Fatal(err)
				}
				batch, err := logbatch.SplitBatch(b)
				if err != nil {
					t.Fatal(err)
				}
				h := batch.Header
				if h.Magic != magic || h.SchemaID != 9 || !h.AppendOnly || h.WriterID != 77 || h.BatchSequence != 12 ||
					h.RecordCount != 300 || h.LastOffsetDelta != 299 || h.SizeInBytes() != len(b) || h.BaseOffset != 0 || h.LeaderEpoch != -1 {
					t.Fatalf("header %+v", h)
				}
				m, err := logbatch.ParseMessage(batch.Arrow)
				if err != nil {
					t.Fatal(err)
				}
				if m.Compression != c && c != logbatch.CompressionNone {
					t.Fatalf("message compression %v, want %v", m.Compression, c)
				}
				checkDecodes(t, "Go", b, cols, rec)
			})
		}
	}
}

func TestEmptyBatchIsBareHeader(t *testing.T) {
	cols, rec := allTypesRecord(t, 0, 1)
	defer rec.Release()
	b, err := logbatch.Build(rec, logbatch.DefaultOptions(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != logbatch.HeaderSize(logbatch.MagicV0) {
		t.Fatalf("empty batch is %d bytes, want the %d-byte header", len(b), logbatch.HeaderSize(logbatch.MagicV0))
	}
	h, err := logbatch.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.RecordCount != 0 || h.LastOffsetDelta != 0 {
		t.Fatalf("header %+v", h)
	}
	checkDecodes(t, "Go", b, cols, rec)
}

func TestVerifyCatchesCorruption(t *testing.T) {
	_, rec := allTypesRecord(t, 10, 2)
	defer rec.Release()
	b, err := logbatch.Build(rec, logbatch.DefaultOptions(1))
	if err != nil {
		t.Fatal(err)
	}
	// Bytes the server rewrites are outside the CRC; anything after the CRC is inside.
	for _, tc := range []struct {
		name    string
		offset  int
		wantErr bool
	}{
		{"base offset", 3, false},
		{"commit timestamp", 15, false},
		{"schema id", 25, true},
		{"record count", 45, true},
		{"arrow body", len(b) - 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := bytes.Clone(b)
			c[tc.offset] ^= 0x5A
			err := logbatch.Verify(c)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Verify after flipping byte %d: %v, want error %v", tc.offset, err, tc.wantErr)
			}
		})
	}
}

func TestParseHeaderRejects(t *testing.T) {
	_, rec := allTypesRecord(t, 3, 3)
	defer rec.Release()
	b, err := logbatch.Build(rec, logbatch.DefaultOptions(1))
	if err != nil {
		t.Fatal(err)
	}
	badMagic := bytes.Clone(b)
	badMagic[12] = 7
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"short header", b[:20], "truncated"},
		{"short batch", b[:len(b)-1], "truncated"},
		{"magic", badMagic, "magic 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := logbatch.ParseHeader(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestIteratorStopsAtTruncatedTail(t *testing.T) {
	_, rec := allTypesRecord(t, 4, 4)
	defer rec.Release()
	var all []byte
	var err error
	b := logbatch.NewBuilder()
	for i := 0; i < 3; i++ {
		if all, err = b.Append(all, rec, logbatch.DefaultOptions(int16(i))); err != nil {
			t.Fatal(err)
		}
	}
	one := len(all) / 3
	it := logbatch.NewIterator(all[:len(all)-5])
	var ids []int16
	for it.Next() {
		ids = append(ids, it.Batch().SchemaID)
	}
	if len(ids) != 2 || ids[0] != 0 || ids[1] != 1 || !errors.Is(it.Err(), logbatch.ErrShortBatch) {
		t.Fatalf("batches %v err %v (batch size %d)", ids, it.Err(), one)
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := logbatch.DefaultOptions(1)
	for _, tc := range []struct {
		name  string
		edit  func(*logbatch.Options)
		field string
	}{
		{"magic", func(o *logbatch.Options) { o.Magic = 2 }, "Magic"},
		{"schema", func(o *logbatch.Options) { o.SchemaID = -1 }, "SchemaID"},
		{"compression", func(o *logbatch.Options) { o.Compression = 9 }, "Compression"},
		{"zstd level", func(o *logbatch.Options) { o.Compression = logbatch.CompressionZSTD; o.ZSTDLevel = 23 }, "ZSTDLevel"},
		{"writer", func(o *logbatch.Options) { o.WriterID = -2 }, "WriterID"},
		{"sequence", func(o *logbatch.Options) { o.BatchSequence = -2 }, "BatchSequence"},
		{"change types", func(o *logbatch.Options) { o.ChangeTypes = []logbatch.ChangeType{1} }, "ChangeTypes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate: %v, want an error naming %s", err, tc.field)
			}
		})
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestBuildRejects(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.LargeString, Nullable: true}}, nil)
	rb := array.NewRecordBuilder(mem, schema)
	rb.Field(0).(*array.LargeStringBuilder).Append("x")
	rec := rb.NewRecordBatch()
	defer rec.Release()
	if _, err := logbatch.Build(rec, logbatch.DefaultOptions(1)); err == nil || !strings.Contains(err.Error(), "large_utf8") {
		t.Fatalf("LargeString: %v", err)
	}
	_, rec2 := allTypesRecord(t, 3, 1)
	defer rec2.Release()
	o := logbatch.DefaultOptions(1)
	o.AppendOnly = false
	o.ChangeTypes = []logbatch.ChangeType{logbatch.Insert}
	if _, err := logbatch.Build(rec2, o); err == nil || !strings.Contains(err.Error(), "ChangeTypes has 1 entries for 3 rows") {
		t.Fatalf("change types: %v", err)
	}
}

// TestLZ4FrameIsStandard checks the hand-written frame header (including
// its constant checksum byte) with an independent LZ4 frame reader.
func TestLZ4FrameIsStandard(t *testing.T) {
	_, rec := allTypesRecord(t, 2000, 6)
	defer rec.Release()
	o := logbatch.DefaultOptions(1)
	o.Compression = logbatch.CompressionLZ4Frame
	b, err := logbatch.Build(rec, o)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := logbatch.SplitBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	m, err := logbatch.ParseMessage(batch.Arrow)
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	for i, s := range m.Buffers {
		buf := m.Body[s.Offset : s.Offset+s.Length]
		if len(buf) <= 8 || buf[7] == 0xFF { // empty, or stored raw (-1)
			continue
		}
		out, err := io.ReadAll(lz4.NewReader(bytes.NewReader(buf[8:])))
		if err != nil {
			t.Fatalf("buffer %d: %v", i, err)
		}
		if uint64(len(out)) != uint64(buf[0])|uint64(buf[1])<<8|uint64(buf[2])<<16|uint64(buf[3])<<24 {
			t.Fatalf("buffer %d: %d bytes decompressed", i, len(out))
		}
		frames++
	}
	if frames == 0 {
		t.Fatal("no compressed buffer to check")
	}
}
