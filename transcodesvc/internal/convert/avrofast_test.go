package convert

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/arrowmem"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

// avroFlatMapping has a column of every kind the own columns hold; column
// missing has no field in the writer schemas.
func avroFlatMapping() *catalogv1.TopicMapping {
	return avroMapping(fld("id", tBig(false)), fld("i8", tTiny(true)), fld("i16", tSmall(true)), fld("i32", tInt(true)),
		fld("f32", tFloat(true)), fld("f64", tDouble(true)), fld("ok", tBool(true)), fld("dec", tDec(10, 2, true)),
		fld("wide", tDec(30, 4, true)), fld("s", tString(true)), fld("c", tChar(3, true)), fld("b", tBytes(true)),
		fld("fx", tBytes(true)), fld("e", tString(true)), fld("day", tDate(true)), fld("at", tLTZ(6, true)),
		fld("local", tNTZ(3, true)), fld("ms", tBig(true)), fld("missing", tString(true)))
}

// avroFlatSchema is a writer schema of avroFlatMapping's columns in
// another order, with unions either way round and a field no column
// takes (skipped). atType is the type of field at.
func avroFlatSchema(atType string) avro.Schema {
	return avro.MustParse(`{"type":"record","name":"flat","fields":[
		{"name":"skipped","type":{"type":"array","items":{"type":"map","values":["null","bytes","double"]}}},
		{"name":"s","type":["null","string"]},
		{"name":"id","type":"long"},
		{"name":"i8","type":["null","int"]},
		{"name":"i16","type":["int","null"]},
		{"name":"i32","type":["null","long"]},
		{"name":"f32","type":["null","float"]},
		{"name":"f64","type":["null","float"]},
		{"name":"ok","type":["null","boolean"]},
		{"name":"dec","type":["null",{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}]},
		{"name":"wide","type":{"type":"fixed","name":"W","size":13,"logicalType":"decimal","precision":30,"scale":2}},
		{"name":"c","type":["null","string"]},
		{"name":"b","type":["null","bytes"]},
		{"name":"fx","type":{"type":"fixed","name":"F","size":4}},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["RED","GREEN"]}},
		{"name":"day","type":{"type":"int","logicalType":"date"}},
		{"name":"at","type":` + atType + `},
		{"name":"local","type":{"type":"long","logicalType":"local-timestamp-millis"}},
		{"name":"ms","type":{"type":"long","logicalType":"timestamp-millis"}}]}`)
}

// avroFlatValue is row i of the flat schema; nulls in the nullable unions
// now and then, strings of growing length.
func avroFlatValue(i int) map[string]any {
	v := map[string]any{
		"skipped": []any{map[string]any{"k": []byte{byte(i)}, "n": nil}}, "s": strings.Repeat("x", i*5),
		"id": int64(i) << 33, "i8": int32(i - 100), "i16": int32(-i * 300), "i32": int64(i * 70_000),
		"f32": float32(i) / 4, "f64": float32(i) / 8, "ok": i%3 == 0, "dec": big.NewRat(int64(-i*12345), 100),
		"wide": big.NewRat(int64(i*1_000_003), 100), "c": "abc", "b": bytes.Repeat([]byte{byte(i)}, i%5), "fx": [4]byte{1, 2, 3, byte(i)},
		"e": []string{"RED", "GREEN"}[i%2], "day": time.Unix(int64(19000+i)*86400, 0).UTC(),
		"at": time.UnixMicro(1_767_225_600_000_000 + int64(i)*1_000_001).UTC(), "local": int64(1_767_225_600_000 + i),
		"ms": time.UnixMilli(int64(i) * 1000).UTC(),
	}
	if i%4 == 1 {
		for _, k := range []string{"s", "i8", "i16", "i32", "f32", "f64", "ok", "dec", "c", "b"} {
			v[k] = nil
		}
	}
	return v
}

// Avro values read into the own columns give the batch the closures and
// builders give, in both encodings, whether every value fits them or one
// does not (then the rows before it move to the builders): a CHAR of more
// bytes than characters, a decimal wider than 64 bits, a value of a schema
// without a plan in the own columns.
func TestAvroFastColumnsMatchBuilders(t *testing.T) {
	m := avroFlatMapping()
	m.ArrowCompression = catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME
	p := mustCompile(t, m)
	s := avroFlatSchema(`{"type":"long","logicalType":"timestamp-micros"}`)
	// Milliseconds into TIMESTAMP_LTZ(6): the closures scale them, the own
	// columns have no step for it.
	other := avroFlatSchema(`{"type":"long","logicalType":"timestamp-millis"}`)
	known := map[int32]*schemas.Schema{1: {ID: 1, Avro: s}, 2: {ID: 2, Avro: other}}
	fast := p.NewConverter(&arrowmem.Pool{})
	generic := p.NewConverter(memory.DefaultAllocator)
	generic.fast = nil
	fast.UseSchemas(known)
	generic.UseSchemas(known)
	const n = 40
	unfit := map[string]func(i int) []byte{
		"CHAR of 2 characters in 4 bytes": func(i int) []byte {
			v := avroFlatValue(i)
			v["c"] = "éé"
			return framed(t, 1, s, v)
		},
		"decimal wider than 64 bits": func(i int) []byte {
			v := avroFlatValue(i)
			v["wide"] = new(big.Rat).SetFrac(new(big.Int).Lsh(big.NewInt(3), 70), big.NewInt(100))
			return framed(t, 1, s, v)
		},
		"schema without a plan": func(i int) []byte {
			v := avroFlatValue(i)
			v["at"] = time.UnixMilli(1_767_225_600_000 + int64(i)).UTC()
			return framed(t, 2, other, v)
		},
	}
	for name, value := range unfit {
		for _, at := range []int{-1, 0, 1, 17, n - 1} {
			var values [][]byte
			for i := range n {
				if i == at {
					values = append(values, value(i))
				} else {
					values = append(values, framed(t, 1, s, avroFlatValue(i)))
				}
			}
			batch := valuesBatch(values...)
			want, err := generic.ConvertTo(batch, EncodingLogRecords)
			if err != nil {
				t.Fatal(err)
			}
			fast.fast.skip, fast.fast.misses = 0, 0
			got, err := fast.ConvertTo(batch, EncodingLogRecords)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.LogRecords, want.LogRecords) {
				t.Fatalf("%s at %d: the own columns' records section differs from the builders'", name, at)
			}
			rows := n
			if at >= 0 {
				rows = at
			}
			if fast.fast.rows != rows {
				t.Errorf("%s at %d: %d rows in the own columns, want %d", name, at, fast.fast.rows, rows)
			}
			wantIPC, err := generic.Convert(batch)
			if err != nil {
				t.Fatal(err)
			}
			fast.fast.skip, fast.fast.misses = 0, 0
			gotIPC, err := fast.Convert(batch)
			if err != nil {
				t.Fatal(err)
			}
			sameRows(t, gotIPC.IPC, wantIPC.IPC, p)
		}
	}
}

// Records the own columns do not take and the closures refuse fail with
// the closures' errors, wherever they come in the batch, and the next
// batch converts as if none had failed.
func TestAvroFastColumnsErrors(t *testing.T) {
	p := mustCompile(t, avroFlatMapping())
	s := avroFlatSchema(`{"type":"long","logicalType":"timestamp-micros"}`)
	known := map[int32]*schemas.Schema{1: {ID: 1, Avro: s}}
	fast := p.NewConverter(&arrowmem.Pool{})
	generic := p.NewConverter(memory.DefaultAllocator)
	generic.fast = nil
	fast.UseSchemas(known)
	generic.UseSchemas(known)
	with := func(i int, k string, x any) []byte {
		v := avroFlatValue(i)
		v[k] = x
		return framed(t, 1, s, v)
	}
	good := framed(t, 1, s, avroFlatValue(2))
	// Branch 2 of i8's union: the byte before the one byte an i8 of 5 and
	// of 6 differ in. The value's map field is encoded in map order, so
	// encodings are taken until that order is the same in both.
	var badBranch []byte
	for range 1000 {
		five, six := with(2, "i8", int32(5)), with(2, "i8", int32(6))
		diff, n := -1, 0
		for i := range min(len(five), len(six)) {
			if five[i] != six[i] {
				diff, n = i, n+1
			}
		}
		if len(five) == len(six) && n == 1 {
			five[diff-1] = 4
			badBranch = five
			break
		}
	}
	if badBranch == nil {
		t.Fatal("no two encodings differing in the i8 alone")
	}
	invalid := map[string][]byte{
		"TINYINT out of range":              with(2, "i8", int32(300)),
		"INT out of range":                  with(2, "i32", int64(1)<<40),
		"decimal of too many digits":        with(2, "dec", big.NewRat(123456789012, 100)),
		"CHAR too long":                     with(2, "c", "abcd"),
		"before 1970 with sub-milliseconds": with(2, "at", time.UnixMicro(-1500).UTC()),
		"truncated":                         good[:len(good)-3],
		"data after the record":             append(append([]byte(nil), good...), 0),
		"not UTF-8":                         bytes.Replace(with(2, "s", "ok\x01"), []byte("ok\x01"), []byte("ok\xff"), 1),
	}
	for name, bad := range invalid {
		if bytes.Equal(bad, good) {
			t.Fatalf("%s: the value was not changed", name)
		}
		for _, at := range []int{0, 3, 9} {
			values := make([][]byte, 10)
			for i := range values {
				values[i] = framed(t, 1, s, avroFlatValue(i))
			}
			values[at] = bad
			values[9-at/3] = bad // a second bad record, after or on the first
			batch := valuesBatch(values...)
			_, wantErr := generic.Convert(batch)
			fast.fast.skip, fast.fast.misses = 0, 0
			_, gotErr := fast.Convert(batch)
			var want, got *Failure
			if !errors.As(wantErr, &want) || !errors.As(gotErr, &got) {
				t.Fatalf("%s at %d: want two failures, got %v and %v", name, at, wantErr, gotErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s at %d: got %+v, want %+v", name, at, got, want)
			}
		}
	}
	_, wantErr := generic.Convert(valuesBatch(good, badBranch))
	_, gotErr := fast.Convert(valuesBatch(good, badBranch))
	var wantF, gotF *Failure
	if !errors.As(wantErr, &wantF) || !errors.As(gotErr, &gotF) || !reflect.DeepEqual(gotF, wantF) ||
		!strings.Contains(wantF.Records[0].Message, "union index 2 is not one of") {
		t.Fatalf("union branch 2: got %+v, want %+v", gotF.Records, wantF.Records)
	}
	values := [][]byte{framed(t, 1, s, avroFlatValue(0)), framed(t, 1, s, avroFlatValue(1))}
	want, err := generic.ConvertTo(valuesBatch(values...), EncodingLogRecords)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fast.ConvertTo(valuesBatch(values...), EncodingLogRecords)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.LogRecords, want.LogRecords) || fast.fast.rows != 2 {
		t.Fatalf("the batch after failed ones differs from the builders' (%d rows in the own columns)", fast.fast.rows)
	}
}

// FuzzAvroFastColumns feeds arbitrary payloads framed with a flat schema
// to a converter with own columns and to one without: both must refuse
// with the same errors or give the same records section.
func FuzzAvroFastColumns(f *testing.F) {
	p := mustCompile(f, avroFlatMapping())
	s := avroFlatSchema(`{"type":"long","logicalType":"timestamp-micros"}`)
	known := map[int32]*schemas.Schema{1: {ID: 1, Avro: s}}
	for i := range 6 {
		f.Add(framed(f, 1, s, avroFlatValue(i))[schemas.HeaderSize:])
	}
	f.Add([]byte{})
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	fast := p.NewConverter(&arrowmem.Pool{})
	generic := p.NewConverter(memory.DefaultAllocator)
	generic.fast = nil
	fast.UseSchemas(known)
	generic.UseSchemas(known)
	f.Fuzz(func(t *testing.T, payload []byte) {
		v := append(schemas.AppendFrame(nil, 1), payload...)
		batch := valuesBatch(v, v)
		want, wantErr := generic.ConvertTo(batch, EncodingLogRecords)
		fast.fast.skip, fast.fast.misses = 0, 0
		got, gotErr := fast.ConvertTo(batch, EncodingLogRecords)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("got error %v, want %v", gotErr, wantErr)
		}
		if wantErr != nil {
			var a, b *Failure
			if !errors.As(wantErr, &a) || !errors.As(gotErr, &b) || !reflect.DeepEqual(a, b) {
				t.Fatalf("got %+v, want %+v", gotErr, wantErr)
			}
			return
		}
		if !bytes.Equal(got.LogRecords, want.LogRecords) {
			t.Fatal("the own columns' records section differs from the builders'")
		}
	})
}
