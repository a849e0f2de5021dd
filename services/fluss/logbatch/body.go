package logbatch

import (
	"fmt"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// This file turns Arrow arrays into the field nodes and buffers of an Arrow
// IPC record batch exactly as Arrow Java's VectorUnloader produces them from
// the vectors Fluss's ArrowWriter fills. That differs from what arrow-go's
// own IPC writer emits in ways a byte comparison sees:
//   - every field has its validity buffer, ceil(n/8) bytes, even without nulls;
//   - values under a null slot are zero, and null variable-width or list
//     entries have zero length;
//   - offsets start at 0 and the offsets buffer is empty for zero entries;
//   - children of a null ROW are null too (Java never sets them);
//   - buffers are unpadded in the layout; only their start offsets are
//     aligned to 8 bytes.

type fieldNode struct{ length, nulls int64 }

// span is a half-open range of logical indices of an array.
type span struct{ start, end int }

// slab hands out zeroed scratch memory that stays valid (no reallocation of
// earlier chunks) until reset, so buffers can point into it while more are
// being built. Chunks are kept across batches.
type slab struct {
	chunks [][]byte
	cur    int
	used   int
}

const minChunk = 64 << 10

func (s *slab) alloc(n int) []byte {
	b := s.allocUncleared(n)
	clear(b)
	return b
}

// allocUncleared is alloc for a caller that writes every byte it keeps:
// the memory may hold an earlier batch's bytes.
func (s *slab) allocUncleared(n int) []byte {
	for s.cur < len(s.chunks) {
		c := s.chunks[s.cur]
		if len(c)-s.used >= n {
			b := c[s.used : s.used+n : s.used+n]
			s.used += n
			return b
		}
		s.cur++
		s.used = 0
	}
	size := max(n, minChunk, 2*cap(s.last()))
	c := make([]byte, size)
	s.chunks = append(s.chunks, c)
	s.cur = len(s.chunks) - 1
	s.used = n
	return c[:n:n]
}

func (s *slab) last() []byte {
	if len(s.chunks) == 0 {
		return nil
	}
	return s.chunks[len(s.chunks)-1]
}

func (s *slab) reset() { s.cur, s.used = 0, 0 }

// bodyEncoder collects nodes and buffers of one record batch in Java order
// (pre-order over fields, each field's buffers in layout order).
type bodyEncoder struct {
	nodes []fieldNode
	bufs  [][]byte
	mem   slab
	spans [][]span // per nesting depth, reused
}

func (e *bodyEncoder) reset() {
	e.nodes = e.nodes[:0]
	clear(e.bufs)
	e.bufs = e.bufs[:0]
	e.mem.reset()
}

func (e *bodyEncoder) encodeRecord(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	whole := []span{{0, n}}
	for i, col := range rec.Columns() {
		if err := e.encode(col, whole, nil, n, 0); err != nil {
			return fmt.Errorf("column %d (%s): %w", i, rec.Schema().Field(i).Name, err)
		}
	}
	return nil
}

// encode appends the node and buffers of arr restricted to spans (whose
// lengths add up to n). parentValid, when not nil, is an n-bit bitmap of the
// enclosing ROW's validity: a slot is null if either says so.
func (e *bodyEncoder) encode(arr arrow.Array, spans []span, parentValid []byte, n int, depth int) error {
	data := arr.Data()
	valid, nulls := e.validity(data, spans, parentValid, n)
	e.nodes = append(e.nodes, fieldNode{int64(n), int64(nulls)})
	e.bufs = append(e.bufs, valid)

	switch dt := arr.DataType().(type) {
	case *arrow.BooleanType:
		e.bufs = append(e.bufs, e.bitValues(data, spans, valid, nulls, n))
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Float32Type, *arrow.Float64Type, *arrow.Date32Type,
		*arrow.Time32Type, *arrow.Time64Type, *arrow.TimestampType, *arrow.Decimal128Type:
		w := dt.(arrow.FixedWidthDataType).BitWidth() / 8
		e.bufs = append(e.bufs, e.fixed(data, w, spans, valid, nulls, n))
	case *arrow.FixedSizeBinaryType:
		e.bufs = append(e.bufs, e.fixed(data, dt.ByteWidth, spans, valid, nulls, n))
	case *arrow.StringType, *arrow.BinaryType:
		offs, vals := e.varWidth(data, spans, valid, nulls, n)
		e.bufs = append(e.bufs, offs, vals)
	case *arrow.ListType, *arrow.MapType:
		offs, child, childN := e.listOffsets(data, spans, valid, nulls, n, depth)
		e.bufs = append(e.bufs, offs)
		childArr := arr.(interface{ ListValues() arrow.Array }).ListValues()
		if err := e.encode(childArr, child, nil, childN, depth+1); err != nil {
			return fmt.Errorf("%s element: %w", dt, err)
		}
	case *arrow.StructType:
		st := arr.(interface {
			NumField() int
			Field(int) arrow.Array
		})
		for i := 0; i < st.NumField(); i++ {
			if err := e.encode(st.Field(i), spans, valid, n, depth); err != nil {
				return fmt.Errorf("field %s: %w", dt.Field(i).Name, err)
			}
		}
	default:
		return fmt.Errorf("arrow type %s has no Fluss log representation", arr.DataType())
	}
	return nil
}

func singleFromZero(spans []span, n int) bool {
	return len(spans) == 1 && spans[0].start == 0 && spans[0].end == n
}

// validity returns the n-bit validity bitmap (trailing bits zero) and the
// null count.
func (e *bodyEncoder) validity(data arrow.ArrayData, spans []span, parentValid []byte, n int) ([]byte, int) {
	out := e.mem.alloc((n + 7) / 8)
	if n == 0 {
		return out, 0
	}
	off := data.Offset()
	var src []byte
	if b := data.Buffers()[0]; b != nil && data.NullN() > 0 {
		src = b.Bytes()
	}
	switch {
	case src == nil && parentValid == nil:
		// No nulls at all: whole bytes of ones, then the tail.
		full := n / 8
		for i := range out[:full] {
			out[i] = 0xFF
		}
		if r := n % 8; r != 0 {
			out[full] = byte(1<<r - 1)
		}
		return out, 0
	case src != nil && off%8 == 0 && singleFromZero(spans, n):
		copy(out, src[off/8:])
		if r := n % 8; r != 0 {
			out[len(out)-1] &= byte(1<<r - 1)
		}
	default:
		i := 0
		for _, s := range spans {
			for j := s.start; j < s.end; j++ {
				if src == nil || bitutil.BitIsSet(src, off+j) {
					bitutil.SetBit(out, i)
				}
				i++
			}
		}
	}
	if parentValid != nil {
		for i := range out {
			out[i] &= parentValid[i]
		}
	}
	ones := 0
	for _, b := range out {
		ones += bits.OnesCount8(b)
	}
	return out, n - ones
}

// fixed returns the values buffer of a fixed-width column: n*w bytes, zero
// under nulls.
func (e *bodyEncoder) fixed(data arrow.ArrayData, w int, spans []span, valid []byte, nulls, n int) []byte {
	if n == 0 {
		return nil
	}
	src := data.Buffers()[1].Bytes()
	off := data.Offset()
	if nulls == 0 && singleFromZero(spans, n) {
		return src[off*w : (off+n)*w]
	}
	out := e.mem.alloc(n * w)
	pos := 0
	for _, s := range spans {
		pos += copy(out[pos:], src[(off+s.start)*w:(off+s.end)*w])
	}
	if nulls > 0 {
		zeroNulls(out, w, valid, n)
	}
	return out
}

// zeroNulls clears the w-byte slots of out whose validity bit is 0,
// skipping fully valid bytes of the bitmap.
func zeroNulls(out []byte, w int, valid []byte, n int) {
	for byteIdx, v := range valid {
		if v == 0xFF {
			continue
		}
		base := byteIdx * 8
		for bit := 0; bit < 8 && base+bit < n; bit++ {
			if v&(1<<bit) == 0 {
				i := base + bit
				clear(out[i*w : (i+1)*w])
			}
		}
	}
}

// bitValues returns a BOOLEAN column's value bits, false under nulls.
func (e *bodyEncoder) bitValues(data arrow.ArrayData, spans []span, valid []byte, nulls, n int) []byte {
	if n == 0 {
		return nil
	}
	src := data.Buffers()[1].Bytes()
	off := data.Offset()
	out := e.mem.alloc((n + 7) / 8)
	if off%8 == 0 && singleFromZero(spans, n) {
		copy(out, src[off/8:])
		if r := n % 8; r != 0 {
			out[len(out)-1] &= byte(1<<r - 1)
		}
	} else {
		i := 0
		for _, s := range spans {
			for j := s.start; j < s.end; j++ {
				if bitutil.BitIsSet(src, off+j) {
					bitutil.SetBit(out, i)
				}
				i++
			}
		}
	}
	if nulls > 0 {
		for i := range out {
			out[i] &= valid[i]
		}
	}
	return out
}

func int32s(b []byte) []int32 { return arrow.Int32Traits.CastFromBytes(b) }

// varWidth returns the offsets and data buffers of a STRING/BYTES column.
func (e *bodyEncoder) varWidth(data arrow.ArrayData, spans []span, valid []byte, nulls, n int) ([]byte, []byte) {
	if n == 0 {
		return nil, nil
	}
	offsets := int32s(data.Buffers()[1].Bytes())
	var values []byte
	if b := data.Buffers()[2]; b != nil {
		values = b.Bytes()
	}
	off := data.Offset()
	if singleFromZero(spans, n) && offsets[off] == 0 && nullsEmpty(offsets[off:], valid, nulls, n) {
		return arrow.Int32Traits.CastToBytes(offsets[off : off+n+1]), values[:offsets[off+n]]
	}
	total := 0
	i := 0
	for _, s := range spans {
		for j := s.start; j < s.end; j++ {
			if nulls == 0 || bitutil.BitIsSet(valid, i) {
				total += int(offsets[off+j+1] - offsets[off+j])
			}
			i++
		}
	}
	ob := e.mem.alloc((n + 1) * 4)
	out := int32s(ob)
	vb := e.mem.alloc(total)
	pos := 0
	i = 0
	for _, s := range spans {
		for j := s.start; j < s.end; j++ {
			if nulls == 0 || bitutil.BitIsSet(valid, i) {
				pos += copy(vb[pos:], values[offsets[off+j]:offsets[off+j+1]])
			}
			i++
			out[i] = int32(pos)
		}
	}
	return ob, vb
}

// nullsEmpty reports whether every null slot of offs (n+1 offsets) has zero
// length, as Java writes them.
func nullsEmpty(offs []int32, valid []byte, nulls, n int) bool {
	if nulls == 0 {
		return true
	}
	for i := 0; i < n; i++ {
		if !bitutil.BitIsSet(valid, i) && offs[i+1] != offs[i] {
			return false
		}
	}
	return true
}

// listOffsets returns the offsets buffer of an ARRAY/MAP column and the
// element spans (in the child's logical indices) the encoded entries cover.
func (e *bodyEncoder) listOffsets(data arrow.ArrayData, spans []span, valid []byte, nulls, n int, depth int) ([]byte, []span, int) {
	for len(e.spans) <= depth {
		e.spans = append(e.spans, nil)
	}
	child := e.spans[depth][:0]
	if n == 0 {
		e.spans[depth] = child
		return nil, child, 0
	}
	offsets := int32s(data.Buffers()[1].Bytes())
	off := data.Offset()
	var ob []byte
	if singleFromZero(spans, n) && offsets[off] == 0 && nullsEmpty(offsets[off:], valid, nulls, n) {
		ob = arrow.Int32Traits.CastToBytes(offsets[off : off+n+1])
	} else {
		ob = e.mem.alloc((n + 1) * 4)
	}
	out := int32s(ob)
	rebuild := &out[0] != &offsets[off]
	pos := 0
	i := 0
	for _, s := range spans {
		for j := s.start; j < s.end; j++ {
			if nulls == 0 || bitutil.BitIsSet(valid, i) {
				a, b := int(offsets[off+j]), int(offsets[off+j+1])
				if b > a {
					if k := len(child) - 1; k >= 0 && child[k].end == a {
						child[k].end = b
					} else {
						child = append(child, span{a, b})
					}
					pos += b - a
				}
			}
			i++
			if rebuild {
				out[i] = int32(pos)
			}
		}
	}
	e.spans[depth] = child
	return ob, child, pos
}
