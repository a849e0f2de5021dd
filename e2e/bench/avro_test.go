package main

import (
	"encoding/base64"
	"encoding/json"
	"math/big"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
)

// benchAvro is the schema the registry derives for benchColumns (docs/schema-registry.md).
const benchAvro = `{"type":"record","name":"t","namespace":"bench","fields":[
	{"name":"id","type":"long"},
	{"name":"qty","type":["null","int"],"default":null},
	{"name":"price","type":["null","double"],"default":null},
	{"name":"flag","type":["null","boolean"],"default":null},
	{"name":"name","type":["null","string"],"default":null},
	{"name":"category","type":["null","string"],"default":null},
	{"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},
	{"name":"amount","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null},
	{"name":"payload","type":["null","bytes"],"default":null},
	{"name":"day","type":["null",{"type":"int","logicalType":"date"}],"default":null}]}`

// The Avro row holds the values of the JSON row, so both producers write the same rows.
func TestAvroRowIsTheJSONRow(t *testing.T) {
	schema := avro.MustParse(benchAvro)
	for _, i := range []int64{0, 7, 123_457} {
		b, err := avro.Marshal(schema, avroRow(i))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := avro.Unmarshal(schema, b, &got); err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		if err := json.Unmarshal(appendRow(nil, i), &want); err != nil {
			t.Fatal(err)
		}
		// The JSON row's text forms, as Ferry's JSON mapping reads them.
		asText := map[string]any{
			"id": got["id"], "qty": got["qty"], "price": got["price"], "flag": got["flag"], "name": got["name"], "category": got["category"],
			"ts":      got["ts"].(time.Time).UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			"amount":  got["amount"].(*big.Rat).FloatString(2),
			"payload": base64.StdEncoding.EncodeToString(got["payload"].([]byte)),
			"day":     got["day"].(time.Time).UTC().Format("2006-01-02"),
		}
		g, _ := json.Marshal(asText)
		w, _ := json.Marshal(want)
		// Numbers compare through JSON: int32/int64/float64 all print as JSON numbers.
		var gn, wn map[string]any
		_ = json.Unmarshal(g, &gn)
		_ = json.Unmarshal(w, &wn)
		gb, _ := json.Marshal(gn)
		wb, _ := json.Marshal(wn)
		if string(gb) != string(wb) {
			t.Errorf("row %d:\n avro %s\n json %s", i, gb, wb)
		}
	}
}
