package convert

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// TestJSONRoundTripsThroughRebuild: a row converted from JSON, rebuilt as
// JSON by the read path (fetchsvc/rebuild) and converted again is the same
// row, for every type, so produce → consume → produce gives back equal
// values under the documented type rules (docs/transcoding.md §3).
func TestJSONRoundTripsThroughRebuild(t *testing.T) {
	m := jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT,
		fld("b", tBool(true)), fld("i8", tTiny(true)), fld("i16", tSmall(true)), fld("i32", tInt(true)), fld("i64", tBig(true)),
		fld("f32", tFloat(true)), fld("f64", tDouble(true)), fld("dec", tDec(10, 2, true)), fld("dec0", tDec(38, 0, true)),
		fld("c", tChar(3, true)), fld("s", tString(true)), fld("bin", tBinary(2, true)), fld("by", tBytes(true)),
		fld("d", tDate(true)), fld("t0", tTime(0, true)), fld("t3", tTime(3, true)), fld("t9", tTime(9, true)),
		fld("ntz3", tNTZ(3, true)), fld("ntz9", tNTZ(9, true)), fld("ltz0", tLTZ(0, true)), fld("ltz6", tLTZ(6, true)),
		fld("arr", tArray(tString(true), true)), fld("smap", tMap(tString(false), tInt(true), true)),
		fld("imap", tMap(tInt(false), tString(true), true)),
		fld("row", tRow(true, fld("city", tString(true)), fld("zip", tInt(true)), fld("tags", tArray(tInt(true), true)))),
	)
	values := [][]byte{
		[]byte(`{"b": true, "i8": -128, "i16": 32767, "i32": -2147483648, "i64": "9223372036854775807",
			"f32": 0.1, "f64": -1.25e-3, "dec": "-12.3", "dec0": "12345678901234567890123456789012345678",
			"c": "äbc", "s": "quote \" nl \n ✓", "bin": "AAE=", "by": "AAH/",
			"d": "1969-12-31", "t0": "23:59:59", "t3": "12:34:56.789", "t9": "00:00:00.000000001",
			"ntz3": "1969-12-31T23:59:59.999", "ntz9": "2262-04-11T23:47:16.854775807", "ltz0": "2026-01-02T04:04:05+01:00",
			"ltz6": "2026-01-02T03:04:05.000001Z",
			"arr": ["a", null], "smap": {"x": 1, "y": null}, "imap": [[-1, "a"], [2, null]],
			"row": {"city": "Zürich", "zip": 8001, "tags": [1, null]}}`),
		[]byte(`{"f32": "NaN", "f64": "-Infinity", "dec": 0, "arr": [], "smap": {}, "row": {}}`),
		[]byte(`{}`),
	}
	p := mustCompile(t, m)
	first, err := p.NewConverter(memory.DefaultAllocator).ConvertRecord(valuesBatch(values...), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	rb, err := rebuild.Compile(m, p.Columns)
	if err != nil {
		t.Fatal(err)
	}
	var rebuilt [][]byte
	for row := range int(first.NumRows()) {
		var r rebuild.Record
		if err := rb.Rebuild(&r, first, row, 0); err != nil {
			t.Fatalf("row %d: %v", row, err)
		}
		rebuilt = append(rebuilt, r.Value)
	}
	second, err := p.NewConverter(memory.DefaultAllocator).ConvertRecord(valuesBatch(rebuilt...), nil)
	if err != nil {
		t.Fatalf("the rebuilt JSON does not convert again: %v", err)
	}
	defer second.Release()
	for i := range int(first.NumCols()) {
		// NaN must come back as NaN; floats otherwise compare exactly.
		if !array.ApproxEqual(first.Column(i), second.Column(i), array.WithNaNsEqual(true), array.WithAbsTolerance(0)) {
			t.Errorf("column %s changed in the round trip:\n first  %v\n second %v", p.Columns[i].Name, first.Column(i), second.Column(i))
		}
	}
}
