package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/testenv"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

// TestRealFlussReadsAvroRows converts framed Avro records of every logical
// type into a real Fluss table and has the official Java client read them
// back: the typed values an Avro producer sent are the ones Fluss holds.
func TestRealFlussReadsAvroRows(t *testing.T) {
	cluster := testenv.Fluss(t)
	p := mustCompile(t, avroMapping(
		fld("id", tBig(false)), fld("qty", tSmall(true)), fld("price", tDec(10, 2, true)), fld("day", tDate(true)),
		fld("at", tLTZ(3, true)), fld("at6", tLTZ(6, true)), fld("local", tNTZ(3, true)), fld("t", tTime(3, true)),
		fld("name", tString(true)), fld("kind", tString(true)), fld("blob", tBytes(true)), fld("fx", tBinary(2, true)),
		fld("tags", tArray(tString(true), true)), fld("attrs", tMap(tString(false), tInt(true), true)),
		fld("addr", tRow(true, fld("city", tString(true)), fld("zip", tInt(true)))),
		fld("not_in_schema", tString(true))))
	s := avro.MustParse(`{"type":"record","name":"order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"qty","type":["null","int"]},
		{"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}]},
		{"name":"day","type":["null",{"type":"int","logicalType":"date"}]},
		{"name":"at","type":["null",{"type":"long","logicalType":"timestamp-millis"}]},
		{"name":"at6","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},
		{"name":"local","type":["null",{"type":"long","logicalType":"local-timestamp-millis"}]},
		{"name":"t","type":["null",{"type":"int","logicalType":"time-millis"}]},
		{"name":"name","type":["null","string"]},
		{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["RETAIL","WHOLESALE"]}},
		{"name":"blob","type":["null","bytes"]},
		{"name":"fx","type":["null",{"type":"fixed","name":"Two","size":2}]},
		{"name":"tags","type":["null",{"type":"array","items":["null","string"]}]},
		{"name":"attrs","type":["null",{"type":"map","values":["null","int"]}]},
		{"name":"addr","type":["null",{"type":"record","name":"Addr","fields":[{"name":"city","type":"string"},{"name":"zip","type":"int"}]}]},
		{"name":"skipped","type":{"type":"array","items":"double"}}]}`)
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_901_000, time.UTC)
	full := framed(t, 11, s, map[string]any{
		"id": int64(1001), "qty": int32(-3), "price": big.NewRat(2490, 100), "day": map[string]any{"int.date": time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		"at":    map[string]any{"long.timestamp-millis": at.Truncate(time.Millisecond)},
		"at6":   map[string]any{"long.timestamp-micros": at},
		"local": map[string]any{"long.local-timestamp-millis": time.UnixMilli(1767323045678).UTC()},
		"t":     map[string]any{"int.time-millis": 45296789 * time.Millisecond},
		"name":  "kettle ✓", "kind": "WHOLESALE", "blob": []byte{0, 1, 255}, "fx": map[string]any{"shop.Two": [2]byte{0, 1}},
		"tags": []any{"a", nil}, "attrs": map[string]any{"map": map[string]any{"n": int32(7)}}, "addr": map[string]any{"shop.Addr": map[string]any{"city": "Ghent", "zip": int32(9000)}},
		"skipped": []any{1.5, 2.5},
	})
	sparse := framed(t, 11, s, map[string]any{
		"id": int64(1002), "qty": nil, "price": nil, "day": nil, "at": nil, "at6": nil, "local": nil, "t": nil, "name": nil,
		"kind": "RETAIL", "blob": nil, "fx": nil, "tags": nil, "attrs": nil, "addr": nil, "skipped": []any{},
	})
	c := p.NewConverter(memory.DefaultAllocator)
	c.UseSchemas(map[int32]*schemas.Schema{11: {ID: 11, Avro: s}})
	out, err := c.Convert(valuesBatch(full, sparse))
	if err != nil {
		t.Fatal(err)
	}
	rec := readIPC(t, out.IPC, p.Schema)
	defer rec.Release()

	db := cluster.NewDatabase(t, "ferry_avro")
	spec := testenv.TableSpec{Database: db, Table: "orders", BucketCount: 1,
		Properties: map[string]string{"table.log.arrow.compression.type": "NONE"}}
	for _, col := range p.Columns {
		spec.Columns = append(spec.Columns, testenv.Column{Name: col.Name, Type: col.Type.String()})
	}
	info := cluster.NewTable(t, spec)
	appendToBucket0(t, cluster, info, rec)

	rows := cluster.Scan(t, db, "orders", testenv.ScanOptions{Expect: 2, Timeout: 60 * time.Second})
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	want := []map[string]string{{
		"id": `1001`, "qty": `-3`, "price": `"24.90"`, "day": `"2024-02-29"`, "at": `"2026-01-02T03:04:05.678000000Z"`,
		"at6": `"2026-01-02T03:04:05.678901000Z"`, "local": `"2026-01-02T03:04:05.678000000"`, "t": `"12:34:56.789"`,
		"name": `"kettle ✓"`, "kind": `"WHOLESALE"`, "blob": `"AAH/"`, "fx": `"AAE="`, "tags": `["a",null]`, "attrs": `[["n",7]]`,
		"addr": `{"city":"Ghent","zip":9000}`, "not_in_schema": `null`,
	}, {
		"id": `1002`, "qty": `null`, "price": `null`, "day": `null`, "at": `null`, "at6": `null`, "local": `null`, "t": `null`,
		"name": `null`, "kind": `"RETAIL"`, "blob": `null`, "fx": `null`, "tags": `null`, "attrs": `null`, "addr": `null`, "not_in_schema": `null`,
	}}
	for i, w := range want {
		for col, v := range w {
			got, err := json.Marshal(rows[i].Row[col])
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != v {
				t.Errorf("row %d %s: Fluss read %s, want %s", i, col, got, v)
			}
		}
	}
	if t.Failed() {
		b, _ := json.Marshal(rows)
		t.Logf("rows: %s", b)
	}
}

// TestRealFlussReadsAvroFastColumns converts framed Avro values of every
// kind the own columns read (nulls in the nullable unions now and then)
// into the LZ4 records section transcodesvc answers with, and has the Java
// client read the rows back.
func TestRealFlussReadsAvroFastColumns(t *testing.T) {
	cluster := testenv.Fluss(t)
	m := avroFlatMapping()
	m.ArrowCompression = catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME
	p := mustCompile(t, m)
	s := avroFlatSchema(`{"type":"long","logicalType":"timestamp-micros"}`)
	const n = 40
	var values [][]byte
	for i := range n {
		values = append(values, framed(t, 3, s, avroFlatValue(i)))
	}
	c := p.NewConverter(memory.DefaultAllocator)
	c.UseSchemas(map[int32]*schemas.Schema{3: {ID: 3, Avro: s}})
	out, err := c.ConvertTo(valuesBatch(values...), EncodingLogRecords)
	if err != nil {
		t.Fatal(err)
	}
	if c.fast.rows != n {
		t.Fatalf("%d rows in the own columns, want %d", c.fast.rows, n)
	}

	rows := writeFlatAndScan(t, cluster, "ferry_avrofast", p, out, n)
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// The Java client writes a float with its ".0".
	float := func(x float64) string {
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	for i, r := range rows {
		want := map[string]string{
			"id": fmt.Sprint(int64(i) << 33), "i8": fmt.Sprint(i - 100), "i16": fmt.Sprint(-i * 300), "i32": fmt.Sprint(i * 70_000),
			"f32": float(float64(i) / 4), "f64": float(float64(i) / 8), "ok": fmt.Sprint(i%3 == 0),
			"dec": js(big.NewRat(int64(-i*12345), 100).FloatString(2)), "wide": js(big.NewRat(int64(i*1_000_003), 100).FloatString(4)),
			"s": js(strings.Repeat("x", i*5)), "c": `"abc"`, "b": js(bytes.Repeat([]byte{byte(i)}, i%5)), "fx": js([]byte{1, 2, 3, byte(i)}),
			"e": js([]string{"RED", "GREEN"}[i%2]), "day": js(time.Unix(int64(19000+i)*86400, 0).UTC().Format(time.DateOnly)),
			"at":    js(time.UnixMicro(1_767_225_600_000_000 + int64(i)*1_000_001).UTC().Format("2006-01-02T15:04:05.000000000Z")),
			"local": js(time.UnixMilli(1_767_225_600_000 + int64(i)).UTC().Format("2006-01-02T15:04:05.000000000")),
			"ms":    fmt.Sprint(i * 1000), "missing": "null",
		}
		if i%4 == 1 {
			for _, col := range []string{"s", "i8", "i16", "i32", "f32", "f64", "ok", "dec", "c", "b"} {
				want[col] = "null"
			}
		}
		for col, v := range want {
			if got := js(r.Row[col]); got != v {
				t.Errorf("row %d %s: Fluss read %s, want %s", i, col, got, v)
			}
		}
	}
}
