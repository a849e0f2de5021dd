package route

import (
	"bytes"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

// TestPrimaryKeyTableAvro: Avro values upsert the rows of a primary-key
// table and a tombstone with a JSON key deletes one, as JSON values do; a
// record framed with an unknown id fails its batch.
func TestPrimaryKeyTableAvro(t *testing.T) {
	m := pkMapping()
	m.Mapping = &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO}
	f := compile(t, m, time.Now())
	schema := avro.MustParse(`{"type":"record","name":"r","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"]}]}`)
	f.values.UseSchemas(map[int32]*schemas.Schema{3: {ID: 3, Avro: schema}})
	value := func(id int64, name string) *string {
		b, err := avro.Marshal(schema, map[string]any{"id": id, "name": name})
		if err != nil {
			t.Fatal(err)
		}
		return s(string(append(schemas.AppendFrame(nil, 3), b...)))
	}
	pieces, fail := f.split(t, 0,
		rec{key: s(`{"id": 5}`), value: value(5, "a")},
		rec{value: value(5, "b")},
		rec{key: s(`{"id": 5}`)}, // tombstone
		rec{value: value(6, "c")},
	)
	if fail != nil {
		t.Fatalf("failure: %v %v", fail.Message, fail.Records)
	}
	var five, six int
	var fiveRows []bool
	var fiveKeys [][]byte
	for _, p := range pieces {
		for _, r := range kvRecords(t, p) {
			switch p.Bucket {
			case bucketOfID(t, 5, 3):
				five++
				fiveRows = append(fiveRows, r.Row != nil)
				fiveKeys = append(fiveKeys, r.Key)
			}
			if p.Bucket == bucketOfID(t, 6, 3) {
				six++
			}
		}
	}
	if five < 3 || !fiveRows[0] || !fiveRows[1] || fiveRows[2] || !bytes.Equal(fiveKeys[0], fiveKeys[2]) {
		t.Fatalf("key 5: %d records, rows %v; want upsert, upsert, delete of one key", five, fiveRows)
	}
	if six == 0 {
		t.Fatal("key 6 is missing")
	}

	unknown := append(schemas.AppendFrame(nil, 99), 2, 0)
	if _, fail := f.split(t, 0, rec{value: value(7, "d")}, rec{value: s(string(unknown))}); fail == nil ||
		len(fail.Records) != 1 || fail.Records[0].BatchIndex != 1 {
		t.Fatalf("want record 1 refused for its unknown id, got %+v", fail)
	}
}
