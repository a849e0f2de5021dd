package broker

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchOf encodes values as one uncompressed record batch v2, as a
// non-idempotent producer sends it.
func batchOf(t testing.TB, values ...string) []byte {
	t.Helper()
	return batchWith(values, -1, 0)
}

func batchWith(values []string, producerID int64, attrs int16) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // without the 1-byte zero length
		recs = r.AppendTo(recs)
	}
	ts := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrs,
		LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: producerID, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(values)), Records: recs,
	}
	if producerID >= 0 {
		b.ProducerEpoch, b.FirstSequence = 0, 0
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// produceReq builds a one-partition produce request.
func produceReq(version, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
