package appender

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/types"
)

func TestSameLayout(t *testing.T) {
	mk := func(dt types.DataType) arrow.DataType {
		f, err := types.ArrowField("c", dt)
		if err != nil {
			t.Fatal(err)
		}
		return f.Type
	}
	ts := func(p int) types.DataType { return types.DataType{Root: types.TimestampNTZ, Precision: p} }
	dec := func(p, s int) types.DataType { return types.DataType{Root: types.Decimal, Precision: p, Scale: s} }
	str := types.DataType{Root: types.String}
	strN := types.DataType{Root: types.String, Nullable: true}
	for _, tc := range []struct {
		a, b types.DataType
		same bool
	}{
		{ts(3), ts(2), true}, // both milliseconds
		{ts(3), ts(6), false},
		{dec(10, 2), dec(10, 3), false},
		{types.DataType{Root: types.Array, Element: &str}, types.DataType{Root: types.Array, Element: &strN}, true},
		{types.DataType{Root: types.Char, Length: 3}, str, true}, // both utf8
		{types.DataType{Root: types.Binary, Length: 3}, types.DataType{Root: types.Binary, Length: 4}, false},
		{types.DataType{Root: types.Int}, types.DataType{Root: types.Date}, false},
	} {
		if got := sameLayout(mk(tc.a), mk(tc.b)); got != tc.same {
			t.Errorf("%s vs %s: %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

func TestCheckRecordNestedNotNull(t *testing.T) {
	intNN := types.DataType{Root: types.Int}
	cols := []types.Field{{Name: "r", Type: types.DataType{Root: types.Row, Nullable: true, Fields: []types.Field{{Name: "x", Type: intNN}}}}}
	// The batch marks x nullable, the table does not: the layout is the
	// same, so only actual nulls decide.
	loose := []types.Field{{Name: "r", Type: types.DataType{Root: types.Row, Nullable: true, Fields: []types.Field{{Name: "x", Type: types.DataType{Root: types.Int, Nullable: true}}}}}}
	schema, err := types.ArrowSchema(loose)
	if err != nil {
		t.Fatal(err)
	}
	strict, err := types.ArrowSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	ts := &tableSchema{cols: cols, arrow: strict}
	for _, tc := range []struct {
		name    string
		rows    func(sb *array.StructBuilder)
		wantErr string
	}{
		{"values", func(sb *array.StructBuilder) {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(1)
		}, ""},
		{"null row hides null x", func(sb *array.StructBuilder) {
			sb.AppendNull()
		}, ""},
		{"null x in a present row", func(sb *array.StructBuilder) {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).AppendNull()
		}, "field x: null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rb := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
			defer rb.Release()
			tc.rows(rb.Field(0).(*array.StructBuilder))
			rec := rb.NewRecordBatch()
			defer rec.Release()
			err := checkRecord(rec, ts)
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("checkRecord: %v, want %q", err, tc.wantErr)
			}
		})
	}
}
