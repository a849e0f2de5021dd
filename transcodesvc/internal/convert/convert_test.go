package convert

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/transcodesvc/internal/kafkabatch"
)

// TestTypeRootOrder pins the assumption that the proto enum and types.Root
// list the roots in the same order.
func TestTypeRootOrder(t *testing.T) {
	alias := map[string]string{"INTEGER": "INT", "TIMESTAMP_NTZ": "TIMESTAMP"}
	for v := catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN; v <= catalogv1.TypeRoot_TYPE_ROOT_ROW; v++ {
		name := strings.TrimPrefix(v.String(), "TYPE_ROOT_")
		if a, ok := alias[name]; ok {
			name = a
		}
		if got := types.Root(v).String(); got != name {
			t.Errorf("proto %v maps to %s", v, got)
		}
	}
}

func TestCompileRejects(t *testing.T) {
	base := func() *catalogv1.TopicMapping {
		return jsonMapping(0, fld("a", tInt(false)), fld("k", tBytes(true)), fld("s", tString(true)), fld("ts", tLTZ(3, true)), fld("h", tMap(tString(false), tBytes(true), true)))
	}
	tests := []struct {
		name string
		edit func(m *catalogv1.TopicMapping)
		err  string
	}{
		{"nil mapping", func(m *catalogv1.TopicMapping) { m.Mapping = nil }, "no column mapping"},
		{"no columns", func(m *catalogv1.TopicMapping) { m.Columns = nil }, "no columns"},
		{"key column missing", func(m *catalogv1.TopicMapping) { m.Mapping.KeyColumn = "nope" }, `key column "nope" is not a column`},
		{"key column wrong type", func(m *catalogv1.TopicMapping) { m.Mapping.KeyColumn = "a" }, "want BYTES or STRING"},
		{"timestamp wrong type", func(m *catalogv1.TopicMapping) { m.Mapping.TimestampColumn = "s" }, "want TIMESTAMP_LTZ(p), TIMESTAMP(p) or BIGINT"},
		{"timestamp precision 0", func(m *catalogv1.TopicMapping) { m.Columns[3].Type = tLTZ(0, true); m.Mapping.TimestampColumn = "ts" }, "precision below 3"},
		{"no json column", func(m *catalogv1.TopicMapping) { m.Columns = m.Columns[1:2]; m.Mapping.KeyColumn = "k" }, "at least one column"},
		{"headers wrong type", func(m *catalogv1.TopicMapping) { m.Mapping.HeadersColumn = "k" }, "want MAP<STRING, BYTES|STRING>"},
		{"column mapped twice", func(m *catalogv1.TopicMapping) {
			m.Mapping.KeyColumn = "k"
			m.Mapping.ValueColumn = "k"
			m.Mapping.ValueFormat = 2
		}, "mapped twice"},
		{"value column for json", func(m *catalogv1.TopicMapping) { m.Mapping.ValueColumn = "k" }, "only for RAW and STRING"},
		{"raw without value column", func(m *catalogv1.TopicMapping) { m.Mapping.ValueFormat = 2 }, "need a value_column"},
		{"raw into string", func(m *catalogv1.TopicMapping) { m.Mapping.ValueFormat = 2; m.Mapping.ValueColumn = "s" }, "want BYTES"},
		{"unmapped not null", func(m *catalogv1.TopicMapping) { m.Mapping.ValueFormat = 2; m.Mapping.ValueColumn = "k" }, "column a is NOT NULL but nothing"},
		{"format unspecified", func(m *catalogv1.TopicMapping) { m.Mapping.ValueFormat = 0 }, "not supported"},
		{"bad decimal", func(m *catalogv1.TopicMapping) { m.Columns[0].Type = tDec(40, 2, true) }, "precision must be 1..38"},
		{"no root", func(m *catalogv1.TopicMapping) { m.Columns[0].Type = &catalogv1.DataType{} }, "not supported"},
		{"array without element", func(m *catalogv1.TopicMapping) { m.Columns[0].Type = tArray(nil, true) }, "element: missing type"},
		{"duplicate column", func(m *catalogv1.TopicMapping) { m.Columns[1].Name = "a" }, "appears twice"},
		{"unknown policy", func(m *catalogv1.TopicMapping) { m.Mapping.UnknownFields = 9 }, "unknown_fields policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base()
			tt.edit(m)
			_, err := Compile(m)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("got %v, want error containing %q", err, tt.err)
			}
		})
	}
	if _, err := Compile(base()); err != nil {
		t.Fatalf("base mapping: %v", err)
	}
}

// TestMixedFixtures converts what real clients produced, with every codec,
// and checks the rows, including key, timestamp and headers columns.
func TestMixedFixtures(t *testing.T) {
	p := mustCompile(t, mixedMapping())
	ts0 := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC).UnixMilli()
	wantRows := []map[string]any{
		{"id": int64(1), "name": "alpha", "price": "12.34", "ratio": 0.5, "ok": true, "day": int64(20455), "at": ts0,
			"tags": []any{"a", "b"}, "attrs": [][2]any{{"x", int64(1)}, {"y", int64(-2)}}, "addr": map[string]any{"city": "Zürich", "zip": int64(8001)}},
		{"id": int64(2), "name": "ünïcödé ✓ 𝄞", "price": "0.10", "ratio": -1.25e-3, "ok": false, "day": int64(20000), "at": ts0,
			"tags": []any{}, "attrs": [][2]any{}, "addr": map[string]any{"city": nil, "zip": nil}},
		{"id": int64(3), "name": nil, "price": nil, "ratio": nil, "ok": nil, "day": nil, "at": nil, "tags": nil, "attrs": nil, "addr": nil},
		{"id": int64(-9223372036854775808), "name": nil, "price": nil, "ratio": nil, "ok": nil, "day": nil, "at": nil, "tags": nil, "attrs": nil, "addr": nil},
		{"id": int64(9223372036854775807), "name": "esc \"quoted\" \\ é \n tab\t", "price": nil, "ratio": nil, "ok": nil, "day": nil, "at": nil,
			"tags": []any{"x", nil, "𝄞"}, "attrs": nil, "addr": map[string]any{"city": nil, "zip": int64(1)}},
	}
	wantKeys := []any{"bytes:6b31", nil, "bytes:6b33", "bytes:", fmt.Sprintf("bytes:%x", "ключ")}
	wantHeaders := [][2]any{{"trace", "bytes:616263"}, {"empty", "bytes:"}}

	var reference []byte
	for _, client := range []string{"franz-go", "kcat", "java"} {
		for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
			name := client + "-mixed-" + codec + ".batch"
			t.Run(name, func(t *testing.T) {
				c := p.NewConverter(memory.DefaultAllocator)
				out, err := c.Convert(fixtureBatch(t, name))
				if err != nil {
					t.Fatalf("convert: %v", err)
				}
				rec := readIPC(t, out.IPC, p.Schema)
				defer rec.Release()
				if out.Rows != 5 || rec.NumRows() != 5 {
					t.Fatalf("rows %d/%d, want 5", out.Rows, rec.NumRows())
				}
				for i, want := range wantRows {
					for col, v := range want {
						idx := rec.Schema().FieldIndices(col)[0]
						if got := cell(rec.Column(idx), i); !reflect.DeepEqual(got, v) {
							t.Errorf("row %d %s = %#v, want %#v", i, col, got, v)
						}
					}
				}
				if client != "franz-go" {
					// kcat and Producer.java send one header, and no null keys.
					if got := cell(rec.Column(12), 0); !reflect.DeepEqual(got, [][2]any{{"client", fmt.Sprintf("bytes:%x", client)}}) {
						t.Errorf("%s headers %#v", client, got)
					}
					if client == "java" {
						// Java was told the timestamps, kcat stamps its own.
						for i := range wantRows {
							if got := cell(rec.Column(11), i); got != ts0+int64(i)*1500 {
								t.Errorf("row %d timestamp %v", i, got)
							}
						}
					}
					return
				}
				for i, want := range wantKeys {
					if got := cell(rec.Column(10), i); !reflect.DeepEqual(got, want) {
						t.Errorf("row %d key %#v, want %#v", i, got, want)
					}
					if got := cell(rec.Column(11), i); got != ts0+int64(i)*1500 {
						t.Errorf("row %d timestamp %v", i, got)
					}
				}
				if got := cell(rec.Column(12), 0); !reflect.DeepEqual(got, wantHeaders) {
					t.Errorf("headers %#v", got)
				}
				// A map keeps the last value of a repeated header.
				if got := cell(rec.Column(12), 2); !reflect.DeepEqual(got, [][2]any{{"nullvalue", nil}, {"dup", "bytes:32"}}) {
					t.Errorf("headers of row 2 %#v", got)
				}
				// The same records must give the same Arrow bytes whatever
				// the codec was.
				if reference == nil {
					reference = append([]byte(nil), out.IPC...)
				} else if !bytes.Equal(reference, out.IPC) {
					t.Errorf("IPC differs from the uncompressed fixture's")
				}
			})
		}
	}
}

// TestRawAndString maps whole values onto one column.
func TestRawAndString(t *testing.T) {
	batch := fixtureBatch(t, "franz-go-edge-none.batch")
	raw := &catalogv1.TopicMapping{Topic: "raw", MappingId: "r", Columns: []*catalogv1.Field{
		fld("payload", tBytes(true)), fld("key", tString(true)), fld("at", tBig(false)), fld("extra", tInt(true)),
		fld("h", tArray(tRow(false, fld("key", tString(false)), fld("value", tBytes(true))), false)),
	}, Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_RAW, ValueColumn: "payload", KeyColumn: "key", TimestampColumn: "at", HeadersColumn: "h"}}
	p := mustCompile(t, raw)
	out, err := p.NewConverter(memory.DefaultAllocator).Convert(batch)
	if err != nil {
		t.Fatal(err)
	}
	rec := readIPC(t, out.IPC, p.Schema)
	defer rec.Release()
	want := [][]any{
		{nil, nil, int64(1700000000000), nil, []any{}},
		{"bytes:", "k", int64(1700000000000 - 5), nil, []any{map[string]any{"key": "", "value": nil}}},
		{fmt.Sprintf("bytes:%x", strings.Repeat("v", 5000)), strings.Repeat("K", 300), int64(1700000000000), nil, []any{}},
		{"bytes:0001ff2062696e617279", nil, int64(1700000000000), nil, []any{}},
	}
	for i, row := range want {
		for j, v := range row {
			if got := cell(rec.Column(j), i); !reflect.DeepEqual(got, v) {
				t.Errorf("row %d column %d = %#v, want %#v", i, j, got, v)
			}
		}
	}

	// STRING values must be UTF-8 (record 3 is not) and, NOT NULL, present
	// (record 0 is a tombstone): both records are reported, nothing written.
	str := &catalogv1.TopicMapping{Topic: "str", MappingId: "s", Columns: []*catalogv1.Field{fld("text", tString(false))},
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_STRING, ValueColumn: "text"}}
	_, err = mustCompile(t, str).NewConverter(memory.DefaultAllocator).Convert(batch)
	var f *Failure
	if !errors.As(err, &f) || len(f.Records) != 2 || f.Records[0].BatchIndex != 0 || f.Records[1].BatchIndex != 3 {
		t.Fatalf("got %v %+v", err, f)
	}
	if !strings.Contains(f.Records[0].Message, "value is null") || !strings.Contains(f.Records[1].Message, "not valid UTF-8") {
		t.Fatalf("messages %+v", f.Records)
	}
}

// TestHeaderColumns covers STRING header values and the timestamp column
// as TIMESTAMP (NTZ) and as TIMESTAMP_LTZ with microseconds.
func TestHeaderColumns(t *testing.T) {
	m := jsonMapping(0, fld("a", tInt(true)),
		fld("hm", tMap(tString(false), tString(true), true)),
		fld("ts", tNTZ(3, false)))
	m.Mapping.HeadersColumn, m.Mapping.TimestampColumn = "hm", "ts"
	p := mustCompile(t, m)
	b := valuesBatch([]byte(`{"a":1}`), []byte(`{"a":2}`))
	b.Records[0].Headers = []kafkabatch.RecordHeader{{Key: []byte("x"), Value: []byte("1")}, {Key: []byte("y"), Value: nil}, {Key: []byte("x"), Value: []byte("2")}}
	b.Records[1].TimestampDelta = 7
	out, err := p.NewConverter(memory.DefaultAllocator).Convert(b)
	if err != nil {
		t.Fatal(err)
	}
	rec := readIPC(t, out.IPC, p.Schema)
	defer rec.Release()
	if got := cell(rec.Column(1), 0); !reflect.DeepEqual(got, [][2]any{{"y", nil}, {"x", "2"}}) {
		t.Errorf("headers %#v", got)
	}
	if got := cell(rec.Column(1), 1); !reflect.DeepEqual(got, [][2]any{}) {
		t.Errorf("no headers gives %#v, want an empty map", got)
	}
	if got := cell(rec.Column(2), 1); got != int64(1767323045678+7) {
		t.Errorf("timestamp %v", got)
	}

	b.Records[1].Headers = []kafkabatch.RecordHeader{{Key: []byte("bin"), Value: []byte{0xff}}}
	_, err = p.NewConverter(memory.DefaultAllocator).Convert(b)
	var f *Failure
	if !errors.As(err, &f) || len(f.Records) != 1 || f.Records[0].BatchIndex != 1 || !strings.Contains(f.Records[0].Message, `header "bin" has a value that is not valid UTF-8`) {
		t.Fatalf("got %v", err)
	}

	m.Columns[2].Type = tLTZ(6, false)
	p = mustCompile(t, m)
	b.Records[1].Headers = nil
	out, err = p.NewConverter(memory.DefaultAllocator).Convert(b)
	if err != nil {
		t.Fatal(err)
	}
	rec2 := readIPC(t, out.IPC, p.Schema)
	defer rec2.Release()
	if got := cell(rec2.Column(2), 0); got != int64(1767323045678000) {
		t.Errorf("microsecond timestamp %v", got)
	}
}

// TestFailureThenSuccess checks all-or-nothing: failing records are listed
// with their batch index, and the same Converter then converts a good batch
// with nothing left over from the failed one.
func TestFailureThenSuccess(t *testing.T) {
	p := mustCompile(t, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT, fld("a", tInt(false)), fld("r", tRow(true, fld("x", tArray(tInt(false), true))))))
	c := p.NewConverter(memory.DefaultAllocator)
	_, err := c.Convert(valuesBatch(
		[]byte(`{"a":1,"r":{"x":[1,2]}}`),
		[]byte(`{"a":1,"r":{"x":[1,"two"]}}`),
		[]byte(`{"a":3}`),
		[]byte(`not json`),
		nil,
	))
	var f *Failure
	if !errors.As(err, &f) || f.Code != kerr.InvalidRecord.Code {
		t.Fatalf("got %v", err)
	}
	var idx []int
	for _, r := range f.Records {
		idx = append(idx, r.BatchIndex)
	}
	if !reflect.DeepEqual(idx, []int{1, 3, 4}) || !strings.Contains(f.Message, "3 of 5 records") {
		t.Fatalf("record errors %+v, message %q", f.Records, f.Message)
	}
	if !strings.Contains(f.Records[0].Message, "field r.x[1]") || !strings.Contains(f.Records[1].Message, "malformed JSON") || !strings.Contains(f.Records[2].Message, "tombstone") {
		t.Fatalf("messages %+v", f.Records)
	}
	out, err := c.Convert(valuesBatch([]byte(`{"a":7,"r":{"x":[5]}}`), []byte(`{"a":8}`)))
	if err != nil {
		t.Fatal(err)
	}
	rec := readIPC(t, out.IPC, p.Schema)
	defer rec.Release()
	if rec.NumRows() != 2 || cell(rec.Column(0), 0) != int64(7) || !reflect.DeepEqual(cell(rec.Column(1), 0), map[string]any{"x": []any{int64(5)}}) || cell(rec.Column(1), 1) != nil {
		t.Fatalf("after failure: %v", rec)
	}
}

func TestRecordErrorCap(t *testing.T) {
	p := mustCompile(t, jsonMapping(0, fld("a", tInt(false))))
	values := make([][]byte, MaxRecordErrors+50)
	for i := range values {
		values[i] = []byte(`{"a":"x"}`)
	}
	_, err := p.NewConverter(memory.DefaultAllocator).Convert(valuesBatch(values...))
	var f *Failure
	if !errors.As(err, &f) || len(f.Records) != MaxRecordErrors || !strings.Contains(f.Message, "150 of 150") {
		t.Fatalf("got %v", err)
	}
}

// TestSchemaMatchesFluss checks the Arrow schema of the converted batch is
// the one services/fluss/types derives (which mirrors Fluss's ArrowUtils).
func TestSchemaMatchesFluss(t *testing.T) {
	p := mustCompile(t, mixedMapping())
	want, err := types.ArrowSchema(p.Columns)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Schema.Equal(want) {
		t.Fatalf("schema %s, want %s", p.Schema, want)
	}
	m := p.Schema.Field(8).Type.(*arrow.MapType)
	if m.KeyField().Nullable || !m.ItemField().Nullable || m.KeyField().Name != "key" || m.ItemField().Name != "value" {
		t.Fatalf("map layout %s", m)
	}
}

// TestAgainstArrowJSONReader cross-checks the converter with arrow-go's own
// JSON reader on the 1000-record bench fixture: both must build the same
// record batch (arrow-go reads the timestamps without their "Z", which it
// does not accept, and takes them as UTC as Ferry does with the "Z").
func TestAgainstArrowJSONReader(t *testing.T) {
	batch := fixtureBatch(t, "franz-go-bench-none.batch")
	p := mustCompile(t, benchMapping())
	out, err := p.NewConverter(memory.DefaultAllocator).Convert(batch)
	if err != nil {
		t.Fatal(err)
	}
	got := readIPC(t, out.IPC, p.Schema)
	defer got.Release()

	var ndjson bytes.Buffer
	for _, r := range batch.Records {
		ndjson.Write(bytes.ReplaceAll(r.Value, []byte(`Z"`), []byte(`"`)))
		ndjson.WriteByte('\n')
	}
	rd := array.NewJSONReader(&ndjson, p.Schema, array.WithChunk(len(batch.Records)))
	defer rd.Release()
	if !rd.Next() {
		t.Fatal(rd.Err())
	}
	want := rd.RecordBatch()
	if !array.RecordEqual(got, want) {
		for i := 0; i < int(got.NumCols()); i++ {
			if !array.Equal(got.Column(i), want.Column(i)) {
				t.Errorf("column %s differs: row 0 ferry %v, arrow-go %v", p.Schema.Field(i).Name, cell(got.Column(i), 0), cell(want.Column(i), 0))
			}
		}
	}
}

// TestAllTypes converts a row with every type set and one with nearly
// every column null (the real-Fluss test sends the same batch to Fluss).
func TestAllTypes(t *testing.T) {
	p := mustCompile(t, allTypesMapping())
	out, err := p.NewConverter(memory.DefaultAllocator).Convert(allTypesBatch())
	if err != nil {
		t.Fatal(err)
	}
	rec := readIPC(t, out.IPC, p.Schema)
	defer rec.Release()
	want := map[string][2]any{
		"dec38": {"-1234567890123456789012345678.0123456789", nil},
		"ts9":   {int64(9223372036854775807), nil},
		"ltz0":  {int64(1767323045), nil},
		"mi":    {[][2]any{{int64(7), "seven"}, {int64(-1), nil}, {int64(3), "three"}, {int64(1), "one"}}, nil},
		"kts":   {int64(1767323045678), int64(1767323045679)},
		"h":     {[]any{map[string]any{"key": "trace", "value": "bytes:0a0b"}, map[string]any{"key": "n", "value": nil}}, []any{}},
	}
	for col, w := range want {
		idx := rec.Schema().FieldIndices(col)[0]
		for row := 0; row < 2; row++ {
			if got := cell(rec.Column(idx), row); !reflect.DeepEqual(got, w[row]) {
				t.Errorf("row %d %s = %#v, want %#v", row, col, got, w[row])
			}
		}
	}
	for i := 0; i < int(rec.NumCols()); i++ {
		name := rec.Schema().Field(i).Name
		if _, checked := want[name]; checked || name == "i" || name == "t3" || name == "ts6" {
			continue
		}
		if !rec.Column(i).IsNull(1) && name != "h" {
			t.Errorf("row 1 %s should be null", name)
		}
	}
}

// TestReservedValueBytesBounded: value bytes are reserved at the last
// batch's bytes per row, but never beyond what a batch's records hold, so a
// batch of one large value does not make the next batch of many small ones
// reserve their count times that value.
func TestReservedValueBytesBounded(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	p := mustCompile(t, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, &catalogv1.Field{Name: "s", Type: tString(true)}))
	c := p.NewConverter(mem)
	big := valuesBatch([]byte(`{"s": "` + strings.Repeat("x", 64<<10) + `"}`))
	rec, err := c.ConvertRecord(big, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	small := make([][]byte, 2000)
	for i := range small {
		small[i] = []byte(`{"s": "y"}`)
	}
	rec, err = c.ConvertRecord(valuesBatch(small...), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	// Unbounded, the guess would be 2000 x 64 KiB = 128 MiB.
	if got := mem.CurrentAlloc(); got > 1<<20 {
		t.Fatalf("%d bytes held for 2000 one-byte values", got)
	}
	if s := rec.Column(0).(*array.String); s.Len() != 2000 || s.Value(1999) != "y" {
		t.Fatalf("column %v", rec.Column(0))
	}
}
