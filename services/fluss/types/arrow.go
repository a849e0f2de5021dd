package types

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// ArrowSchema is the Arrow schema Fluss uses for a log table with these
// columns: the same mapping as Fluss's ArrowUtils, so that batches built from
// it are read by Fluss readers without conversion.
func ArrowSchema(columns []Field) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		f, err := ArrowField(c.Name, c.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil), nil
}

// ArrowField maps one Fluss column or nested field onto its Arrow field.
func ArrowField(name string, t DataType) (arrow.Field, error) {
	dt, err := arrowType(t)
	if err != nil {
		return arrow.Field{}, err
	}
	return arrow.Field{Name: name, Type: dt, Nullable: t.Nullable}, nil
}

func arrowType(t DataType) (arrow.DataType, error) {
	switch t.Root {
	case Boolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case TinyInt:
		return arrow.PrimitiveTypes.Int8, nil
	case SmallInt:
		return arrow.PrimitiveTypes.Int16, nil
	case Int:
		return arrow.PrimitiveTypes.Int32, nil
	case BigInt:
		return arrow.PrimitiveTypes.Int64, nil
	case Float:
		return arrow.PrimitiveTypes.Float32, nil
	case Double:
		return arrow.PrimitiveTypes.Float64, nil
	case Decimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, nil
	case Char, String:
		return arrow.BinaryTypes.String, nil
	case Binary:
		return &arrow.FixedSizeBinaryType{ByteWidth: t.Length}, nil
	case Bytes:
		return arrow.BinaryTypes.Binary, nil
	case Date:
		return arrow.FixedWidthTypes.Date32, nil
	case Time:
		// Fluss picks the unit (and with it the width) from the precision.
		switch {
		case t.Precision == 0:
			return arrow.FixedWidthTypes.Time32s, nil
		case t.Precision <= 3:
			return arrow.FixedWidthTypes.Time32ms, nil
		case t.Precision <= 6:
			return arrow.FixedWidthTypes.Time64us, nil
		default:
			return arrow.FixedWidthTypes.Time64ns, nil
		}
	case TimestampNTZ, TimestampLTZ:
		// Both are zone-less Arrow timestamps; LTZ values are UTC instants.
		return &arrow.TimestampType{Unit: timestampUnit(t.Precision)}, nil
	case Array:
		elem, err := ArrowField("element", *t.Element)
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(elem), nil
	case Map:
		key, err := arrowType(*t.Key)
		if err != nil {
			return nil, err
		}
		val, err := arrowType(*t.Value)
		if err != nil {
			return nil, err
		}
		m := arrow.MapOf(key, val)
		m.SetItemNullable(t.Value.Nullable)
		return m, nil
	case Row:
		fields := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			af, err := ArrowField(f.Name, f.Type)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			fields[i] = af
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("type %s has no Arrow mapping", t.Root)
}

func timestampUnit(precision int) arrow.TimeUnit {
	switch {
	case precision == 0:
		return arrow.Second
	case precision <= 3:
		return arrow.Millisecond
	case precision <= 6:
		return arrow.Microsecond
	default:
		return arrow.Nanosecond
	}
}
