// Package compacted encodes rows in Fluss 0.9.1's compacted binary row
// format (CompactedRowWriter): the value format of primary-key tables with
// table.kv.format=compacted (the default) and the field encoding of
// CompactedKeyEncoder's keys.
//
//	row   = null bitmap, ceil(fields/8) bytes, bit i (LSB first) set when field i is NULL
//	        then every non-null field in column order, encoded by AppendValue:
//	BOOLEAN, TINYINT     1 byte
//	SMALLINT             2 bytes little-endian
//	INT, DATE, TIME      unsigned LEB128 varint of the int32 bits (TIME in ms of day)
//	BIGINT               unsigned LEB128 varint of the int64 bits
//	FLOAT, DOUBLE        IEEE bits, little-endian
//	CHAR, STRING,
//	BINARY, BYTES        varint length, bytes (CHAR/BINARY are not padded)
//	DECIMAL(p<=18)       varint of the unscaled long
//	DECIMAL(p>18)        varint length, unscaled two's complement big-endian, minimal
//	TIMESTAMP(p<=3)      varint of epoch millis
//	TIMESTAMP(p>3)       varint of epoch millis (floor), varint of nano-of-millisecond
//
// Negative integers take the full 5 or 10 varint bytes: Fluss uses plain
// (not zigzag) varints.
package compacted

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// RowEncoder encodes rows of an Arrow record batch (as types.ArrowSchema
// lays out the table's columns) into compacted rows. It holds no buffers and
// is safe for concurrent use.
type RowEncoder struct {
	columns   []types.Field
	nullBytes int
}

// NewRowEncoder prepares an encoder for a table with these columns. Columns
// of type ARRAY, MAP or ROW are refused: their nested binary encoding is not
// implemented.
func NewRowEncoder(columns []types.Field) (*RowEncoder, error) {
	if len(columns) == 0 {
		return nil, fmt.Errorf("compacted: no columns")
	}
	for _, c := range columns {
		if err := c.Type.Validate(); err != nil {
			return nil, fmt.Errorf("compacted: column %q: %w", c.Name, err)
		}
		switch c.Type.Root {
		case types.Array, types.Map, types.Row:
			return nil, fmt.Errorf("compacted: column %q has type %s; nested types are not supported in compacted rows yet", c.Name, c.Type)
		}
	}
	return &RowEncoder{columns: columns, nullBytes: (len(columns) + 7) / 8}, nil
}

// Append appends the compacted row for row of rec to dst. On error dst is
// returned at its original length.
func (e *RowEncoder) Append(dst []byte, rec arrow.RecordBatch, row int) ([]byte, error) {
	if int(rec.NumCols()) != len(e.columns) {
		return dst, fmt.Errorf("compacted: record has %d columns, the table %d", rec.NumCols(), len(e.columns))
	}
	if row < 0 || int64(row) >= rec.NumRows() {
		return dst, fmt.Errorf("compacted: row %d outside 0..%d", row, rec.NumRows()-1)
	}
	start := len(dst)
	for range e.nullBytes {
		dst = append(dst, 0)
	}
	for i, c := range e.columns {
		col := rec.Column(i)
		if col.IsNull(row) {
			if !c.Type.Nullable {
				return dst[:start], fmt.Errorf("compacted: row %d: null in NOT NULL column %q", row, c.Name)
			}
			dst[start+i/8] |= 1 << (i % 8)
			continue
		}
		var err error
		if dst, err = AppendValue(dst, col, row, c.Type); err != nil {
			return dst[:start], fmt.Errorf("compacted: row %d column %q: %w", row, c.Name, err)
		}
	}
	return dst, nil
}
