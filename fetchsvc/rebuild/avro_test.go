package rebuild

import (
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/hamba/avro/v2"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
)

func avroPlan(t *testing.T, typ types.DataType, field string) (*Plan, avro.Schema, error) {
	t.Helper()
	m := &catalogv1.TopicMapping{Topic: "t", Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO}}
	p, err := Compile(m, []types.Field{{Name: "c", Type: typ}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := avro.Parse(`{"type":"record","name":"r","fields":[{"name":"c","type":` + field + `},{"name":"absent","type":["null","string"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	p, err = p.WithAvro(258, s)
	return p, s, err
}

// avroRows rebuilds each row as a framed Avro value and decodes it back
// with hamba/avro, returning field c of each as fmt renders it.
func avroRows(t *testing.T, typ types.DataType, field string, rec arrow.RecordBatch) []string {
	t.Helper()
	p, s, err := avroPlan(t, typ, field)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range int(rec.NumRows()) {
		var r Record
		if err := p.Rebuild(&r, rec, i, 0); err != nil {
			out = append(out, "error: "+err.Error())
			continue
		}
		if string(r.Value[:5]) != "\x00\x00\x00\x01\x02" {
			t.Fatalf("framing %x, want magic 0 and id 258", r.Value[:5])
		}
		var v map[string]any
		if err := avro.Unmarshal(s, r.Value[5:], &v); err != nil {
			t.Fatalf("row %d: %x does not decode: %v", i, r.Value, err)
		}
		if v["absent"] != nil {
			t.Fatalf("field without a column: %v", v["absent"])
		}
		c := v["c"]
		if tm, ok := c.(time.Time); ok {
			c = tm.UTC().Format(time.RFC3339Nano)
		}
		if r, ok := c.(*big.Rat); ok {
			c = r.FloatString(4)
		}
		out = append(out, fmt.Sprint(c))
	}
	return out
}

func TestAvroValues(t *testing.T) {
	dec := dt(types.Decimal, true)
	dec.Precision, dec.Scale = 10, 2
	ltz := dt(types.TimestampLTZ, false)
	ltz.Precision = 6
	ntz := dt(types.TimestampNTZ, false)
	ntz.Precision = 3
	tm := dt(types.Time, false)
	tm.Precision = 3
	arr := dt(types.Array, false)
	el := dt(types.Int, true)
	arr.Element = &el
	mp := dt(types.Map, false)
	k, v := dt(types.String, false), dt(types.Bytes, true)
	mp.Key, mp.Value = &k, &v
	row := dt(types.Row, true)
	row.Fields = []types.Field{{Name: "city", Type: dt(types.String, true)}, {Name: "zip", Type: dt(types.Int, true)}}

	cases := []struct {
		name  string
		typ   types.DataType
		field string
		n     int
		fill  func(b array.Builder, i int)
		want  []string
	}{
		{"bigint nullable", dt(types.BigInt, true), `["null","long"]`, 2, func(b array.Builder, i int) {
			if i == 0 {
				b.(*array.Int64Builder).Append(-5)
			} else {
				b.AppendNull()
			}
		}, []string{"-5", "<nil>"}},
		{"int as long", dt(types.Int, false), `"long"`, 1, func(b array.Builder, i int) { b.(*array.Int32Builder).Append(7) }, []string{"7"}},
		{"bigint as int out of range", dt(types.BigInt, false), `"int"`, 1, func(b array.Builder, i int) { b.(*array.Int64Builder).Append(1 << 40) },
			[]string{"error: value: column c: 1099511627776 does not fit an Avro int"}},
		{"null into required", dt(types.BigInt, true), `"long"`, 1, func(b array.Builder, i int) { b.AppendNull() },
			[]string{"error: value: column c is NULL but its Avro field is not nullable"}},
		{"string", dt(types.String, false), `"string"`, 1, func(b array.Builder, i int) { b.(*array.StringBuilder).Append("héllo") }, []string{"héllo"}},
		{"enum", dt(types.String, false), `{"type":"enum","name":"E","symbols":["A","B"]}`, 1, func(b array.Builder, i int) { b.(*array.StringBuilder).Append("B") }, []string{"B"}},
		{"bytes", dt(types.Bytes, false), `"bytes"`, 1, func(b array.Builder, i int) { b.(*array.BinaryBuilder).Append([]byte{1, 2}) }, []string{"[1 2]"}},
		{"boolean", dt(types.Boolean, false), `"boolean"`, 1, func(b array.Builder, i int) { b.(*array.BooleanBuilder).Append(true) }, []string{"true"}},
		{"double", dt(types.Double, false), `"double"`, 1, func(b array.Builder, i int) { b.(*array.Float64Builder).Append(2.5) }, []string{"2.5"}},
		{"decimal", dec, `["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}]`, 3, func(b array.Builder, i int) {
			b.(*array.Decimal128Builder).Append([]decimal128.Num{decimal128.FromI64(-12345), decimal128.FromI64(0), decimal128.FromI64(99999999)}[i])
		}, []string{"-123.4500", "0.0000", "999999.9900"}},
		{"decimal fixed larger scale", dec, `{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":12,"scale":4}`, 1, func(b array.Builder, i int) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(-150))
		}, []string{"-1.5000"}},
		{"date", dt(types.Date, false), `{"type":"int","logicalType":"date"}`, 1, func(b array.Builder, i int) { b.(*array.Date32Builder).Append(20455) }, []string{"2026-01-02T00:00:00Z"}},
		{"time-millis", tm, `{"type":"int","logicalType":"time-millis"}`, 1, func(b array.Builder, i int) { b.(*array.Time32Builder).Append(1500) }, []string{"1.5s"}},
		{"timestamp-micros", ltz, `{"type":"long","logicalType":"timestamp-micros"}`, 1, func(b array.Builder, i int) {
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(1767323045678901))
		}, []string{"2026-01-02T03:04:05.678901Z"}},
		{"TIMESTAMP(6) as timestamp-millis", ltz, `{"type":"long","logicalType":"timestamp-millis"}`, 1, func(b array.Builder, i int) {
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(-1500))
		}, []string{"1969-12-31T23:59:59.998Z"}},
		{"local-timestamp-millis", ntz, `{"type":"long","logicalType":"local-timestamp-millis"}`, 1, func(b array.Builder, i int) {
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(1767323045678))
		}, []string{"2026-01-02T03:04:05.678Z"}},
		{"array", arr, `{"type":"array","items":["null","int"]}`, 2, func(b array.Builder, i int) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			if i == 0 {
				lb.ValueBuilder().(*array.Int32Builder).Append(1)
				lb.ValueBuilder().AppendNull()
			}
		}, []string{"[1 <nil>]", "[]"}},
		{"map", mp, `{"type":"map","values":["null","bytes"]}`, 1, func(b array.Builder, i int) {
			mb := b.(*array.MapBuilder)
			mb.Append(true)
			mb.KeyBuilder().(*array.StringBuilder).Append("k")
			mb.ItemBuilder().(*array.BinaryBuilder).Append([]byte{9})
		}, []string{"map[k:[9]]"}},
		{"row", row, `["null",{"type":"record","name":"A","fields":[{"name":"zip","type":["null","int"]},{"name":"city","type":"string"},{"name":"country","type":["null","string"]}]}]`, 2, func(b array.Builder, i int) {
			sb := b.(*array.StructBuilder)
			if i == 1 {
				sb.AppendNull()
				return
			}
			sb.Append(true)
			sb.FieldBuilder(0).(*array.StringBuilder).Append("Ghent")
			sb.FieldBuilder(1).(*array.Int32Builder).Append(9000)
		}, []string{"map[A:map[city:Ghent country:<nil> zip:9000]]", "<nil>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := avroRows(t, tc.typ, tc.field, build(t, tc.typ, tc.n, tc.fill))
			if strings.Join(got, " | ") != strings.Join(tc.want, " | ") {
				t.Fatalf("got  %s\nwant %s", strings.Join(got, " | "), strings.Join(tc.want, " | "))
			}
		})
	}
}

func TestAvroSchemaRefused(t *testing.T) {
	for field, want := range map[string]string{
		`"string"`:                        "column c of type BIGINT NOT NULL cannot be written as Avro string",
		`["int","long"]`:                  `is not ["null", T]`,
		`{"type":"array","items":"long"}`: "cannot be written as Avro array",
	} {
		if _, _, err := avroPlan(t, dt(types.BigInt, false), field); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", field, err, want)
		}
	}
	m := &catalogv1.TopicMapping{Topic: "t", Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO}}
	p, err := Compile(m, []types.Field{{Name: "c", Type: dt(types.BigInt, false)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WithAvro(1, avro.MustParse(`{"type":"record","name":"r","fields":[{"name":"other","type":"long"}]}`)); err == nil || !strings.Contains(err.Error(), "field other has no column and is not nullable") {
		t.Errorf("required field without column: %v", err)
	}
	if _, err := p.WithAvro(1, avro.MustParse(`"long"`)); err == nil || !strings.Contains(err.Error(), "not a record") {
		t.Errorf("not a record: %v", err)
	}
	var r Record
	rec := build(t, dt(types.BigInt, false), 1, func(b array.Builder, i int) { b.(*array.Int64Builder).Append(1) })
	if err := p.Rebuild(&r, rec, 0, 0); err == nil || !strings.Contains(err.Error(), "no Avro schema") {
		t.Errorf("plan without schema: %v", err)
	}
}

func TestJSONSchemaValues(t *testing.T) {
	m := &catalogv1.TopicMapping{Topic: "t", Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA}}
	p, err := Compile(m, []types.Field{{Name: "c", Type: dt(types.BigInt, true)}})
	if err != nil {
		t.Fatal(err)
	}
	rec := build(t, dt(types.BigInt, true), 2, func(b array.Builder, i int) {
		if i == 0 {
			b.(*array.Int64Builder).Append(42)
		} else {
			b.AppendNull()
		}
	})
	var r Record
	if err := p.Rebuild(&r, rec, 0, 0); err == nil || !strings.Contains(err.Error(), "no JSON Schema id") {
		t.Fatalf("plan without id: %v", err)
	}
	p = p.WithJSONSchema(0x01020304)
	for i, want := range []string{"\x00\x01\x02\x03\x04{\"c\":42}", "\x00\x01\x02\x03\x04{\"c\":null}"} {
		if err := p.Rebuild(&r, rec, i, 0); err != nil || string(r.Value) != want {
			t.Errorf("row %d: %q %v, want %q", i, r.Value, err, want)
		}
	}
}
