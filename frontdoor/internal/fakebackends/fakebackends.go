// Package fakebackends has in-memory implementations of catalogsvc,
// transcodesvc and appendsvc for frontdoor's tests. They are served as real
// gRPC servers, so the code under test runs unchanged down to its gRPC
// clients. The transcoder decodes Kafka record batches (magic 2) but
// "converts" to a length-prefixed list of values instead of Arrow; the
// appender keeps one log of values per (table, bucket).
package fakebackends

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NewCatalog returns a catalog without topics.
func NewCatalog() *Catalog { return &Catalog{topics: map[string]*catalogv1.TopicMapping{}} }

// EncodeValues is the stand-in for Arrow IPC the fake transcoder produces
// and the fake appender reads: length-prefixed values.
func EncodeValues(vals ...string) []byte {
	var out []byte
	for _, v := range vals {
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	}
	return out
}

// NewAppender returns an appender with empty logs.
func NewAppender() *Appender {
	return &Appender{logs: map[[2]int64][]string{}, next: map[[2]int64]int64{}}
}

// Catalog serves topic mappings added with AddTopic; Down makes every
// call but Heartbeat fail with UNAVAILABLE.
type Catalog struct {
	catalogv1.UnimplementedCatalogServiceServer
	Mu         sync.Mutex
	topics     map[string]*catalogv1.TopicMapping
	Down       atomic.Bool
	Resolves   atomic.Int64
	Heartbeats atomic.Int64
	// MetadataCalls counts Metadata calls, MetadataMaxTopics the most
	// topic names one of them carried.
	MetadataCalls     atomic.Int64
	MetadataMaxTopics atomic.Int64
	// LastBroker is the broker of the latest heartbeat.
	LastBroker atomic.Pointer[catalogv1.Broker]
	// LastStale is the stale table ids of the latest ResolveTopics (Mu).
	LastStale []int64
	// LastStalePartitions is the stale partition ids of the latest
	// ResolveTopics (Mu).
	LastStalePartitions []int64
}

// AddTopic exposes a topic backed by table tableID with partitions buckets.
func (f *Catalog) AddTopic(name string, partitions int32, tableID int64) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	id := make([]byte, 16)
	binary.BigEndian.PutUint64(id[8:], uint64(tableID))
	f.topics[name] = &catalogv1.TopicMapping{
		Topic: name, TopicId: id, Database: "db", Table: name, TableId: tableID, SchemaId: 1,
		PartitionCount: partitions, ArrowCompression: catalogv1.ArrowCompression_ARROW_COMPRESSION_ZSTD,
		Mapping:   &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_RAW, ValueColumn: "v"},
		MappingId: fmt.Sprintf("%s-v1", name),
	}
}

// EditTopic changes an added topic's mapping in place (its kind, its
// table's properties), as a change of its Fluss table would.
func (f *Catalog) EditTopic(name string, edit func(*catalogv1.TopicMapping)) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	edit(f.topics[name])
}

// RemoveTopic takes a topic away.
func (f *Catalog) RemoveTopic(name string) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	delete(f.topics, name)
}

// AddPartitionTopic exposes the topic of Fluss partition partitionID
// (named partition) of the partitioned table behind topic table.
func (f *Catalog) AddPartitionTopic(name, table, partition string, partitions int32, tableID, partitionID int64) {
	f.AddTopic(name, partitions, tableID)
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.topics[name].PartitionKeys = []string{"p"}
	f.topics[name].FlussPartition = &catalogv1.FlussPartition{Id: partitionID, Name: partition, TableTopic: table}
}

// SetFetchCompression sets a topic's kafka.fetch.compression.
func (f *Catalog) SetFetchCompression(name string, c catalogv1.FetchCompression) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.topics[name].FetchCompression = c
}

func (f *Catalog) ResolveTopics(_ context.Context, r *catalogv1.ResolveTopicsRequest) (*catalogv1.ResolveTopicsResponse, error) {
	if f.Down.Load() {
		return nil, status.Error(codes.Unavailable, "catalog down")
	}
	f.Resolves.Add(1)
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.LastStale = r.StaleTableIds
	f.LastStalePartitions = r.StalePartitionIds
	resp := &catalogv1.ResolveTopicsResponse{}
	for _, n := range r.Topics {
		if m := f.topics[n]; m != nil {
			resp.Results = append(resp.Results, &catalogv1.TopicResult{Topic: n, Mapping: m})
		} else {
			resp.Results = append(resp.Results, &catalogv1.TopicResult{Topic: n, ErrorCode: int32(kerr.UnknownTopicOrPartition.Code), ErrorMessage: "no table " + n})
		}
	}
	return resp, nil
}

func (f *Catalog) Metadata(_ context.Context, r *catalogv1.MetadataRequest) (*catalogv1.MetadataResponse, error) {
	f.MetadataCalls.Add(1)
	for n := int64(len(r.GetTopics())); ; {
		prev := f.MetadataMaxTopics.Load()
		if n <= prev || f.MetadataMaxTopics.CompareAndSwap(prev, n) {
			break
		}
	}
	if f.Down.Load() {
		return nil, status.Error(codes.Unavailable, "catalog down")
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	resp := &catalogv1.MetadataResponse{ClusterId: "ferry-test", ControllerId: r.Self.NodeId, Brokers: []*catalogv1.Broker{r.Self}}
	add := func(m *catalogv1.TopicMapping) {
		tm := &catalogv1.TopicMetadata{Topic: m.Topic, TopicId: m.TopicId}
		for p := int32(0); p < m.PartitionCount; p++ {
			tm.Partitions = append(tm.Partitions, &catalogv1.PartitionMetadata{Partition: p, LeaderId: r.Self.NodeId, ReplicaIds: []int32{r.Self.NodeId}})
		}
		resp.Topics = append(resp.Topics, tm)
	}
	if r.AllTopics {
		for _, m := range f.topics {
			add(m)
		}
		return resp, nil
	}
	for _, n := range r.Topics {
		if m := f.topics[n]; m != nil {
			add(m)
		} else {
			resp.Topics = append(resp.Topics, &catalogv1.TopicMetadata{Topic: n, ErrorCode: int32(kerr.UnknownTopicOrPartition.Code)})
		}
	}
	return resp, nil
}

func (f *Catalog) Heartbeat(_ context.Context, r *catalogv1.HeartbeatRequest) (*catalogv1.HeartbeatResponse, error) {
	f.LastBroker.Store(r.Broker)
	f.Heartbeats.Add(1)
	return &catalogv1.HeartbeatResponse{ClusterId: "ferry-test"}, nil
}

// Transcoder decodes magic-2 batches like transcodesvc would, but
// "converts" to a simple length-prefixed list of values instead of Arrow.
// A record whose value is "bad" fails the batch with INVALID_RECORD.
type Transcoder struct {
	transcodev1.UnimplementedTranscodeServiceServer
	Hold       chan struct{} // jobs wait for it to close when set
	Jobs       atomic.Int64
	Mappings   atomic.Int64 // requests that carried a mapping
	MissingMap atomic.Int64
	Codecs     sync.Map // codec number -> count
	// Jitter delays each answer by a random time up to it, so answers
	// come back out of order.
	Jitter time.Duration
	// LastTrace is the trace carrier of the latest job.
	LastTrace atomic.Pointer[map[string]string]
}

func (f *Transcoder) Transcode(stream grpc.BidiStreamingServer[transcodev1.TranscodeRequest, transcodev1.TranscodeResponse]) error {
	known := map[string]*catalogv1.TopicMapping{}
	var sendMu sync.Mutex
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		f.Jobs.Add(1)
		if c := req.GetTrace().GetCarrier(); c != nil {
			f.LastTrace.Store(&c)
		}
		if req.Mapping != nil {
			f.Mappings.Add(1)
			known[req.MappingId] = req.Mapping
		}
		m := known[req.MappingId]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if f.Hold != nil {
				select {
				case <-f.Hold:
				case <-stream.Context().Done():
					return
				}
			}
			if f.Jitter > 0 {
				time.Sleep(rand.N(f.Jitter))
			}
			resp := &transcodev1.TranscodeResponse{JobId: req.JobId}
			if m == nil {
				f.MissingMap.Add(1)
				resp.Result = &transcodev1.TranscodeResponse_Failure{Failure: &transcodev1.TranscodeFailure{ErrorCode: int32(kerr.CorruptMessage.Code), ErrorMessage: "mapping not sent on this stream"}}
			} else {
				f.convert(resp, req.RecordBatch, req.WantLogRecords)
			}
			sendMu.Lock()
			defer sendMu.Unlock()
			_ = stream.Send(resp)
		}()
	}
}

func (f *Transcoder) convert(resp *transcodev1.TranscodeResponse, b []byte, logRecords bool) {
	fail := func(code int16, msg string, recs ...*transcodev1.RecordError) {
		resp.Result = &transcodev1.TranscodeResponse_Failure{Failure: &transcodev1.TranscodeFailure{ErrorCode: int32(code), ErrorMessage: msg, RecordErrors: recs}}
	}
	// The header checks transcodesvc makes, with the same codes.
	h, err := recordbatch.ParseHeader(b)
	if err == nil {
		err = h.VerifyCRC(b)
	}
	if err != nil {
		var bad *recordbatch.Error
		if errors.As(err, &bad) {
			fail(bad.Code, bad.Msg)
		} else {
			fail(kerr.CorruptMessage.Code, err.Error())
		}
		return
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		fail(kerr.CorruptMessage.Code, err.Error())
		return
	}
	codec := rb.Attributes & 7
	n, _ := f.Codecs.LoadOrStore(codec, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	var out []byte
	if codec == 0 {
		recs := rb.Records
		for i := 0; i < int(rb.NumRecords); i++ {
			l, used := binary.Varint(recs)
			if used <= 0 || int(l) > len(recs)-used {
				fail(kerr.CorruptMessage.Code, "record truncated")
				return
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:used+int(l)]); err != nil {
				fail(kerr.CorruptMessage.Code, err.Error())
				return
			}
			recs = recs[used+int(l):]
			if string(r.Value) == "bad" {
				fail(kerr.InvalidRecord.Code, "value does not match the table", &transcodev1.RecordError{BatchIndex: int32(i), Message: "bad value"})
				return
			}
			out = binary.AppendUvarint(out, uint64(len(r.Value)))
			out = append(out, r.Value...)
		}
	} else {
		// Compressed: the test only checks the codec made it through.
		for i := 0; i < int(rb.NumRecords); i++ {
			v := fmt.Sprintf("codec%d", codec)
			out = binary.AppendUvarint(out, uint64(len(v)))
			out = append(out, v...)
		}
	}
	batch := &transcodev1.ArrowBatch{RecordCount: rb.NumRecords, ProducerId: rb.ProducerID}
	// The values travel in the field the real service would use, so that a
	// frontdoor forwarding the wrong one loses them.
	if logRecords {
		batch.LogRecords = out
	} else {
		batch.ArrowIpc = out
	}
	resp.Result = &transcodev1.TranscodeResponse_Batch{Batch: batch}
}

// Appender keeps one log per (table, bucket) and answers base offsets.
type Appender struct {
	appendv1.UnimplementedAppendServiceServer
	Mu    sync.Mutex
	logs  map[[2]int64][]string
	Fail  func(*appendv1.AppendRequest) *appendv1.AppendResponse // scripted errors
	Calls atomic.Int64
	// Hold swallows requests without answering (a hung appendsvc).
	Hold atomic.Bool
	// discard: answer offsets without keeping values (benchmarks).
	Discard atomic.Bool
	next    map[[2]int64]int64
	// StoreThenFail, when it returns true for a request, stores the batch
	// and then answers a retriable REQUEST_TIME_OUT: a lost acknowledgement.
	StoreThenFail func(*appendv1.AppendRequest) bool
	// Duplicates counts batches answered as duplicates of stored ones;
	// WriterCalls counts requests carrying a writer id.
	Duplicates  atomic.Int64
	WriterCalls atomic.Int64
	writers     map[fakeWriterKey]*fakeWriter
	writerIDs   atomic.Int64
	// batches are the headers of the stored batches per (table, bucket),
	// for ListWriterBatches; ListPage bounds the batches one call reads
	// (0: all), so that callers page.
	batches  map[[2]int64][]fakeBatch
	ListPage int
	// ListCalls counts ListWriterBatches calls; ListFail, when it returns
	// an error, fails the call with it (a gRPC status).
	ListCalls atomic.Int64
	ListFail  func(*appendv1.ListWriterBatchesRequest) error
	// LatestFail, when it returns an error, fails GetLatestOffset with it.
	LatestFail func(*appendv1.GetLatestOffsetRequest) error
}

// Writer state as a Fluss tablet server keeps it: per (table, bucket,
// writer) the last five batch sequences and where they were stored.
type fakeWriterKey struct {
	table  int64
	bucket int32
	writer int64
}

type fakeWriter struct {
	last   int32
	recent []fakeStored
}

type fakeBatch struct {
	writer int64
	seq    int32
	base   int64
	count  int32
}

type fakeStored struct {
	seq  int32
	base int64
}

// InitWriter hands out writer ids from 1000 on, as Fluss's coordinator
// hands out cluster-unique ones.
func (f *Appender) InitWriter(context.Context, *appendv1.InitWriterRequest) (*appendv1.InitWriterResponse, error) {
	return &appendv1.InitWriterResponse{WriterId: 1000 + f.writerIDs.Add(1)}, nil
}

// checkWriter applies Fluss's writer rules under f.Mu: a batch among the
// writer's last five is a duplicate (its stored base offset is returned),
// otherwise its sequence must follow the last one.
func (f *Appender) checkWriterLocked(req *appendv1.AppendRequest) (dupBase int64, resp *appendv1.AppendResponse) {
	if req.WriterId < 0 {
		return -1, nil
	}
	f.WriterCalls.Add(1)
	if f.writers == nil {
		f.writers = map[fakeWriterKey]*fakeWriter{}
	}
	k := fakeWriterKey{req.TableId, req.BucketId, req.WriterId}
	w := f.writers[k]
	if w == nil {
		w = &fakeWriter{last: -1}
		f.writers[k] = w
	}
	for _, r := range w.recent {
		if r.seq == req.BatchSequence {
			return r.base, nil
		}
	}
	if req.BatchSequence != w.last+1 {
		// Fluss refuses a gap before appending: certainly not stored.
		return -1, &appendv1.AppendResponse{JobId: req.JobId, BaseOffset: -1, KafkaErrorCode: int32(kerr.OutOfOrderSequenceNumber.Code),
			ErrorMessage: fmt.Sprintf("OUT_OF_ORDER_SEQUENCE_EXCEPTION: out of order batch sequence for writer %d: %d (incoming), %d (current)", req.WriterId, req.BatchSequence, w.last)}
	}
	return -1, nil
}

func (f *Appender) recordWriterLocked(req *appendv1.AppendRequest, base int64) {
	if req.WriterId < 0 {
		return
	}
	w := f.writers[fakeWriterKey{req.TableId, req.BucketId, req.WriterId}]
	w.last = req.BatchSequence
	if len(w.recent) == 5 {
		w.recent = w.recent[1:]
	}
	w.recent = append(w.recent, fakeStored{seq: req.BatchSequence, base: base})
}

func (f *Appender) Append(stream grpc.BidiStreamingServer[appendv1.AppendRequest, appendv1.AppendResponse]) error {
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		f.Calls.Add(1)
		if f.Hold.Load() {
			continue
		}
		f.Mu.Lock()
		fail := f.Fail
		f.Mu.Unlock()
		if fail != nil {
			if resp := fail(req); resp != nil {
				resp.JobId = req.JobId
				if err := stream.Send(resp); err != nil {
					return err
				}
				continue
			}
		}
		if f.Discard.Load() {
			f.Mu.Lock()
			k := [2]int64{req.TableId, int64(req.BucketId)}
			base := f.next[k]
			f.next[k] = base + int64(req.RecordCount)
			f.Mu.Unlock()
			if err := stream.Send(&appendv1.AppendResponse{JobId: req.JobId, BaseOffset: base}); err != nil {
				return err
			}
			continue
		}
		var vals []string
		b := req.ArrowIpc
		if len(req.LogRecords) > 0 {
			b = req.LogRecords
		}
		for len(b) > 0 {
			l, used := binary.Uvarint(b)
			vals = append(vals, string(b[used:used+int(l)]))
			b = b[used+int(l):]
		}
		f.Mu.Lock()
		dup, refused := f.checkWriterLocked(req)
		if refused != nil {
			f.Mu.Unlock()
			if err := stream.Send(refused); err != nil {
				return err
			}
			continue
		}
		k := [2]int64{req.TableId, int64(req.BucketId)}
		base := dup
		if dup >= 0 {
			f.Duplicates.Add(1)
		} else {
			base = int64(len(f.logs[k]))
			f.logs[k] = append(f.logs[k], vals...)
			f.recordWriterLocked(req, base)
			if f.batches == nil {
				f.batches = map[[2]int64][]fakeBatch{}
			}
			f.batches[k] = append(f.batches[k], fakeBatch{writer: req.WriterId, seq: req.BatchSequence, base: base, count: int32(len(vals))})
		}
		lose := f.StoreThenFail
		f.Mu.Unlock()
		resp := &appendv1.AppendResponse{JobId: req.JobId, BaseOffset: base}
		if lose != nil && lose(req) {
			resp = &appendv1.AppendResponse{JobId: req.JobId, BaseOffset: -1, KafkaErrorCode: int32(kerr.RequestTimedOut.Code),
				Retriable: true, PossiblyStored: true, ErrorMessage: "fake REQUEST_TIME_OUT: stored, but the acknowledgement was lost"}
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

// GetLatestOffset answers the length of the bucket's log. Unknown tables
// (any id but those in NewAppender's caller's catalog) are not modelled:
// every bucket exists.
func (f *Appender) GetLatestOffset(_ context.Context, r *appendv1.GetLatestOffsetRequest) (*appendv1.GetLatestOffsetResponse, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.LatestFail != nil {
		if err := f.LatestFail(r); err != nil {
			return nil, err
		}
	}
	b := r.GetBucket()
	return &appendv1.GetLatestOffsetResponse{Offset: int64(len(f.logs[[2]int64{b.GetTableId(), int64(b.GetBucketId())}]))}, nil
}

// ListWriterBatches answers the stored batches of the writer starting at or
// after from_offset, reading at most ListPage batches (of any writer).
func (f *Appender) ListWriterBatches(_ context.Context, r *appendv1.ListWriterBatchesRequest) (*appendv1.ListWriterBatchesResponse, error) {
	f.ListCalls.Add(1)
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.ListFail != nil {
		if err := f.ListFail(r); err != nil {
			return nil, err
		}
	}
	b := r.GetBucket()
	k := [2]int64{b.GetTableId(), int64(b.GetBucketId())}
	hw := int64(len(f.logs[k]))
	resp := &appendv1.ListWriterBatchesResponse{NextOffset: max(r.GetFromOffset(), 0), HighWatermark: hw}
	read := 0
	for _, fb := range f.batches[k] {
		if fb.base < r.GetFromOffset() {
			continue
		}
		if f.ListPage > 0 && read == f.ListPage {
			break
		}
		read++
		if fb.writer == r.GetWriterId() {
			resp.Batches = append(resp.Batches, &appendv1.WriterBatch{BaseOffset: fb.base, BatchSequence: fb.seq, RecordCount: fb.count})
		}
		resp.NextOffset = fb.base + int64(fb.count)
	}
	if f.ListPage == 0 || read < f.ListPage {
		resp.NextOffset = max(resp.NextOffset, hw)
	}
	return resp, nil
}

// Seed stores a batch as if a writer (-1: none) had appended it with seq,
// and returns its base offset.
func (f *Appender) Seed(table int64, bucket int32, writer int64, seq int32, values ...string) int64 {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	k := [2]int64{table, int64(bucket)}
	base := int64(len(f.logs[k]))
	f.logs[k] = append(f.logs[k], values...)
	if f.batches == nil {
		f.batches = map[[2]int64][]fakeBatch{}
	}
	f.batches[k] = append(f.batches[k], fakeBatch{writer: writer, seq: seq, base: base, count: int32(len(values))})
	if writer >= 0 {
		req := &appendv1.AppendRequest{TableId: table, BucketId: bucket, WriterId: writer, BatchSequence: seq}
		f.checkWriterLocked(req)
		f.recordWriterLocked(req, base)
	}
	return base
}

// Log returns the values appended to (table, bucket), in order.
func (f *Appender) Log(table int64, bucket int32) []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return append([]string(nil), f.logs[[2]int64{table, int64(bucket)}]...)
}
