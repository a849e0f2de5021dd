package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/big"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// avroPayloads is the rows of payloads as Avro values in the Schema Registry's framing (magic
// byte 0, the schema id, the binary record), in the schema the registry derives for the
// avro-format table behind topic: what a Confluent-style producer with
// auto.register.schemas=false and use.latest.version=true sends. Encoding happens here, before
// anything is measured, as the JSON rows are built before their run.
func avroPayloads(ctx context.Context, registryURL, topic string, n int) (payloads, error) {
	cl, err := sr.NewClient(sr.URLs(registryURL))
	if err != nil {
		return payloads{}, err
	}
	ss, err := cl.SchemaByVersion(ctx, topic+"-value", -1)
	if err != nil {
		return payloads{}, fmt.Errorf("latest schema of %s-value: %w", topic, err)
	}
	schema, err := avro.Parse(ss.Schema.Schema)
	if err != nil {
		return payloads{}, fmt.Errorf("the registry's schema of %s-value: %w", topic, err)
	}
	var p payloads
	p.recs = make([][]byte, n)
	for i := range n {
		b := []byte{0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], uint32(ss.ID))
		body, err := avro.Marshal(schema, avroRow(int64(i)))
		if err != nil {
			return payloads{}, fmt.Errorf("row %d: %w", i, err)
		}
		p.recs[i] = append(b, body...)
		p.bytes += int64(len(p.recs[i]))
	}
	return p, nil
}

// avroRow is row i (appendRow's values) as the Avro record's fields.
func avroRow(i int64) map[string]any {
	payload := make([]byte, 16)
	binary.LittleEndian.PutUint64(payload[:8], uint64(i))
	binary.LittleEndian.PutUint64(payload[8:], uint64(i*31))
	row := map[string]any{
		"id":       i,
		"qty":      int32(i % 1000),
		"price":    float64(i) * 0.25,
		"flag":     i%2 == 0,
		"name":     nil,
		"category": fmt.Sprintf("cat-%d", i%8),
		"ts":       time.UnixMilli(tsBase + i).UTC(),
		"amount":   big.NewRat(i%1_000_000, 100),
		"payload":  payload,
		"day":      time.Unix((19000+i%365)*86400, 0).UTC(),
	}
	if i%10 != 0 {
		row["name"] = fmt.Sprintf("name-%d", i)
	}
	return row
}
