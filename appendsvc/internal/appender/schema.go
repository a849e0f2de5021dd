package appender

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/types"
)

type schemaKey struct {
	table    int64
	schemaID int32
}

// tableSchema is a schema version as the check needs it. Versions never
// change once created, so they are cached for the life of the service.
type tableSchema struct {
	cols  []types.Field
	arrow *arrow.Schema
}

// schemaOf returns a schema version of table, cached by table id (Fluss
// never reuses one, unlike paths).
func (s *Service) schemaOf(ctx context.Context, table Table, schemaID int32) (*tableSchema, error) {
	key := schemaKey{table.ID, schemaID}
	if v, ok := s.schemas.Load(key); ok {
		return v.(*tableSchema), nil
	}
	cols, err := s.fluss.TableSchema(ctx, table, schemaID)
	if err != nil {
		return nil, err
	}
	as, err := types.ArrowSchema(cols)
	if err != nil {
		// A Fluss type Ferry cannot map: no batch can be written for it.
		return nil, invalid(fluss.CodeInvalidTable, "table %s schema %d: %v", table, schemaID, err)
	}
	ts := &tableSchema{cols: cols, arrow: as}
	s.schemas.Store(key, ts)
	return ts, nil
}

// checkRecord verifies that rec carries the table's columns, in order, with
// the Arrow types Fluss reads them with, and no nulls where the table has
// NOT NULL. Fluss's server stores Arrow bodies without decoding them, so a
// mismatch would be acknowledged and then fail every reader.
func checkRecord(rec arrow.RecordBatch, ts *tableSchema) error {
	if int(rec.NumCols()) != len(ts.cols) {
		return fmt.Errorf("batch has %d columns, the table schema %d", rec.NumCols(), len(ts.cols))
	}
	for i, c := range ts.cols {
		got, want := rec.Schema().Field(i), ts.arrow.Field(i)
		if got.Name != want.Name {
			return fmt.Errorf("column %d is %q, the table has %q", i, got.Name, want.Name)
		}
		if !sameLayout(got.Type, want.Type) {
			return fmt.Errorf("column %s: Arrow type %s, the table's %s needs %s", c.Name, got.Type, c.Type, want.Type)
		}
		if err := checkNulls(rec.Column(i), c.Type); err != nil {
			return fmt.Errorf("column %s: %w", c.Name, err)
		}
	}
	return nil
}

// sameLayout tells whether two Arrow types lay data out the same way in a
// record batch body. Field names below the top level, nullability flags and
// timestamp zones are not in the body (Fluss readers take them from the
// table schema), so they may differ; actual nulls are checked by checkNulls.
func sameLayout(a, b arrow.DataType) bool {
	if a.ID() != b.ID() {
		return false
	}
	switch at := a.(type) {
	case *arrow.TimestampType:
		return at.Unit == b.(*arrow.TimestampType).Unit
	case *arrow.Time32Type:
		return at.Unit == b.(*arrow.Time32Type).Unit
	case *arrow.Time64Type:
		return at.Unit == b.(*arrow.Time64Type).Unit
	case *arrow.Decimal128Type:
		bt := b.(*arrow.Decimal128Type)
		return at.Precision == bt.Precision && at.Scale == bt.Scale
	case *arrow.FixedSizeBinaryType:
		return at.ByteWidth == b.(*arrow.FixedSizeBinaryType).ByteWidth
	case *arrow.MapType:
		bt := b.(*arrow.MapType)
		return sameLayout(at.KeyType(), bt.KeyType()) && sameLayout(at.ItemType(), bt.ItemType())
	case *arrow.ListType:
		return sameLayout(at.Elem(), b.(*arrow.ListType).Elem())
	case *arrow.StructType:
		bt := b.(*arrow.StructType)
		if at.NumFields() != bt.NumFields() {
			return false
		}
		for i := range at.NumFields() {
			if !sameLayout(at.Field(i).Type, bt.Field(i).Type) {
				return false
			}
		}
	}
	return true
}

// checkNulls rejects nulls in NOT NULL types, nested ones included. Values
// under a null parent are not looked at (Fluss writes them as null anyway).
func checkNulls(a arrow.Array, t types.DataType) error {
	if !t.Nullable && a.NullN() > 0 {
		return fmt.Errorf("%d nulls in %s", a.NullN(), t)
	}
	switch t.Root {
	case types.Array:
		if l, ok := a.(*array.List); ok && t.Element != nil {
			return checkNulls(l.ListValues(), *t.Element)
		}
	case types.Map:
		if m, ok := a.(*array.Map); ok && t.Key != nil && t.Value != nil {
			if m.Keys().NullN() > 0 {
				return fmt.Errorf("null map key")
			}
			return checkNulls(m.Items(), *t.Value)
		}
	case types.Row:
		st, ok := a.(*array.Struct)
		if !ok {
			return nil
		}
		for i, f := range t.Fields {
			child := st.Field(i)
			if !f.Type.Nullable && child.NullN() > 0 {
				// Nulls under null rows are fine; others are not.
				for j := 0; j < child.Len(); j++ {
					if child.IsNull(j) && st.IsValid(j) {
						return fmt.Errorf("field %s: null in %s", f.Name, f.Type)
					}
				}
			}
			if err := checkNulls(child, nullableCopy(f.Type)); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
	}
	return nil
}

// nullableCopy lets checkNulls descend into a field whose own nulls were
// already checked against its parent's validity.
func nullableCopy(t types.DataType) types.DataType {
	t.Nullable = true
	return t
}
