package convert

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestRealFlussReadsConvertedBatches writes what the converter builds for
// every Fluss type into a real Fluss table and has the official Java client
// read it back: the proof that the Arrow layout is the one Fluss reads.
func TestRealFlussReadsConvertedBatches(t *testing.T) {
	cluster := testenv.Fluss(t)
	p := mustCompile(t, allTypesMapping())

	db := cluster.NewDatabase(t, "ferry_transcode")
	spec := testenv.TableSpec{Database: db, Table: "all_types", BucketCount: 1,
		Properties: map[string]string{"table.log.arrow.compression.type": "NONE"}}
	for _, c := range p.Columns {
		spec.Columns = append(spec.Columns, testenv.Column{Name: c.Name, Type: c.Type.String()})
	}
	info := cluster.NewTable(t, spec)

	batch := allTypesBatch()
	out, err := p.NewConverter(memory.DefaultAllocator).Convert(batch)
	if err != nil {
		t.Fatal(err)
	}
	rec := readIPC(t, out.IPC, p.Schema)
	defer rec.Release()
	lb, err := logbatch.Build(rec, logbatch.DefaultOptions(int16(info.SchemaID)))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client, err := fluss.Dial(ctx, cluster.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.RefreshTableRoute(ctx, fluss.TablePath{Database: db, Table: "all_types"}); err != nil {
		t.Fatal(err)
	}
	for {
		res, err := client.ProduceLog(ctx, info.TableID, fluss.AcksAll, 10*time.Second, []fluss.BucketBatch{{Bucket: 0, Records: lb}})
		if err != nil {
			t.Fatal(err)
		}
		var fe *fluss.Error
		if res[0].Err == nil {
			break
		}
		if !errors.As(res[0].Err, &fe) || !(fe.StaleMetadata() || fe.Retriable()) || ctx.Err() != nil {
			t.Fatalf("produce: %v", res[0].Err)
		}
		if _, err := client.RefreshTableRoute(ctx, fluss.TablePath{Database: db, Table: "all_types"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	rows := cluster.Scan(t, db, "all_types", testenv.ScanOptions{Expect: 2, Timeout: 60 * time.Second})
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	want := []map[string]string{{
		"b": `true`, "ti": `-128`, "si": `32767`, "i": `-2147483648`, "bi": `9223372036854775807`, "f": `0.5`, "d": `-0.00125`,
		"dec": `"12.30"`, "dec38": `"-1234567890123456789012345678.0123456789"`, "c": `"äb"`, "s": `"ünïcödé ✓ 𝄞"`,
		"bin": `"AAE="`, "by": `"AAH/"`, "dt": `"2024-02-29"`, "t3": `"12:34:56.789"`,
		"ts3": `"2026-01-02T03:04:05.678000000"`, "ts6": `"1969-12-31T23:59:59.999000000"`, "ts9": `"2262-04-11T23:47:16.854775807"`,
		"ltz0": `"2026-01-02T03:04:05.000000000Z"`, "ltz3": `"2026-01-02T03:04:05.678000000Z"`,
		"arr": `[1,null,3]`, "m": `[["x",1],["y",null]]`, "mi": `[[7,"seven"]]`, "r": `{"x":5,"y":["a",null]}`,
		"k": `"key-0"`, "kts": `"2026-01-02T03:04:05.678000000Z"`, "h": `[{"key":"trace","value":"Cgs="},{"key":"n","value":null}]`,
	}, {
		"b": `null`, "i": `0`, "dec38": `null`, "ts6": `"2026-01-02T03:04:05.123456000"`, "t3": `"00:00:00.000"`, "arr": `null`, "m": `null`, "r": `null`, "k": `null`,
		"kts": `"2026-01-02T03:04:05.679000000Z"`, "h": `[]`,
	}}
	for i, w := range want {
		row := rows[i].Row
		for col, v := range w {
			got, err := json.Marshal(row[col])
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
