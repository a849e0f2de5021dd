package goldentest

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/types"
)

func t(root types.Root) types.DataType { return types.DataType{Root: root, Nullable: true} }

func withP(root types.Root, p int) types.DataType {
	return types.DataType{Root: root, Nullable: true, Precision: p}
}

// AllTypesColumns is a log table schema with every Fluss type Ferry writes,
// every TIME/TIMESTAMP precision class, nested types inside each other and a
// NOT NULL column.
func AllTypesColumns() []types.Field {
	intT, strT, bigT, dblT := t(types.Int), t(types.String), t(types.BigInt), t(types.Double)
	arrBig := types.DataType{Root: types.Array, Nullable: true, Element: &bigT}
	arrStr := types.DataType{Root: types.Array, Nullable: true, Element: &strT}
	arrDbl := types.DataType{Root: types.Array, Nullable: true, Element: &dblT}
	keyStr := types.DataType{Root: types.String}
	keyInt := types.DataType{Root: types.Int}
	return []types.Field{
		{Name: "c_bool", Type: t(types.Boolean)},
		{Name: "c_tinyint", Type: t(types.TinyInt)},
		{Name: "c_smallint", Type: t(types.SmallInt)},
		{Name: "c_int", Type: t(types.Int)},
		{Name: "c_bigint", Type: t(types.BigInt)},
		{Name: "c_float", Type: t(types.Float)},
		{Name: "c_double", Type: t(types.Double)},
		{Name: "c_dec_5_2", Type: types.DataType{Root: types.Decimal, Nullable: true, Precision: 5, Scale: 2}},
		{Name: "c_dec_18_4", Type: types.DataType{Root: types.Decimal, Nullable: true, Precision: 18, Scale: 4}},
		{Name: "c_dec_38_10", Type: types.DataType{Root: types.Decimal, Nullable: true, Precision: 38, Scale: 10}},
		{Name: "c_char", Type: types.DataType{Root: types.Char, Nullable: true, Length: 5}},
		{Name: "c_string", Type: strT},
		{Name: "c_binary", Type: types.DataType{Root: types.Binary, Nullable: true, Length: 4}},
		{Name: "c_bytes", Type: t(types.Bytes)},
		{Name: "c_date", Type: t(types.Date)},
		{Name: "c_time0", Type: withP(types.Time, 0)},
		{Name: "c_time3", Type: withP(types.Time, 3)},
		{Name: "c_time6", Type: withP(types.Time, 6)},
		{Name: "c_time9", Type: withP(types.Time, 9)},
		{Name: "c_ts0", Type: withP(types.TimestampNTZ, 0)},
		{Name: "c_ts3", Type: withP(types.TimestampNTZ, 3)},
		{Name: "c_ts6", Type: withP(types.TimestampNTZ, 6)},
		{Name: "c_ts9", Type: withP(types.TimestampNTZ, 9)},
		{Name: "c_ltz0", Type: withP(types.TimestampLTZ, 0)},
		{Name: "c_ltz3", Type: withP(types.TimestampLTZ, 3)},
		{Name: "c_ltz6", Type: withP(types.TimestampLTZ, 6)},
		{Name: "c_ltz9", Type: withP(types.TimestampLTZ, 9)},
		{Name: "c_arr_int", Type: types.DataType{Root: types.Array, Nullable: true, Element: &intT}},
		{Name: "c_arr_arr", Type: types.DataType{Root: types.Array, Nullable: true, Element: &arrBig}},
		{Name: "c_map", Type: types.DataType{Root: types.Map, Nullable: true, Key: &keyStr, Value: &intT}},
		{Name: "c_map_arr", Type: types.DataType{Root: types.Map, Nullable: true, Key: &keyInt, Value: &arrStr}},
		{Name: "c_row", Type: types.DataType{Root: types.Row, Nullable: true, Fields: []types.Field{
			{Name: "a", Type: intT},
			{Name: "b", Type: strT},
			{Name: "c", Type: arrDbl},
			{Name: "d", Type: types.DataType{Root: types.Row, Nullable: true, Fields: []types.Field{{Name: "x", Type: bigT}}}},
		}}},
		{Name: "c_nn", Type: types.DataType{Root: types.Int}},
	}
}

// Record builds n rows of random but reproducible values (seed) for cols;
// nullable slots are null with probability nullPct/100, nested ones too.
func Record(mem memory.Allocator, cols []types.Field, n int, seed uint64, nullPct int) (arrow.RecordBatch, error) {
	schema, err := types.ArrowSchema(cols)
	if err != nil {
		return nil, err
	}
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	g := &filler{rnd: rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15)), nullPct: nullPct}
	for row := 0; row < n; row++ {
		for i, c := range cols {
			if err := g.fill(rb.Field(i), c.Type); err != nil {
				return nil, fmt.Errorf("column %s: %w", c.Name, err)
			}
		}
	}
	return rb.NewRecordBatch(), nil
}

type filler struct {
	rnd     *rand.Rand
	nullPct int
}

var strPool = []string{"", "a", "ferry", "Fluss ⛵", "日本語", "émoji 🚢", "x y z", "0123456789abcdef"}

func (g *filler) str(maxRunes int) string {
	s := strPool[g.rnd.IntN(len(strPool))]
	r := []rune(s)
	if len(r) > maxRunes {
		r = r[:maxRunes]
	}
	return string(r)
}

func (g *filler) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rnd.Uint32())
	}
	return b
}

// unscaled returns a random unscaled decimal value with at most p digits.
func (g *filler) unscaled(p int) decimal128.Num {
	digits := 1 + g.rnd.IntN(p)
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits)), nil)
	v := new(big.Int).SetUint64(g.rnd.Uint64())
	v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(g.rnd.Uint64())).Mod(v, limit)
	if g.rnd.IntN(2) == 0 {
		v.Neg(v)
	}
	return decimal128.FromBigInt(v)
}

const (
	minTS = -2208988800 // 1900-01-01
	maxTS = 4102444800  // 2100-01-01
)

// mapKey returns a key value for the key types the test schemas use.
func (g *filler) mapKey(t types.DataType) any {
	switch t.Root {
	case types.String, types.Char:
		return g.str(64)
	case types.Int:
		return int32(g.rnd.Uint32()) >> g.rnd.IntN(32)
	}
	return nil
}

func (g *filler) fill(b array.Builder, dt types.DataType) error {
	if dt.Nullable && g.rnd.IntN(100) < g.nullPct {
		b.AppendNull()
		return nil
	}
	r := g.rnd
	switch dt.Root {
	case types.Boolean:
		b.(*array.BooleanBuilder).Append(r.IntN(2) == 1)
	case types.TinyInt:
		b.(*array.Int8Builder).Append(int8(r.Uint32()))
	case types.SmallInt:
		b.(*array.Int16Builder).Append(int16(r.Uint32()))
	case types.Int:
		b.(*array.Int32Builder).Append(int32(r.Uint32()) >> r.IntN(32))
	case types.BigInt:
		b.(*array.Int64Builder).Append(int64(r.Uint64()) >> r.IntN(64))
	case types.Float:
		v := []float32{0, -1.5, float32(math.Inf(1)), math.MaxFloat32, float32(r.NormFloat64())}
		b.(*array.Float32Builder).Append(v[r.IntN(len(v))])
	case types.Double:
		v := []float64{0, 2.25, math.Inf(-1), math.SmallestNonzeroFloat64, r.NormFloat64() * 1e6}
		b.(*array.Float64Builder).Append(v[r.IntN(len(v))])
	case types.Decimal:
		b.(*array.Decimal128Builder).Append(g.unscaled(dt.Precision))
	case types.Char:
		b.(*array.StringBuilder).Append(g.str(dt.Length))
	case types.String:
		b.(*array.StringBuilder).Append(g.str(64))
	case types.Binary:
		b.(*array.FixedSizeBinaryBuilder).Append(g.bytes(dt.Length))
	case types.Bytes:
		b.(*array.BinaryBuilder).Append(g.bytes(r.IntN(12)))
	case types.Date:
		b.(*array.Date32Builder).Append(arrow.Date32(r.IntN(80000) - 40000))
	case types.Time:
		// Fluss keeps TIME as milliseconds of the day, so values are whole
		// milliseconds (seconds for TIME(0)) in the column's unit.
		ms := int64(r.IntN(86400000))
		switch {
		case dt.Precision == 0:
			b.(*array.Time32Builder).Append(arrow.Time32(ms / 1000))
		case dt.Precision <= 3:
			b.(*array.Time32Builder).Append(arrow.Time32(ms))
		case dt.Precision <= 6:
			b.(*array.Time64Builder).Append(arrow.Time64(ms * 1000))
		default:
			b.(*array.Time64Builder).Append(arrow.Time64(ms * 1000000))
		}
	case types.TimestampNTZ, types.TimestampLTZ:
		sec := minTS + r.Int64N(maxTS-minTS)
		nanos := r.Int64N(1e9)
		if sec < 0 {
			// Fluss 0.9.1's Arrow reader (ArrowTimestamp*ColumnVector) splits
			// micros/nanos with truncating division and rejects the negative
			// remainder of pre-1970 values below a millisecond, so the Java
			// client cannot read them back: stay on whole milliseconds there.
			nanos -= nanos % 1e6
		}
		var v int64
		switch {
		case dt.Precision == 0:
			v = sec
		case dt.Precision <= 3:
			v = sec*1e3 + nanos/1e6
		case dt.Precision <= 6:
			v = sec*1e6 + nanos/1e3
		default:
			v = sec*1e9 + nanos
		}
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(v))
	case types.Array:
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		for i, n := 0, r.IntN(4); i < n; i++ {
			if err := g.fill(lb.ValueBuilder(), *dt.Element); err != nil {
				return err
			}
		}
	case types.Map:
		// Keys are unique within a map: Fluss readers turn maps into hash
		// maps, which would drop duplicates.
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		seen := map[any]bool{}
		for i, n := 0, r.IntN(4); i < n; i++ {
			k := g.mapKey(*dt.Key)
			if seen[k] {
				continue
			}
			seen[k] = true
			switch v := k.(type) {
			case string:
				mb.KeyBuilder().(*array.StringBuilder).Append(v)
			case int32:
				mb.KeyBuilder().(*array.Int32Builder).Append(v)
			default:
				return fmt.Errorf("no map key generator for %s", dt.Key.Root)
			}
			if err := g.fill(mb.ItemBuilder(), *dt.Value); err != nil {
				return err
			}
		}
	case types.Row:
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for i, f := range dt.Fields {
			if err := g.fill(sb.FieldBuilder(i), f.Type); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("no generator for %s", dt.Root)
	}
	return nil
}
