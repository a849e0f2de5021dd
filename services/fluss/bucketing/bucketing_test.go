package bucketing

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/types"
)

func TestBucketRejects(t *testing.T) {
	if _, err := Bucket(nil, 3); err == nil {
		t.Error("empty key accepted")
	}
	if _, err := Bucket([]byte{1}, 0); err == nil {
		t.Error("zero buckets accepted")
	}
	// Every bucket of a small table is reachable and results stay in range.
	seen := map[int]bool{}
	for i := range 1000 {
		b, err := Bucket([]byte{byte(i), byte(i >> 8), 7}, 5)
		if err != nil || b < 0 || b >= 5 {
			t.Fatalf("bucket %d err %v", b, err)
		}
		seen[b] = true
	}
	if len(seen) != 5 {
		t.Fatalf("only buckets %v used", seen)
	}
}

func TestKeyEncoderRejects(t *testing.T) {
	intT := types.DataType{Root: types.Int}
	cols := []types.Field{
		{Name: "a", Type: types.DataType{Root: types.Int, Nullable: true}},
		{Name: "arr", Type: types.DataType{Root: types.Array, Element: &intT}},
	}
	if _, err := NewKeyEncoder(cols, []string{"nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := NewKeyEncoder(cols, []string{"arr"}); err == nil || !strings.Contains(err.Error(), "cannot hash") {
		t.Errorf("array key: %v", err)
	}
	if _, err := NewKeyEncoder(cols, nil); err == nil {
		t.Error("no keys accepted")
	}
	enc, err := NewKeyEncoder(cols[:1], []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := types.ArrowSchema(cols[:1])
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	rb.Field(0).(*array.Int32Builder).AppendNull()
	rec := rb.NewRecordBatch()
	defer rec.Release()
	if _, err := enc.Encode(nil, rec, 0); err == nil || !strings.Contains(err.Error(), "null") {
		t.Errorf("null key: %v", err)
	}
	if _, err := enc.Encode(nil, rec, 1); err == nil {
		t.Error("row out of range accepted")
	}
	// A record whose column does not have the declared type is refused.
	other := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String}}, nil)
	rb2 := array.NewRecordBuilder(memory.NewGoAllocator(), other)
	rb2.Field(0).(*array.StringBuilder).Append("x")
	rec2 := rb2.NewRecordBatch()
	defer rec2.Release()
	if _, err := enc.Encode(nil, rec2, 0); err == nil || !strings.Contains(err.Error(), "does not carry") {
		t.Errorf("mistyped column: %v", err)
	}
}

func TestStickyAssigner(t *testing.T) {
	s := NewStickyAssigner(8)
	avail := []int32{1, 4, 6}
	first := s.Assign(avail)
	if first != 1 && first != 4 && first != 6 {
		t.Fatalf("assigned unavailable bucket %d", first)
	}
	for range 10 {
		if b := s.Assign(avail); b != first {
			t.Fatalf("sticky bucket moved from %d to %d without a new batch", first, b)
		}
	}
	s.OnNewBatch(avail, first)
	second := s.Assign(avail)
	if second == first {
		t.Fatalf("new batch kept bucket %d", first)
	}
	// A stale notification (for a bucket no longer sticky) changes nothing.
	s.OnNewBatch(avail, first)
	if b := s.Assign(avail); b != second {
		t.Fatalf("stale OnNewBatch moved the bucket to %d", b)
	}
	// One available bucket is always chosen; none: any bucket of the table.
	one := NewStickyAssigner(8)
	if b := one.Assign([]int32{5}); b != 5 {
		t.Fatalf("single available bucket: %d", b)
	}
	none := NewStickyAssigner(3)
	if b := none.Assign(nil); b < 0 || b >= 3 {
		t.Fatalf("no available bucket: %d", b)
	}
}

func TestRoundRobinAssigner(t *testing.T) {
	r := NewRoundRobinAssigner(4)
	avail := []int32{0, 2, 3}
	counts := map[int32]int{}
	prev := r.Assign(avail)
	for range 30 {
		b := r.Assign(avail)
		// Consecutive picks walk the available list cyclically.
		pi, bi := index(avail, prev), index(avail, b)
		if bi != (pi+1)%len(avail) {
			t.Fatalf("after %d came %d", prev, b)
		}
		counts[b]++
		prev = b
	}
	if len(counts) != 3 || counts[0] != 10 || counts[2] != 10 || counts[3] != 10 {
		t.Fatalf("uneven round robin %v", counts)
	}
	if b := r.Assign(nil); b < 0 || b >= 4 {
		t.Fatalf("no available bucket: %d", b)
	}
}

func index(s []int32, v int32) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func BenchmarkEncodeAndBucket(b *testing.B) {
	cols := []types.Field{{Name: "k", Type: types.DataType{Root: types.String}}, {Name: "id", Type: types.DataType{Root: types.BigInt}}}
	schema, _ := types.ArrowSchema(cols)
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	for i := range 1024 {
		rb.Field(0).(*array.StringBuilder).Append("customer-" + strings.Repeat("x", i%17))
		rb.Field(1).(*array.Int64Builder).Append(int64(i) * 7919)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	enc, err := NewKeyEncoder(cols, []string{"k", "id"})
	if err != nil {
		b.Fatal(err)
	}
	var key []byte
	b.ReportAllocs()
	for b.Loop() {
		for row := range 1024 {
			key, _ = enc.Encode(key[:0], rec, row)
			if _, err := Bucket(key, 16); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(1024*b.N)/b.Elapsed().Seconds(), "rows/s")
}
