package convert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
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

	out, err := p.NewConverter(memory.DefaultAllocator).Convert(allTypesBatch())
	if err != nil {
		t.Fatal(err)
	}
	rec := readIPC(t, out.IPC, p.Schema)
	defer rec.Release()
	appendToBucket0(t, cluster, info, rec)

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
		"arr": `[1,null,3]`, "m": `[["x",1],["y",null]]`, "r": `{"x":5,"y":["a",null]}`,
		"k": `"key-0"`, "kts": `"2026-01-02T03:04:05.678000000Z"`, "h": `[{"key":"trace","value":"Cgs="},{"key":"n","value":null}]`,
	}, {
		"b": `null`, "i": `0`, "dec38": `null`, "ts6": `"2026-01-02T03:04:05.123456000"`, "t3": `"00:00:00.000"`, "arr": `null`, "m": `null`, "r": `null`, "k": `null`,
		"kts": `"2026-01-02T03:04:05.679000000Z"`, "h": `[]`,
	}}
	// A map comes back with the entries sent, in the reader's order (a
	// java.util.HashMap's), which docs/transcoding.md promises no more than.
	if got, want := entrySet(t, rows[0].Row["mi"]), map[string]string{"7": `"seven"`, "-1": `null`, "3": `"three"`, "1": `"one"`}; !reflect.DeepEqual(got, want) {
		t.Errorf("row 0 mi: Fluss read the entries %v, want %v", got, want)
	}
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

// TestRealFlussReadsFastColumns writes a batch the fast decoder kept in its
// own columns (every type it reads, nulls in every nullable column), as
// the LZ4 records section transcodesvc answers with, and has the Java
// client read the rows back.
func TestRealFlussReadsFastColumns(t *testing.T) {
	cluster := testenv.Fluss(t)
	m := flatMapping()
	m.ArrowCompression = catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME
	p := mustCompile(t, m)
	const n = 40
	c := p.NewConverter(memory.DefaultAllocator)
	out, err := c.ConvertTo(valuesBatch(flatRows(n)...), EncodingLogRecords)
	if err != nil {
		t.Fatal(err)
	}
	if c.fast.rows != n {
		t.Fatalf("%d rows in the fast decoder's own columns, want %d", c.fast.rows, n)
	}

	rows := writeFlatAndScan(t, cluster, "ferry_fastcols", p, out, n)
	for i, r := range rows {
		want := map[string]string{"id": fmt.Sprint(i), "s": fmt.Sprintf("%q", strings.Repeat("x", i*7)),
			"ok": fmt.Sprint(i%3 == 0), "dec": fmt.Sprintf(`"-%d.50"`, i), "b": `"AAEC"`, "c": `"abc"`,
			"at": `"2026-12-05T12:30:00.123000000Z"`, "local": `"2026-12-05T12:30:00.123456000"`, "day": `"2026-12-05"`}
		if i%4 == 1 {
			for col := range want {
				if col != "id" {
					want[col] = "null"
				}
			}
		}
		for col, v := range want {
			got, err := json.Marshal(r.Row[col])
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != v {
				t.Errorf("row %d %s: Fluss read %s, want %s", i, col, got, v)
			}
		}
	}
}

// TestRealFlussMergesRepeatedMapKeys is why Ferry refuses a map with a
// repeated key: a map holding one, written as Arrow straight to Fluss, is
// read back by the Java client with one entry per key, the last one sent.
// The converter refuses the same map as a record error, naming the entry.
func TestRealFlussMergesRepeatedMapKeys(t *testing.T) {
	cluster := testenv.Fluss(t)
	const sent = `[[1,"a"],[-1,null],[1,"dup"]]`
	p := mustCompile(t, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT, fld("m", tMap(tInt(false), tString(true), true))))

	_, err := p.NewConverter(memory.DefaultAllocator).Convert(valuesBatch([]byte(`{"m":` + sent + `}`)))
	var f *Failure
	if !errors.As(err, &f) || len(f.Records) != 1 ||
		f.Records[0].Message != "field m[2]: map key 1 appears twice (also at [0]); Fluss readers would keep only one of the entries" {
		t.Fatalf("converting %s: %v %+v, want the repeated key refused", sent, err, f)
	}

	db := cluster.NewDatabase(t, "ferry_mapkeys")
	info := cluster.NewTable(t, testenv.TableSpec{Database: db, Table: "repeated_keys", BucketCount: 1,
		Columns:    []testenv.Column{{Name: "m", Type: p.Columns[0].Type.String()}},
		Properties: map[string]string{"table.log.arrow.compression.type": "NONE"}})
	rb := array.NewRecordBuilder(memory.DefaultAllocator, p.Schema)
	defer rb.Release()
	mb := rb.Field(0).(*array.MapBuilder)
	keys, vals := mb.KeyBuilder().(*array.Int32Builder), mb.ItemBuilder().(*array.StringBuilder)
	mb.Append(true)
	keys.Append(1)
	vals.Append("a")
	keys.Append(-1)
	vals.AppendNull()
	keys.Append(1)
	vals.Append("dup")
	rec := rb.NewRecordBatch()
	defer rec.Release()
	appendToBucket0(t, cluster, info, rec)

	rows := cluster.Scan(t, db, "repeated_keys", testenv.ScanOptions{Expect: 1, Timeout: 60 * time.Second})
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	if got, want := entrySet(t, rows[0].Row["m"]), map[string]string{"-1": `null`, "1": `"dup"`}; !reflect.DeepEqual(got, want) {
		t.Errorf("Fluss read %s back as the entries %v, want %v (if Fluss now keeps every entry, the refusal can be revisited)", sent, got, want)
	}
}

// entrySet turns a map as the Java reader prints it ([[key, value], ...])
// into key → value JSON, failing on a key printed twice.
func entrySet(t *testing.T, v any) map[string]string {
	t.Helper()
	pairs, ok := v.([]any)
	if !ok {
		t.Fatalf("map read as %#v, want [[key, value], ...]", v)
	}
	out := map[string]string{}
	for _, e := range pairs {
		kv, ok := e.([]any)
		if !ok || len(kv) != 2 {
			t.Fatalf("map entry read as %#v", e)
		}
		k, _ := json.Marshal(kv[0])
		val, _ := json.Marshal(kv[1])
		if _, dup := out[string(k)]; dup {
			t.Fatalf("map read with key %s twice: %v", k, v)
		}
		out[string(k)] = string(val)
	}
	return out
}

// appendToBucket0 writes rec to bucket 0 of table with Ferry's Go client,
// retrying while the new table's leader is not yet known.
func appendToBucket0(t *testing.T, cluster *testenv.Cluster, info testenv.TableInfo, rec arrow.RecordBatch) {
	t.Helper()
	lb, err := logbatch.Build(rec, logbatch.DefaultOptions(int16(info.SchemaID)))
	if err != nil {
		t.Fatal(err)
	}
	produceToBucket0(t, cluster, info, lb)
}

// writeFlatAndScan creates table flat of p's columns (LZ4-compressed Arrow)
// in a new database, writes the records section out to its bucket 0 and
// reads the n rows back with the Fluss Java client.
func writeFlatAndScan(t *testing.T, cluster *testenv.Cluster, dbPrefix string, p *Plan, out Output, n int) []testenv.ScanRow {
	t.Helper()
	db := cluster.NewDatabase(t, dbPrefix)
	spec := testenv.TableSpec{Database: db, Table: "flat", BucketCount: 1,
		Properties: map[string]string{"table.log.arrow.compression.type": "LZ4_FRAME"}}
	for _, col := range p.Columns {
		spec.Columns = append(spec.Columns, testenv.Column{Name: col.Name, Type: col.Type.String()})
	}
	info := cluster.NewTable(t, spec)
	opts := logbatch.DefaultOptions(int16(info.SchemaID))
	opts.Compression = logbatch.CompressionLZ4Frame
	lb, err := logbatch.Frame(nil, out.LogRecords, int32(out.Rows), opts)
	if err != nil {
		t.Fatal(err)
	}
	produceToBucket0(t, cluster, info, lb)
	rows := cluster.Scan(t, db, "flat", testenv.ScanOptions{Expect: n, Timeout: 60 * time.Second})
	if len(rows) != n {
		t.Fatalf("%d rows", len(rows))
	}
	return rows
}

// produceToBucket0 writes the log batch lb to bucket 0 of table, retrying
// while the new table's leader is not yet known.
func produceToBucket0(t *testing.T, cluster *testenv.Cluster, info testenv.TableInfo, lb []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client, err := fluss.Dial(ctx, cluster.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	path := fluss.TablePath{Database: info.Database, Table: info.Table}
	if _, err := client.RefreshTableRoute(ctx, path); err != nil {
		t.Fatal(err)
	}
	for {
		res, err := client.ProduceLog(ctx, info.TableID, fluss.AcksAll, 10*time.Second, []fluss.BucketBatch{{Bucket: 0, Records: lb}})
		if err != nil {
			t.Fatal(err)
		}
		var fe *fluss.Error
		if res[0].Err == nil {
			return
		}
		if !errors.As(res[0].Err, &fe) || !(fe.StaleMetadata() || fe.Retriable()) || ctx.Err() != nil {
			t.Fatalf("produce: %v", res[0].Err)
		}
		if _, err := client.RefreshTableRoute(ctx, path); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
