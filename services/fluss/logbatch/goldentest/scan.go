package goldentest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// ScanValue renders value i of col in the lossless JSON form flusshelper's
// scan prints (see testenv.ScanRow), so rows written by Go can be compared
// with what the Java client reads back.
func ScanValue(col arrow.Array, i int, t types.DataType) any {
	if col.IsNull(i) {
		return nil
	}
	switch t.Root {
	case types.Boolean:
		return col.(*array.Boolean).Value(i)
	case types.TinyInt:
		return strconv.FormatInt(int64(col.(*array.Int8).Value(i)), 10)
	case types.SmallInt:
		return strconv.FormatInt(int64(col.(*array.Int16).Value(i)), 10)
	case types.Int:
		return strconv.FormatInt(int64(col.(*array.Int32).Value(i)), 10)
	case types.BigInt:
		return strconv.FormatInt(col.(*array.Int64).Value(i), 10)
	case types.Float:
		return float64(col.(*array.Float32).Value(i))
	case types.Double:
		return col.(*array.Float64).Value(i)
	case types.Decimal:
		v := col.(*array.Decimal128).Value(i).BigInt()
		return decimalString(v, t.Scale)
	case types.Char, types.String:
		return col.(*array.String).Value(i)
	case types.Binary:
		return base64.StdEncoding.EncodeToString(col.(*array.FixedSizeBinary).Value(i))
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(col.(*array.Binary).Value(i))
	case types.Date:
		return time.Unix(int64(col.(*array.Date32).Value(i))*86400, 0).UTC().Format("2006-01-02")
	case types.Time:
		var ms int64
		switch a := col.(type) {
		case *array.Time32:
			ms = int64(a.Value(i))
			if a.DataType().(*arrow.Time32Type).Unit == arrow.Second {
				ms *= 1000
			}
		case *array.Time64:
			ms = int64(a.Value(i)) / 1000
			if a.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
				ms /= 1000
			}
		}
		return time.UnixMilli(ms).UTC().Format("15:04:05.000")
	case types.TimestampNTZ, types.TimestampLTZ:
		a := col.(*array.Timestamp)
		ts := a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UTC()
		s := ts.Format("2006-01-02T15:04:05.000000000")
		if t.Root == types.TimestampLTZ {
			s += "Z"
		}
		return s
	case types.Array:
		a := col.(*array.List)
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, ScanValue(a.ListValues(), int(j), *t.Element))
		}
		return out
	case types.Map:
		a := col.(*array.Map)
		start, end := a.ValueOffsets(i)
		out := MapPairs{}
		for j := start; j < end; j++ {
			out = append(out, []any{ScanValue(a.Keys(), int(j), *t.Key), ScanValue(a.Items(), int(j), *t.Value)})
		}
		return out
	case types.Row:
		a := col.(*array.Struct)
		out := map[string]any{}
		for f, field := range t.Fields {
			out[field.Name] = ScanValue(a.Field(f), i, field.Type)
		}
		return out
	}
	return fmt.Sprintf("unsupported type %s", t)
}

func decimalString(v *big.Int, scale int) string {
	neg := v.Sign() < 0
	s := new(big.Int).Abs(v).String()
	if scale > 0 {
		for len(s) <= scale {
			s = "0" + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// MapPairs is a MAP value: [key, value] pairs. Java readers hold maps in
// hash maps, so the order they print pairs in is not the stored order and
// SameScanValue compares pairs regardless of order.
type MapPairs []any

// ScanRowValues renders every column of row i.
func ScanRowValues(rec arrow.RecordBatch, cols []types.Field, i int) map[string]any {
	out := map[string]any{}
	for c, f := range cols {
		out[f.Name] = ScanValue(rec.Column(c), i, f.Type)
	}
	return out
}

// SameScanValue compares a ScanValue with what testenv decoded from the
// helper's JSON (json.Number for numbers); it returns a description of the
// first difference, or "".
func SameScanValue(want, got any) string {
	switch w := want.(type) {
	case nil:
		if got != nil {
			return fmt.Sprintf("want null, got %v", got)
		}
	case bool:
		if g, ok := got.(bool); !ok || g != w {
			return fmt.Sprintf("want %v, got %v", w, got)
		}
	case string:
		switch g := got.(type) {
		case string:
			if g != w {
				return fmt.Sprintf("want %q, got %q", w, g)
			}
		case json.Number:
			if g.String() != w {
				return fmt.Sprintf("want %s, got %s", w, g)
			}
		default:
			return fmt.Sprintf("want %q, got %T %v", w, got, got)
		}
	case float64:
		var g float64
		switch v := got.(type) {
		case json.Number:
			f, err := strconv.ParseFloat(v.String(), 64)
			if err != nil {
				return err.Error()
			}
			g = f
		case string: // Infinity, -Infinity, NaN
			switch strings.TrimSpace(v) {
			case "Infinity":
				g = math.Inf(1)
			case "-Infinity":
				g = math.Inf(-1)
			default:
				g = math.NaN()
			}
		default:
			return fmt.Sprintf("want %v, got %T %v", w, got, got)
		}
		// FLOAT columns print as Java float text; compare at float32 then.
		if g != w && float32(g) != float32(w) {
			return fmt.Sprintf("want %v, got %v", w, g)
		}
	case MapPairs:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("want map %v, got %v", w, got)
		}
		used := make([]bool, len(g))
	pairs:
		for _, wp := range w {
			for j, gp := range g {
				if !used[j] && SameScanValue(wp, gp) == "" {
					used[j] = true
					continue pairs
				}
			}
			return fmt.Sprintf("map entry %v missing from %v", wp, g)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("want %v, got %v", w, got)
		}
		for i := range w {
			if d := SameScanValue(w[i], g[i]); d != "" {
				return fmt.Sprintf("[%d]: %s", i, d)
			}
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("want %v, got %v", w, got)
		}
		for k := range w {
			if d := SameScanValue(w[k], g[k]); d != "" {
				return fmt.Sprintf("%s: %s", k, d)
			}
		}
	default:
		return fmt.Sprintf("cannot compare %T", want)
	}
	return ""
}
