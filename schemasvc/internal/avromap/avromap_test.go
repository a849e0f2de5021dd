package avromap

import (
	"strings"
	"testing"

	"github.com/ferrygw/ferry/schemasvc/internal/tablefit"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

func typ(root catalogv1.TypeRoot, nullable bool) *catalogv1.DataType {
	return &catalogv1.DataType{Root: root, Nullable: nullable}
}

// every is a column of each Fluss type, nested ones included.
func every() []*catalogv1.Field {
	dec := typ(catalogv1.TypeRoot_TYPE_ROOT_DECIMAL, false)
	dec.Precision, dec.Scale = 12, 3
	tsMicros := typ(catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ, false)
	tsMicros.Precision = 6
	ltz := typ(catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ, true)
	ltz.Precision = 3
	arr := typ(catalogv1.TypeRoot_TYPE_ROOT_ARRAY, false)
	arr.Element = typ(catalogv1.TypeRoot_TYPE_ROOT_INTEGER, true)
	m := typ(catalogv1.TypeRoot_TYPE_ROOT_MAP, true)
	m.Key, m.Value = typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, false), typ(catalogv1.TypeRoot_TYPE_ROOT_DOUBLE, false)
	row := typ(catalogv1.TypeRoot_TYPE_ROOT_ROW, false)
	row.Fields = []*catalogv1.Field{{Name: "city", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, false)}, {Name: "zip", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_CHAR, true)}}
	return []*catalogv1.Field{
		{Name: "b", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN, false)},
		{Name: "i8", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_TINYINT, false)},
		{Name: "i64", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_BIGINT, false)},
		{Name: "f", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_FLOAT, false)},
		{Name: "d", Type: dec},
		{Name: "s", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)},
		{Name: "raw", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_BYTES, false)},
		{Name: "day", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_DATE, false)},
		{Name: "t", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_TIME, false)},
		{Name: "local", Type: tsMicros},
		{Name: "at", Type: ltz},
		{Name: "tags", Type: arr},
		{Name: "scores", Type: m},
		{Name: "addr", Type: row},
	}
}

// Derive writes each type as the documented Avro type, and the derived
// schema maps back onto its own columns.
func TestDeriveEveryType(t *testing.T) {
	text, err := Derive("my-table", "shop.eu", every())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"name":"my_table","namespace":"shop.eu"`,
		`{"name":"b","type":"boolean"}`, `{"name":"i8","type":"int"}`, `{"name":"i64","type":"long"}`, `{"name":"f","type":"float"}`,
		`{"name":"d","type":{"logicalType":"decimal","precision":12,"scale":3,"type":"bytes"}}`,
		`{"default":null,"name":"s","type":["null","string"]}`, `{"name":"raw","type":"bytes"}`,
		`{"name":"day","type":{"logicalType":"date","type":"int"}}`, `{"name":"t","type":{"logicalType":"time-millis","type":"int"}}`,
		`{"name":"local","type":{"logicalType":"local-timestamp-micros","type":"long"}}`,
		`{"default":null,"name":"at","type":["null",{"logicalType":"timestamp-millis","type":"long"}]}`,
		`{"name":"tags","type":{"items":["null","int"],"type":"array"}}`,
		`{"default":null,"name":"scores","type":["null",{"type":"map","values":"double"}]}`,
		`{"name":"addr","type":{"fields":[{"name":"city","type":"string"},{"default":null,"name":"zip","type":["null","string"]}],"name":"my_table_addr","type":"record"}}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("derived schema lacks %s:\n%s", want, text)
		}
	}
	s, err := Parse(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := Check(s, tablefit.Target{Columns: every()}); m != nil {
		t.Errorf("the derived schema does not fit its table: %v", m)
	}
}

func TestCheckNested(t *testing.T) {
	cols := every()
	for _, tc := range []struct{ field, avro, want string }{
		{"tags", `{"type":"array","items":"long"}`, "field tags[]: Avro long does not fit column type INTEGER"},
		{"scores", `{"type":"map","values":"string"}`, "field scores{}: Avro string does not fit column type DOUBLE NOT NULL"},
		{"addr", `{"type":"record","name":"A","fields":[{"name":"city","type":"string"},{"name":"street","type":"string"}]}`, "field addr.street: no column of that name (the table refuses unknown fields)"},
		{"addr", `{"type":"record","name":"A","fields":[{"name":"zip","type":"string"}]}`, "field addr.city: column city is STRING NOT NULL and the schema has no field for it"},
		{"s", `["null","string","long"]`, `field s: union ["null","string","long"]: only ["null", T] unions map onto a column`},
		{"day", `"int"`, "field day: Avro int does not fit column type DATE NOT NULL"},
	} {
		var fields []string
		for _, c := range cols {
			a := map[string]string{"b": `"boolean"`, "i8": `"int"`, "i64": `"long"`, "f": `"float"`,
				"d": `{"type":"bytes","logicalType":"decimal","precision":12,"scale":3}`, "raw": `"bytes"`,
				"day": `{"type":"int","logicalType":"date"}`, "t": `{"type":"int","logicalType":"time-millis"}`,
				"local": `{"type":"long","logicalType":"local-timestamp-micros"}`, "tags": `{"type":"array","items":"int"}`,
				"addr": `{"type":"record","name":"A","fields":[{"name":"city","type":"string"}]}`}[c.GetName()]
			if c.GetName() == tc.field {
				a = tc.avro
			}
			if a != "" {
				fields = append(fields, `{"name":"`+c.GetName()+`","type":`+a+`}`)
			}
		}
		s, err := Parse(`{"type":"record","name":"R","fields":[`+strings.Join(fields, ",")+`]}`, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.field, err)
		}
		m := Check(s, tablefit.Target{Columns: cols})
		if m == nil || m.Error() != tc.want {
			t.Errorf("%s: got %v, want %s", tc.field, m, tc.want)
		}
	}
}

// A single column (a key column, a raw value) takes a bare Avro value.
func TestSingleColumn(t *testing.T) {
	key := &catalogv1.Field{Name: "k", Type: typ(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)}
	if text, err := DeriveSingle(key); err != nil || text != `["null","string"]` {
		t.Errorf("DeriveSingle = %s %v", text, err)
	}
	s, _ := Parse(`"string"`, nil)
	if m := Check(s, tablefit.Target{Single: key}); m != nil {
		t.Errorf("string key: %v", m)
	}
	s, _ = Parse(`"long"`, nil)
	if m := Check(s, tablefit.Target{Single: key}); m == nil {
		t.Error("long key accepted for a STRING column")
	}
}
