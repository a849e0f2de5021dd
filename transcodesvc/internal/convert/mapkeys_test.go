package convert

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

func TestMapRepeatedKeys(t *testing.T) {
	intStr := tMap(tInt(false), tString(true), true)
	strInt := tMap(tString(false), tInt(true), true)
	keyed := func(k *catalogv1.DataType) *catalogv1.DataType { return tMap(k, tString(true), true) }
	runTypeCases(t, []typeCase{
		// The case found by reading back through Fluss's Java client: it returned [[-1,null],[1,"dup"]].
		{"int keys", intStr, `[[1,"a"],[-1,null],[1,"dup"]]`, nil, `field v[2]: map key 1 appears twice (also at [0]); Fluss readers would keep only one`},
		{"int keys distinct, order kept", intStr, `[[3,"c"],[1,"a"],[-2,null]]`, [][2]any{{int64(3), "c"}, {int64(1), "a"}, {int64(-2), nil}}, ""},
		{"int keys equal as stored", intStr, `[[1,"a"],[1.0,"b"]]`, nil, "field v[1]: map key 1.0 appears twice (also at [0])"},
		{"int keys quoted and not", intStr, `[["10","a"],[1e1,"b"]]`, nil, "field v[1]: map key 1e1 appears twice (also at [0])"},
		{"first repeat in send order", intStr, `[[1,"a"],[2,"b"],[2,"c"],[1,"d"]]`, nil, "field v[2]: map key 2 appears twice (also at [1])"},
		{"object keys", strInt, `{"x":1,"y":2,"x":3}`, nil, `field v["x"]: map key "x" appears twice; Fluss readers`},
		{"object keys escaped", strInt, `{"x":1,"x":2}`, nil, `field v["x"]: map key "x" appears twice`},
		{"string pairs", strInt, `[["a",1],["b",2],["a",null]]`, nil, `field v[2]: map key "a" appears twice (also at [0])`},
		{"string keys distinct", strInt, `{"b":1,"a":2}`, [][2]any{{"b", int64(1)}, {"a", int64(2)}}, ""},
		{"tinyint keys", keyed(tTiny(false)), `[[-1,"a"],[-1,"b"]]`, nil, "map key -1 appears twice"},
		{"smallint keys", keyed(tSmall(false)), `[[300,"a"],[300,"b"]]`, nil, "map key 300 appears twice"},
		{"bigint keys", keyed(tBig(false)), `[["9007199254740993","a"],[9007199254740993,"b"]]`, nil, "map key 9007199254740993 appears twice"},
		{"boolean keys", keyed(tBool(false)), `[[true,"a"],[false,"b"],[true,"c"]]`, nil, "field v[2]: map key true appears twice (also at [0])"},
		{"double keys NaN", keyed(tDouble(false)), `[["NaN","a"],["NaN","b"]]`, nil, `map key "NaN" appears twice`},
		{"double keys signed zeros differ", keyed(tDouble(false)), `[[0.0,"a"],[-0.0,"b"]]`, [][2]any{{0.0, "a"}, {math.Copysign(0, -1), "b"}}, ""},
		{"float keys", keyed(tFloat(false)), `[[0.5,"a"],[5e-1,"b"]]`, nil, "map key 5e-1 appears twice"},
		{"bytes keys", keyed(tBytes(false)), `[["AAE=","a"],["AAE","b"]]`, nil, `map key "AAE" appears twice`},
		{"char keys", keyed(tChar(2, false)), `{"ab":"x","ab":"y"}`, nil, `map key "ab" appears twice`},
		{"date keys", keyed(tDate(false)), `[["1970-01-02","a"],[1,"b"]]`, nil, "field v[1]: map key 1 appears twice (also at [0])"},
		{"time keys", keyed(tTime(3, false)), `[["00:00:01","a"],[1000,"b"]]`, nil, "map key 1000 appears twice"},
		// Keys whose builders cannot be read back take the slower, exact path.
		{"decimal keys", keyed(tDec(5, 2, false)), `[["1.5","a"],[1.50,"b"]]`, nil, "field v[1]: map key 1.50 appears twice (also at [0])"},
		{"decimal keys distinct", keyed(tDec(5, 2, false)), `[["1.5","a"],[1.25,"b"]]`, [][2]any{{"1.50", "a"}, {"1.25", "b"}}, ""},
		{"timestamp keys same instant", keyed(tLTZ(3, false)), `[["2026-01-02T03:04:05Z","a"],["2026-01-02T04:04:05+01:00","b"]]`, nil, "map key \"2026-01-02T04:04:05+01:00\" appears twice"},
		{"timestamp keys distinct", keyed(tNTZ(6, false)), `[["2026-01-02T03:04:05.000001","a"],["2026-01-02T03:04:05.000002","b"]]`, [][2]any{{int64(1767323045000001), "a"}, {int64(1767323045000002), "b"}}, ""},
		{"binary keys", keyed(tBinary(2, false)), `[["AAE=","a"],["AAE","b"]]`, nil, "map key \"AAE\" appears twice"},
		{"array keys", keyed(tArray(tInt(true), false)), `[[[1,null],"a"],[[1.0,null],"b"]]`, nil, "field v[1]: map key [1.0,null] appears twice (also at [0])"},
		{"array keys distinct", keyed(tArray(tInt(true), false)), `[[[1,2],"a"],[[2,1],"b"]]`, [][2]any{{[]any{int64(1), int64(2)}, "a"}, {[]any{int64(2), int64(1)}, "b"}}, ""},
		{"row keys", keyed(tRow(false, fld("a", tInt(true)), fld("b", tString(true)))), `[[{"a":1,"b":"x"},"p"],[{"b":"x","a":1},"q"]]`, nil, `field v[1]: map key {"b":"x","a":1} appears twice (also at [0])`},
		{"key error still named", keyed(tDec(5, 2, false)), `[["1.5","a"],["1.555","b"]]`, nil, "field v[1].{key}: value \"1.555\" has more fractional digits"},
		{"maps in an array each have their keys", tArray(intStr, false), `[[[1,"a"]],[[1,"b"],[2,"c"],[1,"d"]]]`, nil, "field v[1][2]: map key 1 appears twice (also at [0])"},
		{"maps in an array, distinct", tArray(intStr, false), `[[[1,"a"]],[[1,"b"]]]`, []any{[][2]any{{int64(1), "a"}}, [][2]any{{int64(1), "b"}}}, ""},
		{"map values may repeat", intStr, `[[1,"a"],[2,"a"]]`, [][2]any{{int64(1), "a"}, {int64(2), "a"}}, ""},
		// Past smallMap keys the check sorts; it still names the first repeat in the order sent.
		{"large map", intStr, pairs(40, map[int]int{35: 3, 30: 25}), nil, "field v[30]: map key 25 appears twice (also at [25])"},
		{"large map, repeat just past the small check", intStr, pairs(17, map[int]int{16: 2}), nil, "field v[16]: map key 2 appears twice (also at [2])"},
		{"large map, repeat within the small check", intStr, pairs(40, map[int]int{39: 0, 15: 14}), nil, "field v[15]: map key 14 appears twice (also at [14])"},
		{"large map distinct", intStr, pairs(40, nil), storedPairs(40), ""},
	})
}

// storedPairs is what pairs(n, nil) stores.
func storedPairs(n int) [][2]any {
	out := make([][2]any, n)
	for i := range out {
		out[i] = [2]any{int64(i), "v"}
	}
	return out
}

// pairs is a map of n entries [i,"v"], except that entry i takes the key of
// entry same[i].
func pairs(n int, same map[int]int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		k := i
		if j, ok := same[i]; ok {
			k = j
		}
		fmt.Fprintf(&b, `[%d,"v"]`, k)
	}
	b.WriteByte(']')
	return b.String()
}

// TestMapKeysPerRecord: the keys of one record's map are forgotten before the next record.
func TestMapKeysPerRecord(t *testing.T) {
	p := mustCompile(t, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT,
		fld("m", tMap(tDec(5, 1, false), tString(true), true))))
	c := p.NewConverter(memory.DefaultAllocator)
	if _, err := c.Convert(valuesBatch([]byte(`{"m":[[1,"a"]]}`), []byte(`{"m":[[1,"b"],[2,"c"]]}`))); err != nil {
		t.Fatal(err)
	}
	_, err := c.Convert(valuesBatch([]byte(`{"m":[[1,"a"]]}`), []byte(`{"m":[[2,"b"],[2.0,"c"]]}`)))
	var f *Failure
	if !errors.As(err, &f) || len(f.Records) != 1 || f.Records[0].BatchIndex != 1 ||
		f.Records[0].Message != "field m[1]: map key 2.0 appears twice (also at [0]); Fluss readers would keep only one of the entries" {
		t.Fatalf("got %v %+v", err, f)
	}
}

// BenchmarkMaps converts 1000 records that each carry a 10-entry map with
// string keys (the object form) and one with integer keys (the pair form):
// the cost of maps, duplicate-key check included.
func BenchmarkMaps(b *testing.B) {
	p := mustCompile(b, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT,
		fld("attrs", tMap(tString(false), tInt(true), true)),
		fld("codes", tMap(tInt(false), tString(true), true))))
	values := make([][]byte, 1000)
	for i := range values {
		var attrs, codes []string
		for k := 0; k < 10; k++ {
			attrs = append(attrs, fmt.Sprintf(`"attribute-%d":%d`, (i+k*7)%10, k))
			codes = append(codes, fmt.Sprintf(`[%d,"code %d"]`, (i+k*7919)%100000, k))
		}
		values[i] = []byte(`{"attrs":{` + strings.Join(attrs, ",") + `},"codes":[` + strings.Join(codes, ",") + `]}`)
	}
	batch := valuesBatch(values...)
	c := p.NewConverter(memory.DefaultAllocator)
	b.ReportAllocs()
	m0 := mallocs()
	for i := 0; i < b.N; i++ {
		if _, err := c.Convert(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(mallocs()-m0)/float64(len(values)*b.N), "allocs/row")
	b.ReportMetric(float64(len(values)*b.N)/b.Elapsed().Seconds(), "rows/s")
}
