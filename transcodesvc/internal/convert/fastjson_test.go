package convert

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// flatMapping has a column of every type the fast decoder reads.
func flatMapping() *catalogv1.TopicMapping {
	return jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT,
		fld("id", tBig(false)), fld("i8", tTiny(true)), fld("i16", tSmall(true)), fld("i32", tInt(true)),
		fld("f32", tFloat(true)), fld("f64", tDouble(true)), fld("ok", tBool(true)),
		fld("dec", tDec(10, 2, true)), fld("wide", tDec(30, 4, true)),
		fld("s", tString(true)), fld("c", tChar(3, true)), fld("b", tBytes(true)),
		fld("day", tDate(true)), fld("at", tLTZ(3, true)), fld("local", tNTZ(6, true)))
}

const flatRow = `{"id":7,"i8":-8,"i16":300,"i32":-70000,"f32":1.5,"f64":-2.25e3,"ok":true,"dec":"12.5","wide":-3.25,` +
	`"s":"héllo wörld","c":"abc","b":"AAEC","day":"2026-12-05","at":"2026-12-05T12:30:00.123Z","local":"2026-12-05T12:30:00.123456"}`

// convertBoth converts value alone with the fast decoder and with the
// generic one, and returns both answers: the records section of a Fluss
// log batch (the Java writer's layout, so equal rows are equal bytes) or
// the error text.
func convertBoth(t testing.TB, p *Plan, value []byte) (fast, generic string, tookFast bool) {
	answer := func(c *Converter) string {
		out, err := c.ConvertTo(valuesBatch(value), EncodingLogRecords)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(out.LogRecords)
	}
	c := p.NewConverter(memory.DefaultAllocator)
	if c.fast == nil {
		t.Fatal("no fast decoder for a flat schema")
	}
	c.rb.Reserve(1) // as ConvertRecord does
	tookFast = c.fast.decode(value)
	c = p.NewConverter(memory.DefaultAllocator) // decode above appended
	fast = answer(c)
	g := p.NewConverter(memory.DefaultAllocator)
	g.fast = nil
	return fast, answer(g), tookFast
}

func TestFastDecoderTakesCompactValues(t *testing.T) {
	p := mustCompile(t, flatMapping())
	for _, v := range []string{
		flatRow,
		strings.NewReplacer(`00.123456"`, `00.123"`, `"b":"AAEC"`, `"b":"AAECAQ=="`, `"at":"2026-12-05T12:30:00.123Z"`, `"at":"1969-12-31T23:59:59.999Z"`).Replace(flatRow),
		`{"id":"-9","i8":null,"i16":null,"i32":null,"f32":null,"f64":0,"ok":false,"dec":-0.05,"wide":"123456789012.3456",` +
			`"s":"","c":null,"b":"AAE","day":null,"at":1767225600000,"local":null}`,
	} {
		fast, generic, took := convertBoth(t, p, []byte(v))
		if !took {
			t.Errorf("fast decoder refused %s", v)
		}
		if fast != generic {
			t.Errorf("fast and generic answers differ for %s", v)
		}
	}
}

// Every value the fast decoder leaves alone must come out exactly as the
// generic decoder has it, errors included.
func TestFastDecoderMatchesGeneric(t *testing.T) {
	p := mustCompile(t, flatMapping())
	swap := func(old, new string) string {
		return string(bytes.Replace([]byte(flatRow), []byte(old), []byte(new), 1))
	}
	cases := map[string]string{
		"space after brace":       swap(`{"id"`, `{ "id"`),
		"trailing space":          flatRow + " ",
		"data after":              flatRow + "{}",
		"fields reordered":        swap(`"i8":-8,"i16":300`, `"i16":300,"i8":-8`),
		"field missing":           swap(`"i8":-8,`, ``),
		"field twice":             swap(`"i8":-8,`, `"i8":-8,"i8":-8,`),
		"unknown field":           swap(`"i8":-8,`, `"i8":-8,"x":1,`),
		"escaped key":             swap(`"i8"`, `"\u00698"`),
		"null in NOT NULL":        swap(`"id":7`, `"id":null`),
		"int as 7.0":              swap(`"id":7`, `"id":7.0`),
		"int as 7e0":              swap(`"id":7`, `"id":7e0`),
		"int leading zero":        swap(`"id":7`, `"id":07`),
		"int quoted plus":         swap(`"id":7`, `"id":"+7"`),
		"int 19 digits":           swap(`"id":7`, `"id":9223372036854775807`),
		"int out of range":        swap(`"i8":-8`, `"i8":-129`),
		"int not a number":        swap(`"i8":-8`, `"i8":"x"`),
		"float NaN":               swap(`"f64":-2.25e3`, `"f64":"NaN"`),
		"float too big":           swap(`"f64":-2.25e3`, `"f64":1e400`),
		"float32 too big":         swap(`"f32":1.5`, `"f32":1e39`),
		"float bad exponent":      swap(`"f64":-2.25e3`, `"f64":1e`),
		"bool as 1":               swap(`"ok":true`, `"ok":1`),
		"bool truex":              swap(`"ok":true`, `"ok":truex`),
		"decimal too precise":     swap(`"dec":"12.5"`, `"dec":"12.555"`),
		"decimal trailing zeros":  swap(`"dec":"12.5"`, `"dec":"12.500"`),
		"decimal too wide":        swap(`"dec":"12.5"`, `"dec":"123456789"`),
		"decimal exponent":        swap(`"dec":"12.5"`, `"dec":1.25e1`),
		"decimal plus":            swap(`"dec":"12.5"`, `"dec":"+12.5"`),
		"decimal leading zeros":   swap(`"dec":"12.5"`, `"dec":"0012.5"`),
		"decimal no fraction":     swap(`"dec":"12.5"`, `"dec":"12."`),
		"decimal 19 digits":       swap(`"wide":-3.25`, `"wide":"1234567890123456.789"`),
		"decimal zero, scale > 2": swap(`"dec":"12.5"`, `"dec":"0.000"`),
		"string escape":           swap(`"s":"h`, `"s":"\"h`),
		"string control":          swap(`"s":"h`, "\"s\":\"\th"),
		"string bad UTF-8":        swap(`"s":"h`, "\"s\":\"\xffh"),
		"string not a string":     swap(`"s":"h`, `"s":1,"x":"h`),
		"char too long in bytes":  swap(`"c":"abc"`, `"c":"äbc"`),
		"char too long":           swap(`"c":"abc"`, `"c":"abcd"`),
		"bytes bad base64":        swap(`"b":"AAEC"`, `"b":"A!EC"`),
		"bytes padded 1":          swap(`"b":"AAEC"`, `"b":"AAECAQ=="`),
		"bytes padded 2":          swap(`"b":"AAEC"`, `"b":"AAECAAE="`),
		"bytes loose bits":        swap(`"b":"AAEC"`, `"b":"AB=="`),
		"bytes unpadded":          swap(`"b":"AAEC"`, `"b":"AAECAAE"`),
		"bytes one char":          swap(`"b":"AAEC"`, `"b":"AAECA"`),
		"bytes pad only":          swap(`"b":"AAEC"`, `"b":"===="`),
		"bytes three pads":        swap(`"b":"AAEC"`, `"b":"A==="`),
		"bytes pad inside":        swap(`"b":"AAEC"`, `"b":"AA==AAEC"`),
		"bytes pad then char":     swap(`"b":"AAEC"`, `"b":"AA=A"`),
		"bytes newline":           swap(`"b":"AAEC"`, "\"b\":\"AAEC\nAAEC\""),
		"bytes escaped newline":   swap(`"b":"AAEC"`, `"b":"AAEC\nAAEC"`),
		"bytes escaped slash":     swap(`"b":"AAEC"`, `"b":"AA\/C"`),
		"bytes empty":             swap(`"b":"AAEC"`, `"b":""`),
		"date as days":            swap(`"day":"2026-12-05"`, `"day":20000`),
		"date invalid":            swap(`"day":"2026-12-05"`, `"day":"2026-02-30"`),
		"ltz without zone":        swap(`00.123Z"`, `00.123"`),
		"ltz with offset":         swap(`00.123Z"`, `00.123+01:00"`),
		"ltz too precise":         swap(`00.123Z"`, `00.1234Z"`),
		"ntz with zone":           swap(`00.123456"`, `00.123456Z"`),
		"ntz before 1970 in us":   swap(`"2026-12-05T12:30:00.123456"`, `"1969-12-05T12:30:00.123456"`),
		"ltz as big ms":           swap(`"at":"2026-12-05T12:30:00.123Z"`, `"at":-1234567890123456789`),
		"ltz hour 24":             swap(`"at":"2026-12-05T12`, `"at":"2026-12-05T24`),
		"ltz second 60":           swap(`30:00.123Z"`, `30:60.123Z"`),
		"ltz lowercase t":         swap(`"at":"2026-12-05T12`, `"at":"2026-12-05t12`),
		"ltz before 1970":         swap(`"at":"2026-12-05T12:30:00.123Z"`, `"at":"1969-12-31T23:59:59.999Z"`),
		"ltz bad day":             swap(`"at":"2026-12-05T12`, `"at":"2026-13-05T12`),
		"ntz in ms":               swap(`00.123456"`, `00.123"`),
		"ntz in ms with zone":     swap(`00.123456"`, `00.123Z"`),
		"truncated":               flatRow[:len(flatRow)-1],
		"not an object":           `[1]`,
		"empty":                   ``,
	}
	for name, v := range cases {
		fast, generic, _ := convertBoth(t, p, []byte(v))
		if fast != generic {
			t.Errorf("%s: fast %q, generic %q", name, fast, generic)
		}
	}
}

// FuzzFastJSON checks on arbitrary values that the converter with its fast
// decoder answers exactly as the generic decoder alone does.
func FuzzFastJSON(f *testing.F) {
	f.Add([]byte(flatRow))
	f.Add([]byte(`{"id":1,"i8":null,"i16":null,"i32":null,"f32":null,"f64":null,"ok":null,"dec":null,"wide":null,"s":null,"c":null,"b":null,"day":null,"at":null,"local":null}`))
	f.Add([]byte(`{"id":"0","i8":0,"i16":-0,"i32":1,"f32":0.1,"f64":-0,"ok":false,"dec":"-0.05","wide":99999999999999.9999,"s":"ä","c":"€€€","b":"","day":"0001-01-01","at":-1,"local":"1970-01-01T00:00:00"}`))
	p := mustCompile(f, flatMapping())
	f.Fuzz(func(t *testing.T, value []byte) {
		fast, generic, _ := convertBoth(t, p, value)
		if fast != generic {
			t.Fatalf("fast %q, generic %q", fast, generic)
		}
	})
}

// Timestamps of precisions whose unit the millisecond layout does not
// take, and strings that end early or late.
func TestFastDecoderTimestampPrecisions(t *testing.T) {
	p := mustCompile(t, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE,
		fld("ns", tLTZ(9, true)), fld("s", tNTZ(0, true)), fld("ms", tNTZ(3, true)), fld("d", tDate(true))))
	for _, v := range []string{
		`{"ns":"2026-12-05T12:30:00.123456789Z","s":"2026-12-05T12:30:00","ms":"2026-12-05T12:30:00.123","d":"2026-12-05"}`,
		`{"ns":"","s":"","ms":"","d":""}`,
		`{"ns":"2026-12-05T12:30:00.123Z","s":"2026-12-05T12:30:00.123","ms":"2026-12-05T12:30:00.12","d":"2026-12-5"}`,
		`{"ns":null,"s":null,"ms":"2026-12-05T12:30:00.1234","d":"2026-12-055"}`,
		`{"ns":null,"s":null,"ms":"2026-12-05T12:30:00\"123","d":"2026-12-0\""}`,
		`{"ns":null,"s":null,"ms":"2026-12-05T12:30:00.123","d":"2026-12-05`,
	} {
		fast, generic, _ := convertBoth(t, p, []byte(v))
		if fast != generic {
			t.Errorf("%s: fast %q, generic %q", v, fast, generic)
		}
	}
	if _, _, took := convertBoth(t, p, []byte(`{"ns":"2026-12-05T12:30:00.123456789Z","s":"2026-12-05T12:30:00","ms":"2026-12-05T12:30:00.123","d":"2026-12-05"}`)); !took {
		t.Error("fast decoder refused timestamps of precisions 9 and 0")
	}
}
