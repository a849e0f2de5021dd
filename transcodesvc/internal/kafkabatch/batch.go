// Package kafkabatch decodes one Kafka record batch (magic 2) as a producer
// sends it in a Produce request: header checks (services/recordbatch),
// CRC-32C, decompression with a size bound, and the varint-encoded records,
// which are returned as slices into the decoder's buffers rather than
// copies.
package kafkabatch

import "github.com/ferrygw/ferry/services/recordbatch"

// Header is the batch header, checked by services/recordbatch.
type Header = recordbatch.Header

// minRecordSize is the smallest possible encoded record: a one-byte length
// varint and six one-byte fields (attributes, timestamp delta, offset delta,
// key length, value length, header count). It bounds how many records a
// buffer can hold before anything is allocated for them.
const minRecordSize = 7

// RecordHeader is one Kafka record header. Key is never nil; Value is nil for
// a null header value.
type RecordHeader struct {
	Key   []byte
	Value []byte
}

// Record is one decoded record. Key and Value are nil when null. All slices
// point into the Decoder's buffers (or the input batch) and stay valid only
// until the next Decode.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []RecordHeader
}

// Timestamp is the record's absolute timestamp in epoch milliseconds.
func (b *Batch) Timestamp(r *Record) int64 { return b.Header.BaseTimestamp + r.TimestampDelta }

// Batch is a decoded record batch.
type Batch struct {
	Header  Header
	Records []Record
	// RawSize is the size of the record section after decompression.
	RawSize int
}
