package convert

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

type typeCase struct {
	name string
	typ  *catalogv1.DataType
	json string // the value of field "v"; "" leaves the field out
	want any    // cell value when err is ""
	err  string // substring of the record error
}

func runTypeCases(t *testing.T, cases []typeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, fld("v", tc.typ)))
			value := `{"v":` + tc.json + `}`
			if tc.json == "" {
				value = `{}`
			}
			c := p.NewConverter(memory.DefaultAllocator)
			out, err := c.Convert(valuesBatch([]byte(value)))
			if tc.err != "" {
				var f *Failure
				if !errors.As(err, &f) {
					t.Fatalf("want record error containing %q, got %v (out %d rows)", tc.err, err, out.Rows)
				}
				if f.Code != kerr.InvalidRecord.Code || len(f.Records) != 1 || f.Records[0].BatchIndex != 0 || !strings.Contains(f.Records[0].Message, tc.err) {
					t.Fatalf("want INVALID_RECORD with one record error containing %q, got %d %+v", tc.err, f.Code, f.Records)
				}
				return
			}
			if err != nil {
				t.Fatalf("convert %s: %v", value, err)
			}
			rec := readIPC(t, out.IPC, p.Schema)
			defer rec.Release()
			if rec.NumRows() != 1 {
				t.Fatalf("%d rows", rec.NumRows())
			}
			got := cell(rec.Column(0), 0)
			if wf, ok := tc.want.(float64); ok && math.IsNaN(wf) {
				if g, ok := got.(float64); !ok || !math.IsNaN(g) {
					t.Fatalf("got %#v, want NaN", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v (%T), want %#v (%T)", got, got, tc.want, tc.want)
			}
		})
	}
}

func TestJSONScalars(t *testing.T) {
	runTypeCases(t, []typeCase{
		// BOOLEAN
		{"bool true", tBool(false), `true`, true, ""},
		{"bool false", tBool(false), `false`, false, ""},
		{"bool null nullable", tBool(true), `null`, nil, ""},
		{"bool null not null", tBool(false), `null`, nil, "is null but the type is BOOLEAN NOT NULL"},
		{"bool missing not null", tBool(false), ``, nil, "field v: is missing"},
		{"bool missing nullable", tBool(true), ``, nil, ""},
		{"bool from string", tBool(false), `"true"`, nil, "expected true or false"},
		{"bool from number", tBool(false), `1`, nil, "got a number"},
		{"bool bad literal", tBool(false), `tru`, nil, "malformed JSON"},

		// Integers
		{"tinyint max", tTiny(false), `127`, int64(127), ""},
		{"tinyint min", tTiny(false), `-128`, int64(-128), ""},
		{"tinyint over", tTiny(false), `128`, nil, "out of range"},
		{"tinyint under", tTiny(false), `-129`, nil, "out of range"},
		{"smallint max", tSmall(false), `32767`, int64(32767), ""},
		{"smallint over", tSmall(false), `32768`, nil, "out of range"},
		{"int min", tInt(false), `-2147483648`, int64(math.MinInt32), ""},
		{"int over", tInt(false), `2147483648`, nil, "out of range"},
		{"bigint max", tBig(false), `9223372036854775807`, int64(math.MaxInt64), ""},
		{"bigint min", tBig(false), `-9223372036854775808`, int64(math.MinInt64), ""},
		{"bigint over", tBig(false), `9223372036854775808`, nil, "out of range"},
		{"bigint under", tBig(false), `-9223372036854775809`, nil, "out of range"},
		{"bigint huge", tBig(false), `123456789012345678901234567890`, nil, "out of range"},
		{"int fraction", tInt(false), `1.5`, nil, "is not an integer"},
		{"int integral fraction", tInt(false), `2.0`, int64(2), ""},
		{"int exponent", tInt(false), `1e3`, int64(1000), ""},
		{"int exponent fraction", tInt(false), `1.25e2`, int64(125), ""},
		{"int negative exponent", tInt(false), `15e-1`, nil, "is not an integer"},
		{"int zero", tInt(false), `0`, int64(0), ""},
		{"int negative zero", tInt(false), `-0`, int64(0), ""},
		{"int leading zero", tInt(false), `01`, nil, "malformed JSON"},
		{"bigint quoted", tBig(false), `"9007199254740993"`, int64(9007199254740993), ""},
		{"int quoted junk", tInt(false), `"12a"`, nil, "is not a number"},
		{"int quoted empty", tInt(false), `""`, nil, "is not a number"},
		{"int from bool", tInt(false), `true`, nil, "expected an integer"},
		{"int plus sign", tInt(false), `+1`, nil, "expected an integer"},
		// A quoted integer is the JSON number with quotes around it, nothing looser.
		{"int quoted", tInt(false), `"-42"`, int64(-42), ""},
		{"int quoted exponent", tInt(false), `"1e3"`, int64(1000), ""},
		{"int quoted integral fraction", tInt(false), `"2.0"`, int64(2), ""},
		{"int quoted fraction", tInt(false), `"1.5"`, nil, "is not an integer"},
		{"int quoted out of range", tInt(false), `"2147483648"`, nil, "out of range"},
		{"int quoted plus sign", tInt(false), `"+1"`, nil, `value "+1" is not a number as JSON writes one`},
		{"tinyint quoted plus sign", tTiny(false), `"+1"`, nil, "is not a number as JSON writes one"},
		{"smallint quoted plus sign", tSmall(false), `"+1"`, nil, "is not a number as JSON writes one"},
		{"bigint quoted plus sign", tBig(false), `"+9007199254740993"`, nil, "is not a number as JSON writes one"},
		{"int quoted leading zero", tInt(false), `"007"`, nil, "is not a number as JSON writes one"},
		{"int quoted negative leading zero", tInt(false), `"-01"`, nil, "is not a number as JSON writes one"},
		{"int quoted zero", tInt(false), `"0"`, int64(0), ""},
		{"int quoted leading space", tInt(false), `" 1"`, nil, "is not a number as JSON writes one"},
		{"int quoted trailing space", tInt(false), `"1 "`, nil, "is not a number as JSON writes one"},
		{"int quoted bare fraction", tInt(false), `".0"`, nil, "is not a number as JSON writes one"},
		{"int quoted no fraction digits", tInt(false), `"1."`, nil, "is not a number as JSON writes one"},
		{"int quoted plus exponent", tInt(false), `"1e+2"`, int64(100), ""},

		// FLOAT / DOUBLE
		{"double", tDouble(false), `-1.25e-3`, -1.25e-3, ""},
		{"double int", tDouble(false), `42`, 42.0, ""},
		{"double max", tDouble(false), `1.7976931348623157e308`, math.MaxFloat64, ""},
		{"double overflow", tDouble(false), `1e309`, nil, "out of range"},
		{"double nan", tDouble(false), `"NaN"`, math.NaN(), ""},
		{"double inf", tDouble(false), `"-Infinity"`, math.Inf(-1), ""},
		{"double other string", tDouble(false), `"1.5"`, nil, "strings may only be"},
		{"float", tFloat(false), `0.5`, 0.5, ""},
		{"float overflow", tFloat(false), `3.5e38`, nil, "out of range"},
		{"double bad number", tDouble(false), `1.`, nil, "malformed JSON"},
		{"double bad exponent", tDouble(false), `1e`, nil, "malformed JSON"},

		// DECIMAL
		{"decimal string", tDec(10, 2, false), `"12.34"`, "12.34", ""},
		{"decimal number", tDec(10, 2, false), `12.34`, "12.34", ""},
		{"decimal pads scale", tDec(10, 2, false), `0.1`, "0.10", ""},
		{"decimal integer", tDec(10, 2, false), `7`, "7.00", ""},
		{"decimal negative", tDec(10, 2, false), `"-0.05"`, "-0.05", ""},
		{"decimal trailing zeros ok", tDec(10, 2, false), `"1.2300"`, "1.23", ""},
		{"decimal too many fraction digits", tDec(10, 2, false), `"1.234"`, nil, "more fractional digits than the scale allows"},
		{"decimal precision max", tDec(10, 2, false), `"99999999.99"`, "99999999.99", ""},
		{"decimal precision over", tDec(10, 2, false), `"100000000.00"`, nil, "more than 8 integer digits"},
		{"decimal exponent", tDec(10, 2, false), `1.5e3`, "1500.00", ""},
		{"decimal negative exponent", tDec(10, 4, false), `"15E-4"`, "0.0015", ""},
		{"decimal plus sign string", tDec(5, 1, false), `"+2.5"`, "2.5", ""},
		{"decimal leading zeros string", tDec(5, 1, false), `"007.50"`, "7.5", ""},
		{"decimal bare fraction string", tDec(5, 1, false), `".5"`, "0.5", ""},
		{"decimal space string", tDec(5, 1, false), `" 2.5"`, nil, "is not a number"},
		{"decimal plus sign number", tDec(5, 1, false), `+2.5`, nil, "expected a decimal"},
		{"double plus sign number", tDouble(false), `+2.5`, nil, "expected a number"},
		{"decimal zero with exponent", tDec(5, 1, false), `0e999`, "0.0", ""},
		{"decimal 38 digits", tDec(38, 0, false), `"99999999999999999999999999999999999999"`, "99999999999999999999999999999999999999", ""},
		{"decimal 38 digits negative", tDec(38, 10, false), `"-9999999999999999999999999999.9999999999"`, "-9999999999999999999999999999.9999999999", ""},
		{"decimal 39 digits", tDec(38, 0, false), `"999999999999999999999999999999999999999"`, nil, "more than 38 integer digits"},
		{"decimal garbage", tDec(10, 2, false), `"1,5"`, nil, "is not a number"},
		{"decimal from bool", tDec(10, 2, false), `false`, nil, "expected a decimal"},

		// STRING / CHAR
		{"string", tString(false), `"hello"`, "hello", ""},
		{"string unicode", tString(false), `"ünïcödé ✓ 𝄞"`, "ünïcödé ✓ 𝄞", ""},
		{"string escapes", tString(false), `"a\"b\\c\/d\n\t\u00e9\ud834\udd1e"`, "a\"b\\c/d\n\té𝄞", ""},
		{"string lone surrogate", tString(false), `"\ud834"`, nil, "unpaired UTF-16 surrogate"},
		{"string bad escape", tString(false), `"\x"`, nil, "bad escape"},
		{"string control char", tString(false), "\"a\x01\"", nil, "control character"},
		{"string invalid utf8", tString(false), "\"\xff\"", nil, "not valid UTF-8"},
		{"string unterminated", tString(false), `"abc`, nil, "unexpected end"},
		{"string from number", tString(false), `12`, nil, "expected a string"},
		{"string empty", tString(false), `""`, "", ""},
		{"char fits", tChar(3, false), `"äbc"`, "äbc", ""},
		{"char shorter", tChar(3, false), `"a"`, "a", ""},
		{"char too long", tChar(3, false), `"abcd"`, nil, "4 characters is longer than CHAR(3)"},

		// BYTES / BINARY
		{"bytes", tBytes(false), `"AAH/"`, "bytes:0001ff", ""},
		{"bytes unpadded", tBytes(false), `"AAE"`, "bytes:0001", ""},
		{"bytes empty", tBytes(false), `""`, "bytes:", ""},
		{"bytes bad base64", tBytes(false), `"!!!!"`, nil, "not valid base64"},
		{"bytes from number", tBytes(false), `1`, nil, "expected a base64 string"},
		{"binary exact", tBinary(2, false), `"AAE="`, "bytes:0001", ""},
		{"binary wrong length", tBinary(3, false), `"AAE="`, nil, "needs exactly 3"},

		// DATE
		{"date string", tDate(false), `"2026-01-02"`, int64(20455), ""},
		{"date epoch", tDate(false), `"1970-01-01"`, int64(0), ""},
		{"date before epoch", tDate(false), `"1969-12-31"`, int64(-1), ""},
		{"date leap day", tDate(false), `"2024-02-29"`, int64(19782), ""},
		{"date not leap", tDate(false), `"2023-02-29"`, nil, "not a valid calendar date"},
		{"date year 1", tDate(false), `"0001-01-01"`, int64(-719162), ""},
		{"date days", tDate(false), `20000`, int64(20000), ""},
		{"date bad format", tDate(false), `"2026/01/02"`, nil, "want YYYY-MM-DD"},
		{"date with time", tDate(false), `"2026-01-02T00:00:00"`, nil, "want YYYY-MM-DD"},

		// TIME(p): the unit follows the precision
		{"time s", tTime(0, false), `"12:34:56"`, int64(45296), ""},
		{"time ms", tTime(3, false), `"12:34:56.789"`, int64(45296789), ""},
		{"time ms short fraction", tTime(3, false), `"00:00:01.5"`, int64(1500), ""},
		{"time us", tTime(6, false), `"00:00:00.000001"`, int64(1), ""},
		{"time ns", tTime(9, false), `"23:59:59.999999999"`, int64(86399999999999), ""},
		{"time too precise", tTime(3, false), `"00:00:00.0001"`, nil, "more fractional second digits than the column's precision"},
		{"time trailing zeros ok", tTime(0, false), `"00:00:01.000"`, int64(1), ""},
		{"time millis number", tTime(3, false), `45296789`, int64(45296789), ""},
		{"time millis for seconds column", tTime(0, false), `1500`, nil, "precision"},
		{"time millis out of day", tTime(3, false), `86400000`, nil, "out of range"},
		{"time hour 24", tTime(0, false), `"24:00:00"`, nil, "not a valid time"},
		{"time no seconds", tTime(0, false), `"12:34"`, nil, "want HH:MM:SS"},

		// TIMESTAMP (NTZ) and TIMESTAMP_LTZ
		{"ntz ms", tNTZ(3, false), `"2026-01-02T03:04:05.678"`, int64(1767323045678), ""},
		{"ntz space separator", tNTZ(3, false), `"2026-01-02 03:04:05.678"`, int64(1767323045678), ""},
		{"ntz s", tNTZ(0, false), `"1970-01-01T00:00:01"`, int64(1), ""},
		{"ntz us", tNTZ(6, false), `"1970-01-01T00:00:00.000001"`, int64(1), ""},
		{"ntz ns", tNTZ(9, false), `"2262-04-11T23:47:16.854775807"`, int64(math.MaxInt64), ""},
		{"ntz ns overflow", tNTZ(9, false), `"2262-04-11T23:47:16.854775808"`, nil, "out of range"},
		{"ntz before epoch", tNTZ(3, false), `"1969-12-31T23:59:59.999"`, int64(-1), ""},
		{"ntz before epoch micros, whole millis", tNTZ(6, false), `"1969-12-31T23:59:59.999"`, int64(-1000), ""},
		{"ntz before epoch sub-millisecond", tNTZ(6, false), `"1969-12-31T23:59:59.999999"`, nil, "Fluss 0.9 cannot read back"},
		{"ltz before epoch sub-millisecond", tLTZ(9, false), `"1900-01-01T00:00:00.000000001Z"`, nil, "Fluss 0.9 cannot read back"},
		{"ltz after epoch sub-millisecond", tLTZ(9, false), `"1970-01-01T00:00:00.000000001Z"`, int64(1), ""},
		{"ntz rejects zone", tNTZ(3, false), `"2026-01-02T03:04:05Z"`, nil, "has a zone offset"},
		{"ntz epoch millis", tNTZ(3, false), `1767323045678`, int64(1767323045678), ""},
		{"ntz too precise", tNTZ(3, false), `"2026-01-02T03:04:05.6789"`, nil, "precision"},
		{"ltz zulu", tLTZ(3, false), `"2026-01-02T03:04:05.678Z"`, int64(1767323045678), ""},
		{"ltz offset", tLTZ(3, false), `"2026-01-02T04:04:05.678+01:00"`, int64(1767323045678), ""},
		{"ltz negative offset", tLTZ(0, false), `"2026-01-01T22:04:05-05:00"`, int64(1767323045), ""},
		{"ltz compact offset", tLTZ(0, false), `"2026-01-02T05:34:05+0230"`, int64(1767323045), ""},
		{"ltz needs zone", tLTZ(3, false), `"2026-01-02T03:04:05.678"`, nil, "has no zone offset"},
		{"ltz epoch millis", tLTZ(3, false), `1767323045678`, int64(1767323045678), ""},
		{"ltz epoch millis to us", tLTZ(6, false), `-1`, int64(-1000), ""},
		{"ltz epoch millis to s exact", tLTZ(0, false), `1767323045000`, int64(1767323045), ""},
		{"ltz epoch millis to s inexact", tLTZ(0, false), `1767323045678`, nil, "precision"},
		{"ltz bad month", tLTZ(3, false), `"2026-13-02T03:04:05Z"`, nil, "not a valid calendar date"},
		{"ltz garbage", tLTZ(3, false), `"yesterday"`, nil, "is not a timestamp"},
		{"ltz fractional millis", tLTZ(3, false), `1.5`, nil, "is not an integer"},
	})
}

func TestJSONNested(t *testing.T) {
	strs := tArray(tString(true), true)
	row := tRow(true, fld("city", tString(true)), fld("zip", tInt(false)))
	runTypeCases(t, []typeCase{
		{"array", strs, `["a","b"]`, []any{"a", "b"}, ""},
		{"array empty", strs, `[]`, []any{}, ""},
		{"array null element", strs, `["a",null]`, []any{"a", nil}, ""},
		{"array null", strs, `null`, nil, ""},
		{"array not null element", tArray(tInt(false), false), `[1,null]`, nil, "field v[1]: is null but the type is INT NOT NULL"},
		{"array wrong element", tArray(tInt(false), false), `[1,"x"]`, nil, "field v[1]"},
		{"array of arrays", tArray(tArray(tInt(false), false), false), `[[1],[2,3]]`, []any{[]any{int64(1)}, []any{int64(2), int64(3)}}, ""},
		{"array nested error path", tArray(tArray(tInt(false), false), false), `[[1],[2,1.5]]`, nil, "field v[1][1]: value \"1.5\" is not an integer"},
		{"array from object", strs, `{}`, nil, "expected an array"},
		{"array missing comma", strs, `["a" "b"]`, nil, "expected ',' or ']'"},
		{"array trailing comma", strs, `["a",]`, nil, "got ']'"},
		{"map object", tMap(tString(false), tInt(true), true), `{"x":1,"y":null}`, [][2]any{{"x", int64(1)}, {"y", nil}}, ""},
		{"map empty", tMap(tString(false), tInt(true), true), `{}`, [][2]any{}, ""},
		{"map pairs string keys", tMap(tString(false), tInt(true), true), `[["x",1]]`, [][2]any{{"x", int64(1)}}, ""},
		{"map int keys", tMap(tInt(false), tString(true), true), `[[1,"a"],[2,"b"]]`, [][2]any{{int64(1), "a"}, {int64(2), "b"}}, ""},
		{"map int keys object", tMap(tInt(false), tString(true), true), `{"1":"a"}`, nil, "objects only suit string keys"},
		{"map null key", tMap(tInt(false), tString(true), true), `[[null,"a"]]`, nil, "map keys cannot be null"},
		{"map short pair", tMap(tInt(false), tString(true), true), `[[1]]`, nil, "no value"},
		{"map long pair", tMap(tInt(false), tString(true), true), `[[1,"a",2]]`, nil, "more than a key and a value"},
		{"map value error path", tMap(tString(false), tInt(true), true), `{"x":"y"}`, nil, `field v["x"]`},
		{"row", row, `{"city":"Zürich","zip":8001}`, map[string]any{"city": "Zürich", "zip": int64(8001)}, ""},
		{"row reordered", row, `{"zip":1,"city":"a"}`, map[string]any{"city": "a", "zip": int64(1)}, ""},
		{"row missing nullable", row, `{"zip":1}`, map[string]any{"city": nil, "zip": int64(1)}, ""},
		{"row missing not null", row, `{"city":"a"}`, nil, "field v.zip: is missing"},
		{"row null", row, `null`, nil, ""},
		{"row unknown field ignored", row, `{"zip":1,"extra":{"deep":[1,2,{"x":null}]}}`, map[string]any{"city": nil, "zip": int64(1)}, ""},
		{"row duplicate field", row, `{"zip":1,"zip":2}`, nil, "field v.zip: appears twice"},
		{"row from array", row, `[1]`, nil, "expected an object"},
		{"row unterminated", row, `{"zip":1`, nil, "unexpected end"},
		{"row in array", tArray(row, false), `[{"zip":1},{"zip":"x"}]`, nil, "field v[1].zip"},
	})
}

func TestUnknownFieldPolicy(t *testing.T) {
	for _, tt := range []struct {
		policy catalogv1.UnknownFieldPolicy
		value  string
		err    string
	}{
		{catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, `{"a":1,"b":{"c":[1,"x",null,true]}}`, ""},
		{catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_UNSPECIFIED, `{"a":1,"b":2}`, ""},
		{catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT, `{"a":1,"b":2}`, `unknown field "b"`},
		{catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT, `{"a":1,"r":{"x":1,"y":2}}`, `field r: unknown field "y"`},
		{catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, `{"a":1,"b":{"c":[1,}}`, "malformed JSON"},
		{catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, `{"a":1} x`, "data after the JSON object"},
		{catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, `[1]`, "expected a JSON object, got an array"},
		{catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, ` {"a":1} `, ""},
		{catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, strings.Repeat("[", 300), ""},
	} {
		p := mustCompile(t, jsonMapping(tt.policy, fld("a", tInt(true)), fld("r", tRow(true, fld("x", tInt(true))))))
		value := tt.value
		if strings.HasPrefix(value, "[[") {
			// Deep nesting inside an ignored field must be refused, not recursed into forever.
			value = `{"deep":` + value + `}`
			tt.err = "nested too deeply"
		}
		_, err := p.NewConverter(memory.DefaultAllocator).Convert(valuesBatch([]byte(value)))
		if tt.err == "" {
			if err != nil {
				t.Errorf("%v %s: %v", tt.policy, value, err)
			}
			continue
		}
		var f *Failure
		if !errors.As(err, &f) || !strings.Contains(f.Records[0].Message, tt.err) {
			t.Errorf("%v %.40s: got %v, want error containing %q", tt.policy, value, err, tt.err)
		}
	}
}

// TestFirstSpecial8 checks the eight-byte string fast path against the
// byte rule: every byte value at every position, alone and with a second
// special byte (a quote or a control character, whose borrow could flag
// bytes above it) at every later position.
func TestFirstSpecial8(t *testing.T) {
	special := func(v byte) bool { return v < 0x20 || v >= 0x80 || v == '"' || v == '\\' }
	word := func(b []byte) uint64 {
		x := uint64(0)
		for i := 7; i >= 0; i-- {
			x = x<<8 | uint64(b[i])
		}
		return x
	}
	if got := firstSpecial8(word([]byte("abcdefgh"))); got != 8 {
		t.Fatalf("plain word: %d, want 8", got)
	}
	for pos := 0; pos < 8; pos++ {
		for v := 0; v < 256; v++ {
			for second := pos + 1; second <= 8; second++ {
				for _, w := range []byte{'"', 0x00, 0x1f, 0xff} {
					b := []byte("abcdefgh")
					b[pos] = byte(v)
					if second < 8 {
						b[second] = w
					}
					want := 8
					for i, c := range b {
						if special(c) {
							want = i
							break
						}
					}
					if got := firstSpecial8(word(b)); got != want {
						t.Fatalf("%q: firstSpecial8 %d, want %d", b, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkQuotedIntegers converts 1000 records of three quoted 64-bit
// integers, the form JavaScript producers send.
func BenchmarkQuotedIntegers(b *testing.B) {
	p := mustCompile(b, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT,
		fld("a", tBig(false)), fld("b", tBig(false)), fld("c", tInt(false))))
	values := make([][]byte, 1000)
	for i := range values {
		values[i] = []byte(fmt.Sprintf(`{"a":"%d","b":"-%d","c":"%d"}`, 9007199254740993+i, 1234567890123+i, i))
	}
	batch := valuesBatch(values...)
	c := p.NewConverter(memory.DefaultAllocator)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := c.Convert(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(values)*b.N)/b.Elapsed().Seconds(), "rows/s")
}
