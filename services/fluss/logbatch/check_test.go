package logbatch_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// A batch framed around a records section built elsewhere is byte for byte
// the batch Append builds from the same rows, so what Java accepts from
// Append (golden tests) it accepts from Frame.
func TestFrameEqualsAppend(t *testing.T) {
	_, rec := allTypesRecord(t, 300, 7)
	defer rec.Release()
	for _, c := range []logbatch.Compression{logbatch.CompressionNone, logbatch.CompressionLZ4Frame, logbatch.CompressionZSTD} {
		for _, magic := range []byte{logbatch.MagicV0, logbatch.MagicV1} {
			for _, writer := range []struct {
				id  int64
				seq int32
			}{{logbatch.NoWriterID, logbatch.NoBatchSequence}, {77, 12}} {
				opts := logbatch.DefaultOptions(9)
				opts.Compression, opts.Magic, opts.WriterID, opts.BatchSequence = c, magic, writer.id, writer.seq
				want, err := logbatch.Build(rec, opts)
				if err != nil {
					t.Fatal(err)
				}
				records, err := logbatch.NewBuilder().AppendRecords(nil, rec, logbatch.Options{Compression: c})
				if err != nil {
					t.Fatal(err)
				}
				prefix := []byte("kept")
				got, err := logbatch.Frame(prefix, records, int32(rec.NumRows()), opts)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[:4], prefix) || !bytes.Equal(got[4:], want) {
					t.Fatalf("%s magic %d writer %d: Frame gives %d bytes, Append %d, or they differ", c, magic, writer.id, len(got)-4, len(want))
				}
				if err := logbatch.Verify(got[4:]); err != nil {
					t.Fatal(err)
				}
				// The header alone, its CRC covering records it did not copy.
				hdr, err := logbatch.AppendHeader(prefix, records, int32(rec.NumRows()), opts)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(append(hdr, records...), got) {
					t.Fatalf("%s magic %d writer %d: AppendHeader and the records differ from Frame", c, magic, writer.id)
				}
			}
		}
	}
}

func TestFrameRefuses(t *testing.T) {
	_, rec := allTypesRecord(t, 10, 1)
	defer rec.Release()
	records, err := logbatch.NewBuilder().AppendRecords(nil, rec, logbatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	changelog := logbatch.DefaultOptions(1)
	changelog.AppendOnly, changelog.ChangeTypes = false, make([]logbatch.ChangeType, 10)
	badSeq := logbatch.DefaultOptions(1)
	badSeq.BatchSequence = -2
	for name, c := range map[string]struct {
		records []byte
		rows    int32
		opts    logbatch.Options
	}{
		"no rows":      {records, 0, logbatch.DefaultOptions(1)},
		"no records":   {nil, 10, logbatch.DefaultOptions(1)},
		"changelog":    {records, 10, changelog},
		"bad sequence": {records, 10, badSeq},
	} {
		if out, err := logbatch.Frame(nil, c.records, c.rows, c.opts); err == nil || len(out) != 0 {
			t.Errorf("%s: Frame gave %d bytes, err %v", name, len(out), err)
		}
		if out, err := logbatch.AppendHeader(nil, c.records, c.rows, c.opts); err == nil || len(out) != 0 {
			t.Errorf("%s: AppendHeader gave %d bytes, err %v", name, len(out), err)
		}
	}
	if _, err := logbatch.NewBuilder().AppendRecords(nil, rec.NewSlice(0, 0), logbatch.Options{}); err == nil {
		t.Error("AppendRecords accepted a record without rows")
	}
}

func TestCheckRecords(t *testing.T) {
	cols, rec := allTypesRecord(t, 300, 3)
	defer rec.Release()
	schema, err := types.ArrowSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	lz4 := logbatch.Options{Compression: logbatch.CompressionLZ4Frame}
	records, err := logbatch.NewBuilder().AppendRecords(nil, rec, lz4)
	if err != nil {
		t.Fatal(err)
	}
	if err := logbatch.CheckRecords(records, schema, 300, logbatch.CompressionLZ4Frame); err != nil {
		t.Fatalf("the section's own schema: %v", err)
	}

	// The same columns, the first one NOT NULL: the section has nulls there.
	strict := append([]types.Field(nil), cols...)
	strict[0].Type.Nullable = false
	strictSchema, err := types.ArrowSchema(strict)
	if err != nil {
		t.Fatal(err)
	}
	fewer, err := types.ArrowSchema(cols[:len(cols)-1])
	if err != nil {
		t.Fatal(err)
	}
	extra, err := types.ArrowSchema(append(append([]types.Field(nil), cols...), types.Field{Name: "more", Type: types.DataType{Root: types.Int, Nullable: true}}))
	if err != nil {
		t.Fatal(err)
	}
	// A nested column where the section has a flat one: same column count.
	reshaped := append([]types.Field(nil), cols...)
	elem := types.DataType{Root: types.Int, Nullable: true}
	reshaped[0] = types.Field{Name: cols[0].Name, Type: types.DataType{Root: types.Array, Nullable: true, Element: &elem}}
	reshapedSchema, err := types.ArrowSchema(reshaped)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		records []byte
		schema  *arrow.Schema
		rows    int32
		comp    logbatch.Compression
		want    string
	}{
		"row count":           {records, schema, 299, logbatch.CompressionLZ4Frame, "holds 300 rows, 299 expected"},
		"compression":         {records, schema, 300, logbatch.CompressionZSTD, "compressed with LZ4_FRAME, the table uses ZSTD"},
		"not null":            {records, strictSchema, 300, logbatch.CompressionLZ4Frame, "NOT NULL column"},
		"fewer columns":       {records, fewer, 300, logbatch.CompressionLZ4Frame, "field nodes"},
		"more columns":        {records, extra, 300, logbatch.CompressionLZ4Frame, "ends before column"},
		"other layout":        {records, reshapedSchema, 300, logbatch.CompressionLZ4Frame, ""},
		"trailing bytes":      {append(append([]byte(nil), records...), 0, 0, 0, 0, 0, 0, 0, 0), schema, 300, logbatch.CompressionLZ4Frame, "holds a message of"},
		"truncated":           {records[:len(records)-1], schema, 300, logbatch.CompressionLZ4Frame, "present"},
		"not a message":       {[]byte("garbage!garbage!"), schema, 300, logbatch.CompressionLZ4Frame, ""},
		"empty":               {nil, schema, 300, logbatch.CompressionLZ4Frame, ""},
		"uncompressed wanted": {records, schema, 300, logbatch.CompressionNone, "compressed with LZ4_FRAME"},
	} {
		err := logbatch.CheckRecords(c.records, c.schema, c.rows, c.comp)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}

	// A section from another allocator's record of the same columns passes:
	// the check is about layout, not identity.
	other, err := goldentest.Record(memory.NewGoAllocator(), cols, 5, 9, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	section, err := logbatch.NewBuilder().AppendRecords(nil, other, logbatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := logbatch.CheckRecords(section, strictSchema, 5, logbatch.CompressionNone); err != nil {
		t.Fatalf("no nulls in a NOT NULL column: %v", err)
	}
}

func TestCompressionOf(t *testing.T) {
	for c, want := range map[catalogv1.ArrowCompression]logbatch.Compression{
		catalogv1.ArrowCompression_ARROW_COMPRESSION_UNSPECIFIED: logbatch.CompressionZSTD, // Fluss's default
		catalogv1.ArrowCompression_ARROW_COMPRESSION_NONE:        logbatch.CompressionNone,
		catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME:   logbatch.CompressionLZ4Frame,
		catalogv1.ArrowCompression_ARROW_COMPRESSION_ZSTD:        logbatch.CompressionZSTD,
	} {
		if got, ok := logbatch.CompressionOf(c); !ok || got != want {
			t.Errorf("%v: %v %v, want %v", c, got, ok, want)
		}
	}
	if _, ok := logbatch.CompressionOf(catalogv1.ArrowCompression(99)); ok {
		t.Error("an unknown value was mapped")
	}
}
