package convert

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// The fast decoder's columns. While every value of a batch so far had the
// fast shape, the fast decoder writes each value straight into Arrow
// buffers of its own, at its row, and the batch's arrays are made from
// those buffers: no builder call, capacity check or bitmap update per
// value, and nothing to undo for a value that turns out not to fit (its
// row is simply not counted). At the first value that does not fit, the
// rows so far are appended to the builders (spill) and the rest of the
// batch goes through them, fast shape or not.
//
// Framed Avro values fill the same columns (avrofast.go): a decoder made
// by newFastColumns, without the JSON keys, driven by the Avro records'
// compiled plans.

// colBuf is one Arrow buffer being filled: mem holds it, b is its bytes.
type colBuf struct {
	mem *memory.Buffer
	b   []byte
}

func newColBuf(mem memory.Allocator, n int) colBuf {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n) // zeroed: the allocators clear what they hand out
	return colBuf{buf, buf.Buf()}
}

// grow makes room for at least n bytes, keeping what is there.
func (c *colBuf) grow(n int) {
	c.mem.Resize(max(n, 2*len(c.b)))
	c.b = c.mem.Buf()
}

func (c *colBuf) release() {
	if c.mem != nil {
		c.mem.Release()
	}
	*c = colBuf{}
}

func bitmapLen(n int) int { return (n + 7) / 8 }

func setBit(b []byte, i int) { b[i>>3] |= 1 << (i & 7) }

// begin starts a batch of at most n rows (rawSize bytes of records) in the
// decoder's own columns. After batches whose first value did not fit (a
// producer writing spaces, say), it skips as many batches as it has such
// batches in a row, up to 64, before trying again: the columns would only
// be made to be dropped.
func (d *fastDecoder) begin(mem memory.Allocator, n, rawSize int) {
	d.releaseColumns()
	d.rows = 0
	if d.skip > 0 {
		d.skip--
		return
	}
	d.columnar, d.mem = true, mem
	for i := range d.fields {
		f := &d.fields[i]
		f.nullRows = f.nullRows[:0]
		switch {
		case f.kind == fastBool:
			f.vals = newColBuf(mem, bitmapLen(n))
		case f.width > 0:
			f.vals = newColBuf(mem, n*f.width)
		default:
			f.offs = newColBuf(mem, (n+1)*4)
			f.vals = newColBuf(mem, max(64, min(f.dataPerRow*n, rawSize)))
		}
	}
}

// store writes the slot's value (not null) at row r of the field's columns.
func (f *fastField) store(r int) {
	v := f.vals.b
	switch f.kind {
	case fastBool:
		if f.i != 0 {
			setBit(v, r)
		}
	case fastInt:
		switch f.width {
		case 8:
			binary.LittleEndian.PutUint64(v[r*8:], uint64(f.i))
		case 4:
			binary.LittleEndian.PutUint32(v[r*4:], uint32(f.i))
		case 2:
			binary.LittleEndian.PutUint16(v[r*2:], uint16(f.i))
		default:
			v[r] = byte(f.i)
		}
	case fastFloat32:
		binary.LittleEndian.PutUint32(v[r*4:], math.Float32bits(float32(f.f)))
	case fastFloat64:
		binary.LittleEndian.PutUint64(v[r*8:], math.Float64bits(f.f))
	case fastDecimal:
		// Decimal128, low word first; the value fits an int64.
		binary.LittleEndian.PutUint64(v[r*16:], uint64(f.i))
		binary.LittleEndian.PutUint64(v[r*16+8:], uint64(f.i>>63))
	case fastDate:
		binary.LittleEndian.PutUint32(v[r*4:], uint32(f.i))
	case fastTimestamp:
		binary.LittleEndian.PutUint64(v[r*8:], uint64(f.i))
	case fastString, fastBytes:
		f.putBytes(r, f.v)
	}
}

// readInto reads the value at pos (not null) into row r of the field's
// columns and returns the position after it, or -1 as read does. Strings
// are copied from the input, and base64 is decoded, straight into the
// values buffer.
func (f *fastField) readInto(data []byte, pos, r int) int {
	switch f.kind {
	case fastString:
		v, end := readString(data, pos)
		if end < 0 || (f.t.Root == types.Char && len(v) > f.t.Length) {
			return -1
		}
		f.putBytes(r, v)
		return end
	case fastBytes:
		// The decoded bytes are fewer than the input left.
		start := int(binary.LittleEndian.Uint32(f.offs.b[r*4:]))
		if room := start + len(data) - pos; room > len(f.vals.b) {
			f.vals.grow(room)
		}
		v, end := readBase64(data, pos, f.vals.b[start:start])
		if end < 0 {
			if end = f.read(data, pos); end < 0 {
				return -1
			}
			f.putBytes(r, f.v)
			return end
		}
		binary.LittleEndian.PutUint32(f.offs.b[r*4+4:], uint32(start+len(v)))
		return end
	}
	// The common kinds skip the slot: read, check and store in one place.
	v := f.vals.b
	switch f.kind {
	case fastInt:
		n, end := readInt(data, pos)
		if end < 0 || n < f.lo || n > f.hi {
			return -1
		}
		switch f.width {
		case 8:
			binary.LittleEndian.PutUint64(v[r*8:], uint64(n))
		case 4:
			binary.LittleEndian.PutUint32(v[r*4:], uint32(n))
		case 2:
			binary.LittleEndian.PutUint16(v[r*2:], uint16(n))
		default:
			v[r] = byte(n)
		}
		return end
	case fastFloat64:
		x, end := readFloat64(data, pos)
		if end < 0 {
			return -1
		}
		binary.LittleEndian.PutUint64(v[r*8:], math.Float64bits(x))
		return end
	case fastDecimal:
		end := f.readDecimal(data, pos)
		if end < 0 {
			return -1
		}
		// Decimal128, low word first; the value fits an int64.
		binary.LittleEndian.PutUint64(v[r*16:], uint64(f.i))
		binary.LittleEndian.PutUint64(v[r*16+8:], uint64(f.i>>63))
		return end
	case fastTimestamp:
		end := f.readTimestamp(data, pos)
		if end < 0 {
			return -1
		}
		binary.LittleEndian.PutUint64(v[r*8:], uint64(f.i))
		return end
	case fastBool:
		switch {
		case hasAt(data, pos, trueLit):
			setBit(v, r)
			pos += len(trueLit)
		case hasAt(data, pos, falseLit):
			pos += len(falseLit)
		default:
			return -1
		}
		return pos
	}
	if pos = f.read(data, pos); pos >= 0 {
		f.store(r)
	}
	return pos
}

// putBytes writes v (not null) at row r of a STRING or BYTES column.
func (f *fastField) putBytes(r int, v []byte) {
	offs := f.offs.b
	start := int(binary.LittleEndian.Uint32(offs[r*4:]))
	end := start + len(v)
	if end > len(f.vals.b) {
		f.vals.grow(end)
	}
	copy(f.vals.b[start:end], v)
	binary.LittleEndian.PutUint32(offs[r*4+4:], uint32(end))
}

// storeNull writes a null at row r: the row is noted for the validity
// bitmap, made once the batch is done (nulls are rare, a bit per value is
// not), and the value stays zero (the buffers start zeroed), as Java's
// writer leaves it.
func (f *fastField) storeNull(r int) {
	f.nullRows = append(f.nullRows, int32(r))
	if f.kind == fastString || f.kind == fastBytes {
		copy(f.offs.b[r*4+4:r*4+8], f.offs.b[r*4:r*4+4])
	}
}

// load reads row r of the field's columns back into the slot; null says
// whether it is null.
func (f *fastField) load(r int, null bool) {
	if f.null = null; null {
		return
	}
	v := f.vals.b
	switch f.kind {
	case fastBool:
		f.i = int64(v[r>>3] >> (r & 7) & 1)
	case fastInt:
		switch f.width {
		case 8:
			f.i = int64(binary.LittleEndian.Uint64(v[r*8:]))
		case 4:
			f.i = int64(int32(binary.LittleEndian.Uint32(v[r*4:])))
		case 2:
			f.i = int64(int16(binary.LittleEndian.Uint16(v[r*2:])))
		default:
			f.i = int64(int8(v[r]))
		}
	case fastFloat32:
		f.f = float64(math.Float32frombits(binary.LittleEndian.Uint32(v[r*4:])))
	case fastFloat64:
		f.f = math.Float64frombits(binary.LittleEndian.Uint64(v[r*8:]))
	case fastDecimal:
		f.i = int64(binary.LittleEndian.Uint64(v[r*16:]))
	case fastDate:
		f.i = int64(int32(binary.LittleEndian.Uint32(v[r*4:])))
	case fastTimestamp:
		f.i = int64(binary.LittleEndian.Uint64(v[r*8:]))
	case fastString, fastBytes:
		start := binary.LittleEndian.Uint32(f.offs.b[r*4:])
		end := binary.LittleEndian.Uint32(f.offs.b[r*4+4:])
		f.v = v[start:end]
	}
}

// spill appends the rows decoded into the own columns so far to the
// builders and leaves the rest of the batch to them. The builders hold a
// row reserved for every record of the batch.
func (d *fastDecoder) spill() {
	if !d.columnar {
		return
	}
	d.columnar = false
	if d.rows == 0 {
		d.misses = min(d.misses+1, 64)
		d.skip = d.misses
	}
	for i := range d.fields {
		f := &d.fields[i]
		nulls := f.nullRows
		for r := 0; r < d.rows; r++ {
			null := len(nulls) > 0 && int(nulls[0]) == r
			if null {
				nulls = nulls[1:]
			}
			f.load(r, null)
			f.append()
		}
	}
	d.releaseColumns()
}

// arrays hands the own columns over as arrays of d.rows rows, in field
// order (the caller releases them), and notes each string column's bytes
// per row to size the next batch's.
func (d *fastDecoder) arrays() []arrow.Array {
	n := d.rows
	d.misses = 0
	out := make([]arrow.Array, len(d.fields))
	for i := range d.fields {
		f := &d.fields[i]
		// Rows are counted only when every value fitted, so the null
		// rows noted are all below n.
		var valid *memory.Buffer
		if len(f.nullRows) > 0 {
			valid = f.validity(d.mem, n)
			defer valid.Release()
		}
		var bufs []*memory.Buffer
		if f.offs.mem != nil {
			dataLen := int(binary.LittleEndian.Uint32(f.offs.b[n*4:]))
			f.offs.mem.ResizeNoShrink((n + 1) * 4)
			f.vals.mem.ResizeNoShrink(dataLen)
			if n > 0 {
				f.dataPerRow = (dataLen + n - 1) / n
			}
			bufs = []*memory.Buffer{valid, f.offs.mem, f.vals.mem}
		} else {
			bufs = []*memory.Buffer{valid, f.vals.mem}
		}
		data := array.NewData(f.b.Type(), n, bufs, nil, len(f.nullRows), 0)
		out[i] = array.MakeFromData(data)
		data.Release()
	}
	d.releaseColumns()
	return out
}

// validity returns the validity bitmap of n rows with the null rows noted.
func (f *fastField) validity(mem memory.Allocator, n int) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(bitmapLen(n))
	b := buf.Bytes()
	for i := range b {
		b[i] = 0xFF
	}
	if r := n % 8; r != 0 {
		b[len(b)-1] = byte(1<<r - 1)
	}
	for _, r := range f.nullRows {
		b[r>>3] &^= 1 << (r & 7)
	}
	return buf
}

// releaseColumns drops the decoder's references to its own columns.
func (d *fastDecoder) releaseColumns() {
	d.columnar = false
	for i := range d.fields {
		f := &d.fields[i]
		f.vals.release()
		f.offs.release()
	}
}
