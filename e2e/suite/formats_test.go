package suite

import (
	"fmt"
	"testing"
	"time"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestProduceRawAndString: the raw and string value formats, each with key, timestamp and (for
// string) headers columns, produced with franz-go and sarama and compared row by row.
func TestProduceRawAndString(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "formats")
	const n = 90

	formats := []struct {
		name    string
		cols    []testenv.Column
		props   map[string]string
		records func(i int) sent
		row     rowExpectation
	}{
		{
			name: "raw",
			cols: []testenv.Column{{Name: "payload", Type: "BYTES"}, {Name: "device", Type: "BYTES"}, {Name: "at", Type: "BIGINT"}},
			props: map[string]string{"kafka.value.format": "raw", "kafka.key.column": "device",
				"kafka.timestamp.column": "at"},
			records: func(i int) sent {
				s := sent{Partition: int32(i % 2), Timestamp: time.UnixMilli(1_767_225_600_123 + int64(i))}
				if i%9 != 4 {
					// Every byte value, including invalid UTF-8, must pass through untouched.
					s.Value = []byte{0xde, 0xad, byte(i), 0xff, 0x00, byte(255 - i)}
				}
				if i%3 != 0 {
					s.Key = []byte{0x01, byte(i)}
				}
				return s
			},
			row: func(s sent) map[string]any {
				return map[string]any{"payload": b64(s.Value), "device": b64(s.Key), "at": num(s.Timestamp.UnixMilli())}
			},
		},
		{
			name: "string",
			cols: []testenv.Column{{Name: "line", Type: "STRING"}, {Name: "received", Type: "TIMESTAMP(3)"},
				{Name: "tags", Type: "ARRAY<ROW<k STRING, v STRING>>"}, {Name: "spare", Type: "INT"}},
			props: map[string]string{"kafka.value.format": "string", "kafka.value.column": "line",
				"kafka.timestamp.column": "received", "kafka.headers.column": "tags"},
			records: func(i int) sent {
				s := sent{Partition: int32(i % 2), Timestamp: time.UnixMilli(1_767_225_600_123 + int64(i)*60_000),
					Key:     fmt.Appendf(nil, "not stored %d", i),
					Headers: []header{{Key: "env", Value: []byte("prod")}}}
				if i%9 != 4 {
					s.Value = fmt.Appendf(nil, "GET /item/%d 200 — ünïcödé", i)
				}
				if i%2 == 0 {
					// Repeated keys stay, in order; a null header value is NULL.
					s.Headers = append(s.Headers, header{Key: "env", Value: []byte("eu")}, header{Key: "nil", Value: nil})
				}
				return s
			},
			row: func(s sent) map[string]any {
				tags := []any{}
				for _, h := range s.Headers {
					tags = append(tags, map[string]any{"k": h.Key, "v": strOrNil(h.Value)})
				}
				return map[string]any{"line": strOrNil(s.Value), "received": ntz(s.Timestamp), "tags": tags, "spare": nil}
			},
		},
	}
	for _, fm := range formats {
		for _, client := range []string{"franz-go", "sarama"} {
			t.Run(fm.name+"/"+client, func(t *testing.T) {
				table := fm.name + "_" + sanitize(client)
				topic := topicTable(t, f, db, table, 2, fm.cols, fm.props)
				recs := make([]sent, n)
				for i := range recs {
					recs[i] = fm.records(i)
				}
				var acked []sent
				if client == "sarama" {
					acked = saramaProduce(t, e.kafka, topic, recs, 30)
				} else {
					acked = kgoProduce(t, newKgo(t, e.kafka), toKgo(topic, recs), 30)
				}
				verifyRows(t, f, db, table, acked, fm.row)
			})
		}
	}
}
