package convert

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/arrowmem"
	"github.com/ferrygw/ferry/transcodesvc/internal/kafkabatch"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

// BenchmarkJSON converts the 1000-record "bench" fixture (10 mixed-type
// columns) with Ferry's converter and, on the same values in the same run,
// with arrow-go's own JSON reader, and reports rows/s for both and their
// ratio. Both produce a record batch; Ferry's time includes writing IPC.
func BenchmarkJSON(b *testing.B) {
	batch := fixtureBatch(b, "franz-go-bench-none.batch")
	p := mustCompile(b, benchMapping())
	var ndjson bytes.Buffer
	for _, r := range batch.Records {
		ndjson.Write(r.Value)
		ndjson.WriteByte('\n')
	}
	rows := len(batch.Records)
	// arrow-go's reader refuses a "Z" zone suffix on timestamps; without it
	// the text is one byte shorter per row and means the same instant.
	arrowInput := bytes.ReplaceAll(ndjson.Bytes(), []byte(`Z"`), []byte(`"`))

	ferry := func(c *Converter) {
		if _, err := c.Convert(batch); err != nil {
			b.Fatal(err)
		}
	}
	arrowJSON := func() {
		rd := array.NewJSONReader(bytes.NewReader(arrowInput), p.Schema, array.WithChunk(rows), array.WithAllocator(memory.DefaultAllocator))
		defer rd.Release()
		if !rd.Next() {
			b.Fatalf("arrow-go JSON reader: %v", rd.Err())
		}
		if rd.RecordBatch().NumRows() != int64(rows) {
			b.Fatalf("arrow-go read %d rows", rd.RecordBatch().NumRows())
		}
	}

	b.Run("ferry", func(b *testing.B) {
		c := p.NewConverter(memory.DefaultAllocator)
		b.ReportAllocs()
		m0 := mallocs()
		for i := 0; i < b.N; i++ {
			ferry(c)
		}
		b.ReportMetric(float64(mallocs()-m0)/float64(rows*b.N), "allocs/row")
		b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(0, "ns/op")
	})
	b.Run("arrow-go", func(b *testing.B) {
		b.ReportAllocs()
		m0 := mallocs()
		for i := 0; i < b.N; i++ {
			arrowJSON()
		}
		b.ReportMetric(float64(mallocs()-m0)/float64(rows*b.N), "allocs/row")
		b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(0, "ns/op")
	})
	// Interleaved so both see the same machine state; the ratio is what
	// the target (>= 2x) is about.
	b.Run("ratio", func(b *testing.B) {
		c := p.NewConverter(memory.DefaultAllocator)
		var tf, ta time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			ferry(c)
			t1 := time.Now()
			arrowJSON()
			tf += t1.Sub(t0)
			ta += time.Since(t1)
		}
		b.ReportMetric(ta.Seconds()/tf.Seconds(), "x-faster")
		b.ReportMetric(0, "ns/op")
	})
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// BenchmarkTranscode measures decode plus conversion per codec: the work of
// one transcode job.
func BenchmarkTranscode(b *testing.B) {
	p := mustCompile(b, benchMapping())
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		b.Run(codec, func(b *testing.B) {
			raw := fixtureRaw(b, "franz-go-bench-"+codec+".batch")
			d := kafkabatch.NewDecoder(0)
			// The allocator transcodesvc's server gives its converters.
			c := p.NewConverter(&arrowmem.Pool{})
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			rows := 0
			for i := 0; i < b.N; i++ {
				batch, err := d.Decode(raw)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Convert(batch); err != nil {
					b.Fatal(err)
				}
				rows += len(batch.Records)
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// FuzzConvertJSON feeds arbitrary values through the mixed schema. The
// converter must never panic, must refuse with a *Failure, and anything it
// accepts must be a readable one-row Arrow stream.
func FuzzConvertJSON(f *testing.F) {
	for _, name := range []string{"franz-go-mixed-none.batch", "franz-go-bench-none.batch"} {
		b := fixtureBatch(f, name)
		for i, r := range b.Records {
			if i < 20 {
				f.Add(append([]byte(nil), r.Value...))
			}
		}
	}
	f.Add([]byte(`{"id":1,"attrs":[["a",1]],"tags":["\ud800"]}`))
	f.Add([]byte(`{"id":1e400,"price":"1e-400"}`))
	p := mustCompile(f, mixedMapping())
	c := p.NewConverter(memory.DefaultAllocator)
	f.Fuzz(func(t *testing.T, value []byte) {
		batch := valuesBatch(value)
		out, err := c.Convert(batch)
		if err != nil {
			var fl *Failure
			if !errors.As(err, &fl) || len(fl.Records) != 1 {
				t.Fatalf("error %v is not a one-record failure", err)
			}
			return
		}
		rec := readIPC(t, out.IPC, p.Schema)
		defer rec.Release()
		if rec.NumRows() != 1 {
			t.Fatalf("%d rows", rec.NumRows())
		}
	})
}

// benchRowsColumns are the ten columns e2e/bench writes.
func benchRowsColumns() []*catalogv1.Field {
	return []*catalogv1.Field{
		fld("id", tBig(false)), fld("qty", tInt(true)), fld("price", tDouble(true)), fld("flag", tBool(true)),
		fld("name", tString(true)), fld("category", tString(true)), fld("ts", tLTZ(3, true)),
		fld("amount", tDec(10, 2, true)), fld("payload", tBytes(true)), fld("day", tDate(true))}
}

// benchRow is row i of the bench's shape: every tenth name is null.
type benchRow struct {
	i       int64
	name    *string
	payload [16]byte
}

func benchRows() []benchRow {
	var rows []benchRow
	for i := int64(1_000_000); i < 1_000_330; i++ {
		r := benchRow{i: i}
		if i%10 != 0 {
			n := fmt.Sprintf("name-%d", i)
			r.name = &n
		}
		binary.LittleEndian.PutUint64(r.payload[:8], uint64(i))
		binary.LittleEndian.PutUint64(r.payload[8:], uint64(i*31))
		rows = append(rows, r)
	}
	return rows
}

// benchRowsJSON spells the rows as e2e/bench's JSON producers do.
func benchRowsJSON() [][]byte {
	var values [][]byte
	for _, r := range benchRows() {
		i := r.i
		name := "null"
		if r.name != nil {
			name = strconv.Quote(*r.name)
		}
		values = append(values, fmt.Appendf(nil,
			`{"id":%d,"qty":%d,"price":%s,"flag":%t,"name":%s,"category":"cat-%d","ts":"%s","amount":"%d.%02d","payload":"%s","day":"%s"}`,
			i, i%1000, strconv.FormatFloat(float64(i)*0.25, 'f', -1, 64), i%2 == 0, name, i%8,
			time.UnixMilli(1_767_225_600_000+i).UTC().Format("2006-01-02T15:04:05.000Z07:00"), i%1_000_000/100, i%100,
			base64.StdEncoding.EncodeToString(r.payload[:]), time.Unix((19000+i%365)*86400, 0).UTC().Format("2006-01-02")))
	}
	return values
}

// benchRowsAvroSchema is the schema an Avro producer of the bench's rows
// registers: nullable columns as ["null", T] unions.
const benchRowsAvroSchema = `{"type":"record","name":"row","fields":[
	{"name":"id","type":"long"},
	{"name":"qty","type":["null","int"]},
	{"name":"price","type":["null","double"]},
	{"name":"flag","type":["null","boolean"]},
	{"name":"name","type":["null","string"]},
	{"name":"category","type":["null","string"]},
	{"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-millis"}]},
	{"name":"amount","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}]},
	{"name":"payload","type":["null","bytes"]},
	{"name":"day","type":["null",{"type":"int","logicalType":"date"}]}]}`

// benchRowsAvro encodes the same rows as framed Avro of schema id 1.
func benchRowsAvro(b testing.TB) ([][]byte, map[int32]*schemas.Schema) {
	s := avro.MustParse(benchRowsAvroSchema)
	var values [][]byte
	for _, r := range benchRows() {
		i := r.i
		var name any
		if r.name != nil {
			name = *r.name
		}
		values = append(values, framed(b, 1, s, map[string]any{
			"id": i, "qty": int32(i % 1000), "price": float64(i) * 0.25, "flag": i%2 == 0, "name": name,
			"category": fmt.Sprintf("cat-%d", i%8), "ts": time.UnixMilli(1_767_225_600_000 + i).UTC(),
			"amount": big.NewRat(i%1_000_000, 100), "payload": r.payload[:],
			"day": time.Unix((19000+i%365)*86400, 0).UTC(),
		}))
	}
	return values, map[int32]*schemas.Schema{1: {ID: 1, Avro: s}}
}

// BenchmarkBenchRows converts batches of 330 rows shaped as e2e/bench writes
// them (the same ten columns and JSON spelling) into LZ4 records sections:
// one transcode job of that bench, without the Kafka batch decoding.
func BenchmarkBenchRows(b *testing.B) {
	m := jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, benchRowsColumns()...)
	m.ArrowCompression = catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME
	p := mustCompile(b, m)
	values := benchRowsJSON()
	batch := valuesBatch(values...)
	c := p.NewConverter(&arrowmem.Pool{})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := c.ConvertTo(batch, EncodingLogRecords); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(values)*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkAvroVsJSON converts the bench's rows (BenchmarkBenchRows) once
// as JSON and once as framed Avro into Arrow (benchAgainstJSON).
func BenchmarkAvroVsJSON(b *testing.B) {
	jm := jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, benchRowsColumns()...)
	am := avroMapping(benchRowsColumns()...)
	jm.ArrowCompression = catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME
	am.ArrowCompression = catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME
	jc := mustCompile(b, jm).NewConverter(&arrowmem.Pool{})
	ac := mustCompile(b, am).NewConverter(&arrowmem.Pool{})
	avroValues, known := benchRowsAvro(b)
	ac.UseSchemas(known)
	jb, ab := valuesBatch(benchRowsJSON()...), valuesBatch(avroValues...)
	benchAgainstJSON(b, jc, jb, ac, ab, "avro")
}

// benchAgainstJSON converts batch jb with jc (JSON) and ob with oc (the
// format called name) into Arrow, interleaved batch by batch so both see
// the same machine, and reports rows/s of each, the other format's
// speed-up and its allocations per row. "arrow" stops at the Arrow record
// batch; "records" also writes the LZ4 records section a transcode job
// answers with.
func benchAgainstJSON(b *testing.B, jc *Converter, jb *kafkabatch.Batch, oc *Converter, ob *kafkabatch.Batch, name string) {
	rows := len(ob.Records)
	toArrow := func(c *Converter, batch *kafkabatch.Batch) {
		rec, err := c.ConvertRecord(batch, nil)
		if err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	toRecords := func(c *Converter, batch *kafkabatch.Batch) {
		if _, err := c.ConvertTo(batch, EncodingLogRecords); err != nil {
			b.Fatal(err)
		}
	}
	for _, stage := range []struct {
		name string
		run  func(*Converter, *kafkabatch.Batch)
	}{{"arrow", toArrow}, {"records", toRecords}} {
		b.Run(stage.name, func(b *testing.B) {
			var tj, to time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				stage.run(jc, jb)
				t1 := time.Now()
				stage.run(oc, ob)
				tj += t1.Sub(t0)
				to += time.Since(t1)
			}
			b.ReportMetric(float64(rows*b.N)/tj.Seconds(), "json-rows/s")
			b.ReportMetric(float64(rows*b.N)/to.Seconds(), name+"-rows/s")
			b.ReportMetric(tj.Seconds()/to.Seconds(), name+"-x-faster")
			// Outside the timed loop: reading the counter stops the world.
			const n = 100
			m0 := mallocs()
			for range n {
				stage.run(oc, ob)
			}
			b.ReportMetric(float64(mallocs()-m0)/float64(rows*n), name+"-allocs/row")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkAvroReaderFloor reads the bench's Avro rows with hamba/avro's
// Reader alone, one call per value as the converter makes them (Peek and
// SkipBool for a union's branch, ReadLong and Read for a string), keeping
// nothing, interleaved batch by batch with the JSON conversion of
// BenchmarkAvroVsJSON/arrow. reads-x-faster bounds what avro-x-faster can
// reach while the values are read through that Reader.
func BenchmarkAvroReaderFloor(b *testing.B) {
	jc := mustCompile(b, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE, benchRowsColumns()...)).NewConverter(&arrowmem.Pool{})
	jb := valuesBatch(benchRowsJSON()...)
	values, known := benchRowsAvro(b)
	type field struct {
		union bool
		typ   avro.Type
	}
	var fields []field
	for _, f := range known[1].Avro.(*avro.RecordSchema).Fields() {
		s, union := f.Type(), false
		if u, ok := s.(*avro.UnionSchema); ok {
			s, union = u.Types()[1], true
		}
		fields = append(fields, field{union, s.Type()})
	}
	r := avro.NewReader(nil, 0)
	buf := make([]byte, 64)
	var tj, tr time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		rec, err := jc.ConvertRecord(jb, nil)
		if err != nil {
			b.Fatal(err)
		}
		rec.Release()
		t1 := time.Now()
		for _, v := range values {
			r.Reset(v[schemas.HeaderSize:])
			for _, f := range fields {
				if f.union {
					if r.Peek() == 0 {
						r.SkipBool()
						continue
					}
					r.SkipBool()
				}
				switch f.typ {
				case avro.Long:
					r.ReadLong()
				case avro.Int:
					r.ReadInt()
				case avro.Double:
					r.ReadDouble()
				case avro.Boolean:
					r.ReadBool()
				case avro.String, avro.Bytes:
					r.Read(buf[:r.ReadLong()])
				}
			}
			if r.Error != nil {
				b.Fatal(r.Error)
			}
		}
		tj += t1.Sub(t0)
		tr += time.Since(t1)
	}
	b.ReportMetric(tj.Seconds()/tr.Seconds(), "reads-x-faster")
	b.ReportMetric(0, "ns/op")
}
