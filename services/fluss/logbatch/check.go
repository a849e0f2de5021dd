package logbatch

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// CheckRecords checks a records section (AppendRecords' output, as another
// process sent it) against the Arrow form of a table's columns without
// decompressing it: one record batch message of rows rows, compressed with
// want, whose field nodes and buffers are as many as the columns' layout
// has, whose top-level columns each hold rows values, and whose NOT NULL
// columns hold no nulls. Fluss stores Arrow bodies without decoding them,
// so this is the check between a mismatched batch and an acknowledged one
// every reader then fails on. Two types with the same buffer layout (INT
// and FLOAT, say) are not told apart.
func CheckRecords(records []byte, schema *arrow.Schema, rows int32, want Compression) error {
	m, err := ParseMessage(records)
	if err != nil {
		return err
	}
	if m.Length != int64(rows) {
		return fmt.Errorf("logbatch: records section holds %d rows, %d expected", m.Length, rows)
	}
	if m.Compression != want {
		return fmt.Errorf("logbatch: records section compressed with %s, the table uses %s", m.Compression, want)
	}
	// ParseMessage allows trailing bytes; a section is exactly one message.
	if n := messagePrefixLen(records) + len(m.Metadata) + len(m.Body); n != len(records) {
		return fmt.Errorf("logbatch: records section of %d bytes holds a message of %d", len(records), n)
	}
	node, buf := 0, 0
	// Field(i), not Fields(), which copies the slice on every call.
	for i := range schema.NumFields() {
		f := schema.Field(i)
		nodes, bufs, err := layoutCounts(f.Type)
		if err != nil {
			return fmt.Errorf("logbatch: column %s: %w", f.Name, err)
		}
		if node+nodes > len(m.Nodes) || buf+bufs > len(m.Buffers) {
			return fmt.Errorf("logbatch: records section ends before column %d (%s): %d field nodes, %d buffers", i, f.Name, len(m.Nodes), len(m.Buffers))
		}
		top := m.Nodes[node]
		if top.Length != int64(rows) {
			return fmt.Errorf("logbatch: column %s holds %d values in a batch of %d rows", f.Name, top.Length, rows)
		}
		if !f.Nullable && top.NullCount != 0 {
			return fmt.Errorf("logbatch: NOT NULL column %s holds %d nulls", f.Name, top.NullCount)
		}
		node += nodes
		buf += bufs
	}
	if node != len(m.Nodes) || buf != len(m.Buffers) {
		return fmt.Errorf("logbatch: records section has %d field nodes and %d buffers, the table's %d columns have %d and %d",
			len(m.Nodes), len(m.Buffers), schema.NumFields(), node, buf)
	}
	return nil
}

// messagePrefixLen is the length of the continuation marker (if any) and
// the metadata length field in front of a message ParseMessage accepted.
func messagePrefixLen(records []byte) int {
	if binary.LittleEndian.Uint32(records) == 0xFFFFFFFF {
		return 8
	}
	return 4
}

// layoutCounts is how many field nodes and buffers the body encoder writes
// for a column of type dt (pre-order; a validity buffer for every node).
func layoutCounts(dt arrow.DataType) (nodes, bufs int, err error) {
	switch dt := dt.(type) {
	case *arrow.BooleanType, *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Float32Type, *arrow.Float64Type, *arrow.Date32Type, *arrow.Time32Type, *arrow.Time64Type,
		*arrow.TimestampType, *arrow.Decimal128Type, *arrow.FixedSizeBinaryType:
		return 1, 2, nil
	case *arrow.StringType, *arrow.BinaryType:
		return 1, 3, nil
	case *arrow.ListType:
		n, b, err := layoutCounts(dt.Elem())
		return 1 + n, 2 + b, err
	case *arrow.MapType:
		n, b, err := layoutCounts(dt.Elem())
		return 1 + n, 2 + b, err
	case *arrow.StructType:
		nodes, bufs = 1, 1
		for _, f := range dt.Fields() {
			n, b, err := layoutCounts(f.Type)
			if err != nil {
				return 0, 0, err
			}
			nodes, bufs = nodes+n, bufs+b
		}
		return nodes, bufs, nil
	}
	return 0, 0, fmt.Errorf("arrow type %s has no Fluss log representation", dt)
}
