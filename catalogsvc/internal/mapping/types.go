package mapping

import (
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
)

var rootToProto = map[types.Root]catalogv1.TypeRoot{
	types.Boolean:      catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN,
	types.TinyInt:      catalogv1.TypeRoot_TYPE_ROOT_TINYINT,
	types.SmallInt:     catalogv1.TypeRoot_TYPE_ROOT_SMALLINT,
	types.Int:          catalogv1.TypeRoot_TYPE_ROOT_INTEGER,
	types.BigInt:       catalogv1.TypeRoot_TYPE_ROOT_BIGINT,
	types.Float:        catalogv1.TypeRoot_TYPE_ROOT_FLOAT,
	types.Double:       catalogv1.TypeRoot_TYPE_ROOT_DOUBLE,
	types.Decimal:      catalogv1.TypeRoot_TYPE_ROOT_DECIMAL,
	types.Char:         catalogv1.TypeRoot_TYPE_ROOT_CHAR,
	types.String:       catalogv1.TypeRoot_TYPE_ROOT_STRING,
	types.Binary:       catalogv1.TypeRoot_TYPE_ROOT_BINARY,
	types.Bytes:        catalogv1.TypeRoot_TYPE_ROOT_BYTES,
	types.Date:         catalogv1.TypeRoot_TYPE_ROOT_DATE,
	types.Time:         catalogv1.TypeRoot_TYPE_ROOT_TIME,
	types.TimestampNTZ: catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ,
	types.TimestampLTZ: catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ,
	types.Array:        catalogv1.TypeRoot_TYPE_ROOT_ARRAY,
	types.Map:          catalogv1.TypeRoot_TYPE_ROOT_MAP,
	types.Row:          catalogv1.TypeRoot_TYPE_ROOT_ROW,
}

// FieldsToProto converts columns of the shared type model into the
// catalog contract's form.
func FieldsToProto(fields []types.Field) []*catalogv1.Field {
	out := make([]*catalogv1.Field, len(fields))
	for i, f := range fields {
		out[i] = &catalogv1.Field{Name: f.Name, Type: TypeToProto(f.Type)}
	}
	return out
}

// TypeToProto converts one data type. Parameters that do not apply to the
// root are zero in the model and stay zero.
func TypeToProto(t types.DataType) *catalogv1.DataType {
	p := &catalogv1.DataType{
		Root:      rootToProto[t.Root],
		Nullable:  t.Nullable,
		Length:    int32(t.Length),
		Precision: int32(t.Precision),
		Scale:     int32(t.Scale),
	}
	if t.Element != nil {
		p.Element = TypeToProto(*t.Element)
	}
	if t.Key != nil {
		p.Key = TypeToProto(*t.Key)
	}
	if t.Value != nil {
		p.Value = TypeToProto(*t.Value)
	}
	if len(t.Fields) > 0 {
		p.Fields = FieldsToProto(t.Fields)
	}
	return p
}
