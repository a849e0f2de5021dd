package bucketing

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ferrygw/ferry/services/fluss/compacted"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// KeyEncoder encodes a row's bucket key columns the way Fluss's
// CompactedKeyEncoder does (the default, non-lake encoding): the key fields
// one after another in compacted-row form (compacted.AppendValue), with no
// null bitmap since key columns may not be null. The same bytes are a
// primary-key table's key in its KV records.
type KeyEncoder struct {
	cols  []int
	types []types.DataType
	names []string
}

// NewKeyEncoder prepares an encoder for the named bucket keys of a table
// with these columns.
func NewKeyEncoder(columns []types.Field, keys []string) (*KeyEncoder, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("bucketing: no bucket keys")
	}
	e := &KeyEncoder{}
	for _, k := range keys {
		idx := -1
		for i, c := range columns {
			if c.Name == k {
				idx = i
				break
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("bucketing: bucket key %q is not a column", k)
		}
		t := columns[idx].Type
		switch t.Root {
		case types.Array, types.Map, types.Row:
			return nil, fmt.Errorf("bucketing: bucket key %q has type %s, which Fluss cannot hash", k, t)
		}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("bucketing: bucket key %q: %w", k, err)
		}
		e.cols = append(e.cols, idx)
		e.types = append(e.types, t)
		e.names = append(e.names, k)
	}
	return e, nil
}

// Encode appends the bucket key of row to dst.
func (e *KeyEncoder) Encode(dst []byte, rec arrow.RecordBatch, row int) ([]byte, error) {
	if row < 0 || int64(row) >= rec.NumRows() {
		return dst, fmt.Errorf("bucketing: row %d outside 0..%d", row, rec.NumRows()-1)
	}
	for i, c := range e.cols {
		if c >= int(rec.NumCols()) {
			return dst, fmt.Errorf("bucketing: record has %d columns, key %q is column %d", rec.NumCols(), e.names[i], c)
		}
		var err error
		dst, err = e.appendValue(dst, rec.Column(c), row, e.types[i])
		if err != nil {
			return dst, fmt.Errorf("bucketing: key %q row %d: %w", e.names[i], row, err)
		}
	}
	return dst, nil
}

func (e *KeyEncoder) appendValue(dst []byte, col arrow.Array, row int, t types.DataType) ([]byte, error) {
	if col.IsNull(row) {
		return dst, fmt.Errorf("null value in a bucket key column")
	}
	return compacted.AppendValue(dst, col, row, t)
}
