package main

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/ferrygw/ferry/services/testenv"
)

// The benchmark rows are a function of their index i. AppendBench.java (e2e/bench/appendbench),
// which the Java-writer side runs unchanged, builds row(i) with the same values; the Kafka sides
// send the JSON form of those rows, which Ferry transcodes back into exactly that row.
const tsBase = 1_700_000_000_000 // epoch millis of row 0's ts, as AppendBench.TS_BASE

// benchColumns is the table every Fluss side writes into: ten columns of mixed types, in
// AppendBench.row's order.
func benchColumns() []testenv.Column {
	return []testenv.Column{
		{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()},
		{Name: "qty", Type: "INT"},
		{Name: "price", Type: "DOUBLE"},
		{Name: "flag", Type: "BOOLEAN"},
		{Name: "name", Type: "STRING"},
		{Name: "category", Type: "STRING"},
		{Name: "ts", Type: "TIMESTAMP_LTZ(3)"},
		{Name: "amount", Type: "DECIMAL(10, 2)"},
		{Name: "payload", Type: "BYTES"},
		{Name: "day", Type: "DATE"},
	}
}

// appendRow appends row i as one JSON object. Timestamps and dates are written as ISO-8601 text
// (accepted by Ferry's JSON mapping, docs/transcoding.md) so a record is about 200 bytes, the
// size the benchmark is specified for.
func appendRow(b []byte, i int64) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, `,"qty":`...)
	b = strconv.AppendInt(b, i%1000, 10)
	b = append(b, `,"price":`...)
	b = strconv.AppendFloat(b, float64(i)*0.25, 'f', -1, 64)
	b = append(b, `,"flag":`...)
	b = strconv.AppendBool(b, i%2 == 0)
	b = append(b, `,"name":`...)
	if i%10 == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, `"name-`...)
		b = strconv.AppendInt(b, i, 10)
		b = append(b, '"')
	}
	b = append(b, `,"category":"cat-`...)
	b = strconv.AppendInt(b, i%8, 10)
	b = append(b, `","ts":"`...)
	b = time.UnixMilli(tsBase+i).UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `","amount":"`...)
	b = appendDecimal2(b, i%1_000_000)
	b = append(b, `","payload":"`...)
	var payload [16]byte
	binary.LittleEndian.PutUint64(payload[:8], uint64(i))
	binary.LittleEndian.PutUint64(payload[8:], uint64(i*31))
	b = base64.StdEncoding.AppendEncode(b, payload[:])
	b = append(b, `","day":"`...)
	b = time.Unix((19000+i%365)*86400, 0).UTC().AppendFormat(b, "2006-01-02")
	b = append(b, `"}`...)
	return b
}

// appendDecimal2 writes unscaled/100 with exactly two fraction digits (DECIMAL(10, 2)).
func appendDecimal2(b []byte, unscaled int64) []byte {
	if unscaled < 0 {
		b = append(b, '-')
		unscaled = -unscaled
	}
	b = strconv.AppendInt(b, unscaled/100, 10)
	b = append(b, '.')
	frac := unscaled % 100
	if frac < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, frac, 10)
}

// payloads holds rows 0..n-1 in JSON, one slice per record, sharing one backing array.
type payloads struct {
	recs  [][]byte
	bytes int64 // sum of the record sizes
	// keys, when set, are the records' Kafka keys (withKeys).
	keys [][]byte
}

// withKeys is p with Kafka keys: record i's key is its primary key as JSON, {"id":i}, the
// key a producer sends to a primary-key table (docs/mapping.md §4.4).
func (p payloads) withKeys() payloads {
	buf := make([]byte, 0, len(p.recs)*16)
	ends := make([]int, len(p.recs))
	for i := range p.recs {
		buf = append(buf, `{"id":`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, '}')
		ends[i] = len(buf)
	}
	p.keys = make([][]byte, len(p.recs))
	prev := 0
	for i, e := range ends {
		p.keys[i] = buf[prev:e:e]
		prev = e
	}
	return p
}

func makePayloads(n int64) payloads {
	buf := make([]byte, 0, n*210)
	ends := make([]int, n)
	for i := range n {
		buf = appendRow(buf, i)
		ends[i] = len(buf)
	}
	// Slice only now: appending may have moved buf while it grew.
	p := payloads{recs: make([][]byte, n), bytes: int64(len(buf))}
	prev := 0
	for i, e := range ends {
		p.recs[i] = buf[prev:e:e]
		prev = e
	}
	return p
}

// avgSize is the mean record size in bytes.
func (p payloads) avgSize() float64 {
	if len(p.recs) == 0 {
		return 0
	}
	return float64(p.bytes) / float64(len(p.recs))
}

// writeFile writes the records one per line: kafka-producer-perf-test's --payload-file format
// (it splits on "\n"; JSON rows contain no newline).
func (p payloads) writeFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, r := range p.recs {
		if _, err := w.Write(r); err != nil {
			f.Close()
			return err
		}
		if err := w.WriteByte('\n'); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
