package kvbatch_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/compacted"
	"github.com/ferrygw/ferry/services/fluss/kvbatch"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// TestLayout pins the header and record framing independently of Java:
// a hand-written batch with one upsert and one delete.
func TestLayout(t *testing.T) {
	b := kvbatch.NewBuilder()
	if err := b.Append([]byte{0x07}, []byte{0x00, 0x2a}); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendDelete([]byte{0x08, 0x09}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Build(kvbatch.Options{SchemaID: 2, WriterID: 5, BatchSequence: 9})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0, 0, 0, 0, // length, patched below
		0,          // magic
		0, 0, 0, 0, // crc, patched below
		2, 0, // schema id
		0,                      // attributes
		5, 0, 0, 0, 0, 0, 0, 0, // writer id
		9, 0, 0, 0, // batch sequence
		2, 0, 0, 0, // records
		4, 0, 0, 0, 1, 0x07, 0x00, 0x2a, // upsert: length, key length, key, row
		3, 0, 0, 0, 2, 0x08, 0x09, // delete: no row
	}
	binary.LittleEndian.PutUint32(want, uint32(len(want)-4))
	h, recs, err := kvbatch.Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(want[5:], h.CRC)
	if !bytes.Equal(got, want) {
		t.Fatalf("batch\n% x\nwant\n% x", got, want)
	}
	if len(recs) != 2 || !bytes.Equal(recs[0].Row, []byte{0, 0x2a}) || recs[1].Row != nil || !bytes.Equal(recs[1].Key, []byte{8, 9}) {
		t.Errorf("decoded records %+v", recs)
	}
	// Any flipped bit after the CRC field is caught.
	for i := 9; i < len(got); i++ {
		bad := bytes.Clone(got)
		bad[i] ^= 0x10
		if _, _, err := kvbatch.Decode(bad); err == nil {
			t.Errorf("flipped byte %d not detected", i)
		}
	}
}

func TestBuilderReuseAndEmptyBatch(t *testing.T) {
	var b kvbatch.Builder // the zero value works
	empty, err := b.Build(kvbatch.DefaultOptions(0))
	if err != nil || len(empty) != kvbatch.HeaderSize {
		t.Fatalf("empty batch: %d bytes, %v", len(empty), err)
	}
	if err := b.Append([]byte{1}, []byte{0}); err != nil {
		t.Fatal(err)
	}
	first, _ := b.Build(kvbatch.DefaultOptions(0))
	first = bytes.Clone(first)
	b.Reset()
	if b.Records() != 0 || b.Size() != kvbatch.HeaderSize {
		t.Fatalf("after Reset: %d records, %d bytes", b.Records(), b.Size())
	}
	if err := b.Append([]byte{1}, []byte{0}); err != nil {
		t.Fatal(err)
	}
	again, _ := b.Build(kvbatch.DefaultOptions(0))
	if !bytes.Equal(first, again) {
		t.Error("a reset builder builds a different batch for the same records")
	}
	// Rebuilding with another writer state rewrites only the header.
	idem, _ := b.Build(kvbatch.Options{WriterID: 1, BatchSequence: 0})
	if h, _, err := kvbatch.Decode(idem); err != nil || h.WriterID != 1 || h.BatchSequence != 0 {
		t.Errorf("rebuilt header %+v, %v", h, err)
	}
}

func TestRejects(t *testing.T) {
	b := kvbatch.NewBuilder()
	if err := b.Append(nil, []byte{0}); err == nil {
		t.Error("empty key accepted")
	}
	if err := b.Append([]byte{1}, []byte{}); err == nil {
		t.Error("empty, non-nil row accepted (it would read as a delete)")
	}
	if b.Records() != 0 || b.Size() != kvbatch.HeaderSize {
		t.Errorf("a refused record left %d records, %d bytes", b.Records(), b.Size())
	}
	for _, o := range []kvbatch.Options{
		{SchemaID: -1, WriterID: -1, BatchSequence: -1},
		{WriterID: -2, BatchSequence: -1},
		{WriterID: 3, BatchSequence: -1},
		{WriterID: -1, BatchSequence: 0},
	} {
		if _, err := b.Build(o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}

	// A null in a NOT NULL column fails the record and leaves the batch as it was.
	cols := []types.Field{{Name: "id", Type: types.DataType{Root: types.Int}}}
	rows, err := compacted.NewRowEncoder(cols)
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := types.ArrowSchema(cols)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	rb.Field(0).(*array.Int32Builder).AppendNull()
	rec := rb.NewRecordBatch()
	if err := b.AppendRow([]byte{1}, rows, rec, 0); err == nil || !strings.Contains(err.Error(), "NOT NULL") {
		t.Errorf("null in NOT NULL column: %v", err)
	}
	if b.Records() != 0 || b.Size() != kvbatch.HeaderSize {
		t.Errorf("a failed row left %d records, %d bytes", b.Records(), b.Size())
	}
}

// A batch framed from RecordBytes is the batch Build makes.
func TestFrameMatchesBuild(t *testing.T) {
	b := kvbatch.NewBuilder()
	for _, k := range []string{"a", "bb", "ccc"} {
		if err := b.Append([]byte(k), []byte{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AppendDelete([]byte("dd")); err != nil {
		t.Fatal(err)
	}
	opts := kvbatch.Options{SchemaID: 3, WriterID: 9, BatchSequence: 4}
	records := append([]byte(nil), b.RecordBytes()...)
	want, err := b.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := kvbatch.Frame([]byte("prefix"), records, int32(b.Records()), opts)
	if err != nil {
		t.Fatal(err)
	}
	if string(got[:6]) != "prefix" || !bytes.Equal(got[6:], want) {
		t.Fatalf("Frame differs from Build:\n%x\n%x", got[6:], want)
	}
	if _, err := kvbatch.Frame(nil, records, -1, opts); err == nil {
		t.Error("negative count accepted")
	}
	if _, err := kvbatch.Frame(nil, records, 4, kvbatch.Options{SchemaID: -1}); err == nil {
		t.Error("bad options accepted")
	}
}
