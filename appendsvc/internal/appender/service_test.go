package appender

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	tracev1 "github.com/ferrygw/ferry/services/api/gen/ferry/trace/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// fakeFluss answers ProduceLog with handle and records every call.
type fakeFluss struct {
	mu     sync.Mutex
	calls  []fakeCall
	handle func(n int, c fakeCall) ([]fluss.BucketResult, error)
	// partitions the table has (PartitionIDs creates missing ones unless
	// refuse names them).
	partitions map[string]int64
	refuse     map[string]error
}

type fakeCall struct {
	kv      bool // PutKv rather than ProduceLog
	table   Table
	acks    fluss.Acks
	timeout time.Duration
	batches []fluss.BucketBatch
	span    trace.SpanContext
}

// recordsOf is the bytes b sends: its Records, or its Parts joined.
func recordsOf(b fluss.BucketBatch) []byte {
	if b.Parts == nil {
		return b.Records
	}
	return bytes.Join(b.Parts, nil)
}

func (f *fakeFluss) ProduceLog(ctx context.Context, table Table, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.BucketResult, error) {
	c := fakeCall{table: table, acks: acks, timeout: timeout, batches: batches, span: trace.SpanContextFromContext(ctx)}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	n := len(f.calls)
	f.mu.Unlock()
	return f.handle(n, c)
}

// PutKv answers like ProduceLog, the base offset standing for the log end
// offset.
func (f *fakeFluss) PutKv(ctx context.Context, table Table, acks fluss.Acks, timeout time.Duration, batches []fluss.BucketBatch) ([]fluss.PutKvResult, error) {
	c := fakeCall{kv: true, table: table, acks: acks, timeout: timeout, batches: batches, span: trace.SpanContextFromContext(ctx)}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	n := len(f.calls)
	f.mu.Unlock()
	res, err := f.handle(n, c)
	out := make([]fluss.PutKvResult, len(res))
	for i, r := range res {
		out[i] = fluss.PutKvResult{PartitionID: r.PartitionID, Bucket: r.Bucket, LogEndOffset: r.BaseOffset, Err: r.Err}
	}
	return out, err
}

func (f *fakeFluss) PartitionIDs(_ context.Context, table Table, names []string) (map[string]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.partitions == nil {
		f.partitions = map[string]int64{}
	}
	ids := map[string]int64{}
	for _, n := range names {
		if err := f.refuse[n]; err != nil {
			return nil, err
		}
		id, ok := f.partitions[n]
		if !ok {
			id = int64(100 + len(f.partitions))
			f.partitions[n] = id
		}
		ids[n] = id
	}
	return ids, nil
}

// testTable is the one table fakeFluss has.
var testTable = Table{ID: 11, Path: fluss.TablePath{Database: "db", Table: "t"}}

func (f *fakeFluss) TableSchema(_ context.Context, table Table, schemaID int32) ([]types.Field, error) {
	if table != testTable || schemaID != 1 {
		return nil, &fluss.Error{Code: fluss.CodeSchemaNotExist, Message: "no such schema"}
	}
	return testCols, nil
}

func (f *fakeFluss) snapshot() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

// okAt answers success with per-bucket offsets counting records, like a
// real log.
func okAt(f *fakeFluss) func(int, fakeCall) ([]fluss.BucketResult, error) {
	next := map[int32]int64{}
	return func(_ int, c fakeCall) ([]fluss.BucketResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []fluss.BucketResult
		for _, b := range c.batches {
			out = append(out, fluss.BucketResult{Bucket: b.Bucket, BaseOffset: next[b.Bucket]})
			it := logbatch.NewIterator(recordsOf(b))
			for it.Next() {
				next[b.Bucket] += int64(it.Batch().RecordCount)
			}
		}
		return out, nil
	}
}

var testCols = []types.Field{
	{Name: "id", Type: types.DataType{Root: types.BigInt}},
	{Name: "name", Type: types.DataType{Root: types.String, Nullable: true}},
}

func ipcOf(t testing.TB, rows int, seed uint64) ([]byte, arrow.RecordBatch) {
	t.Helper()
	rec, err := goldentest.Record(memory.NewGoAllocator(), testCols, rows, seed, 20)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w := ipc.NewWriter(&b, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), rec
}

type harness struct {
	fake    *fakeFluss
	metrics *sdkmetric.ManualReader
	client  appendv1.AppendServiceClient
	spans   *tracetest.SpanRecorder
	tp      *sdktrace.TracerProvider
}

func newHarness(t testing.TB, cfg Config, handle func(*fakeFluss) func(int, fakeCall) ([]fluss.BucketResult, error)) *harness {
	t.Helper()
	f := &fakeFluss{}
	f.handle = handle(f)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	svc, err := New(cfg, f, slog.New(slog.NewTextHandler(io.Discard, nil)), tp, mp, propagation.TraceContext{})
	if err != nil {
		t.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	appendv1.RegisterAppendServiceServer(srv, svc)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		_ = tp.Shutdown(context.Background())
	})
	return &harness{fake: f, metrics: reader, client: appendv1.NewAppendServiceClient(conn), spans: rec, tp: tp}
}

func baseReq(job uint64, bucket int32, ipcBytes []byte, rows int) *appendv1.AppendRequest {
	return &appendv1.AppendRequest{
		JobId: job, TableId: testTable.ID, Database: testTable.Path.Database, Table: testTable.Path.Table, BucketId: bucket, SchemaId: 1,
		ArrowCompression: catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME,
		ArrowIpc:         ipcBytes, RecordCount: int32(rows), Acks: -1, TimeoutMs: 5000,
		WriterId: -1, BatchSequence: -1,
	}
}

// run sends reqs, half-closes, and returns the answers by job id.
func (h *harness) run(t *testing.T, reqs ...*appendv1.AppendRequest) map[uint64]*appendv1.AppendResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := h.client.Append(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := stream.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	out := map[uint64]*appendv1.AppendResponse{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := out[resp.GetJobId()]; dup {
			t.Fatalf("job %d answered twice", resp.GetJobId())
		}
		out[resp.GetJobId()] = resp
	}
	if len(out) != len(reqs) {
		t.Fatalf("%d answers for %d jobs", len(out), len(reqs))
	}
	return out
}

func TestAppendKeepsBucketOrderAndDecodes(t *testing.T) {
	h := newHarness(t, Config{MaxCoalesceBytes: 1}, okAt)
	var reqs []*appendv1.AppendRequest
	recs := map[uint64]arrow.RecordBatch{}
	sections := map[uint64][]byte{}
	for i := range 12 {
		rows := 1 + i%5
		b, rec := ipcOf(t, rows, uint64(i))
		job := uint64(100 + i)
		recs[job] = rec
		r := baseReq(job, int32(i%3), b, rows)
		if i%2 == 1 {
			// Half the jobs come as records sections, as transcodesvc sends them.
			r.ArrowIpc, r.LogRecords = nil, logRecordsOf(t, rec, logbatch.CompressionLZ4Frame)
			sections[job] = r.LogRecords
		}
		reqs = append(reqs, r)
	}
	answers := h.run(t, reqs...)
	// Offsets per bucket follow the send order.
	next := map[int32]int64{}
	for _, r := range reqs {
		a := answers[r.GetJobId()]
		if a.GetErrorCode() != 0 {
			t.Fatalf("job %d: %v", r.GetJobId(), a)
		}
		if a.GetBaseOffset() != next[r.GetBucketId()] {
			t.Fatalf("job %d bucket %d: base offset %d, want %d", r.GetJobId(), r.GetBucketId(), a.GetBaseOffset(), next[r.GetBucketId()])
		}
		next[r.GetBucketId()] += int64(r.GetRecordCount())
	}
	// What reached Fluss is one LZ4 batch per job holding the job's rows.
	schema, _ := types.ArrowSchema(testCols)
	dec, err := logbatch.NewDecoder(schema, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	perBucket := map[int32][]int{}
	for _, c := range h.fake.snapshot() {
		if c.table != testTable || c.acks != fluss.AcksAll || c.timeout <= 0 || c.timeout > 5*time.Second || len(c.batches) != 1 {
			t.Fatalf("call %+v", c)
		}
		it := logbatch.NewIterator(recordsOf(c.batches[0]))
		for it.Next() {
			b := it.Batch()
			got, err := dec.Decode(b)
			if err != nil {
				m, perr := logbatch.ParseMessage(b.Arrow)
				t.Fatalf("%v: header %+v nodes %v buffers %v %v\n%x", err, b.Header, m.Nodes, m.Buffers, perr, b.Bytes)
			}
			// Find the job by content: rows were generated with distinct seeds.
			found := false
			for job, want := range recs {
				if array.RecordEqual(got, want) {
					perBucket[c.batches[0].Bucket] = append(perBucket[c.batches[0].Bucket], int(job))
					found = true
					// A records section goes on as it came, behind its header.
					if section := sections[job]; section != nil {
						if parts := c.batches[0].Parts; len(parts) != 2 || len(parts[0]) != b.HeaderSize || !bytes.Equal(parts[1], section) {
							t.Fatalf("job %d: the records section is not sent as it came after a header, but in %d parts", job, len(parts))
						}
					}
				}
			}
			got.Release()
			if !found {
				t.Fatal("a batch matches no job's rows")
			}
			m, _ := logbatch.ParseMessage(b.Arrow)
			if m.Compression != logbatch.CompressionLZ4Frame || b.SchemaID != 1 || b.WriterID != -1 || b.Magic != logbatch.MagicV0 {
				t.Fatalf("batch header %+v compression %v", b.Header, m.Compression)
			}
			seen++
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	if seen != len(reqs) {
		t.Fatalf("%d batches reached Fluss for %d jobs", seen, len(reqs))
	}
	for bucket, jobs := range perBucket {
		for i := 1; i < len(jobs); i++ {
			if jobs[i] < jobs[i-1] {
				t.Fatalf("bucket %d written out of order: %v", bucket, jobs)
			}
		}
	}
}

func TestAppendRetriesAndFails(t *testing.T) {
	notLeader := &fluss.Error{Code: fluss.CodeNotLeaderOrFollower, Message: "moved"}
	tooLarge := &fluss.Error{Code: fluss.CodeRecordTooLarge, Message: "big"}
	gap := &fluss.Error{Code: fluss.CodeOutOfOrderSequence, Message: "gap"}
	notLeaderThenGap := func(n int, c fakeCall) ([]fluss.BucketResult, error) {
		if n == 1 {
			return []fluss.BucketResult{{Bucket: c.batches[0].Bucket, BaseOffset: -1, Err: notLeader}}, nil
		}
		return []fluss.BucketResult{{Bucket: c.batches[0].Bucket, BaseOffset: -1, Err: gap}}, nil
	}
	for _, tc := range []struct {
		name      string
		timeoutMs int32
		writerID  int64 // 0: not idempotent
		handle    func(n int, c fakeCall) ([]fluss.BucketResult, error)
		wantCode  fluss.ErrorCode
		retriable bool
		calls     int // exact number of ProduceLog calls; 0: at least 2
		kafka     *kerr.Error
		stored    bool // possibly stored
	}{
		{"not leader then ok", 5000, 0, func(n int, c fakeCall) ([]fluss.BucketResult, error) {
			if n < 3 {
				return []fluss.BucketResult{{Bucket: c.batches[0].Bucket, BaseOffset: -1, Err: notLeader}}, nil
			}
			return []fluss.BucketResult{{Bucket: c.batches[0].Bucket, BaseOffset: 40}}, nil
		}, fluss.CodeNone, false, 3, nil, false},
		{"broken connection then ok", 5000, 0, func(n int, c fakeCall) ([]fluss.BucketResult, error) {
			if n == 1 {
				return []fluss.BucketResult{{Bucket: c.batches[0].Bucket, BaseOffset: -1, Err: fluss.ErrConnectionBroken}}, nil
			}
			return []fluss.BucketResult{{Bucket: c.batches[0].Bucket, BaseOffset: 40}}, nil
		}, fluss.CodeNone, false, 2, nil, false},
		{"not retriable", 5000, 0, func(n int, c fakeCall) ([]fluss.BucketResult, error) {
			return []fluss.BucketResult{{Bucket: c.batches[0].Bucket, BaseOffset: -1, Err: tooLarge}}, nil
		}, fluss.CodeRecordTooLarge, false, 1, kerr.MessageTooLarge, false},
		{"call error not retriable", 5000, 0, func(n int, c fakeCall) ([]fluss.BucketResult, error) {
			return nil, errors.New("fluss: produce: bad arguments")
		}, fluss.CodeUnknownServerError, false, 1, kerr.UnknownServerError, true},
		{"retriable until timeout", 300, 0, func(n int, c fakeCall) ([]fluss.BucketResult, error) {
			return []fluss.BucketResult{{Bucket: c.batches[0].Bucket, BaseOffset: -1, Err: notLeader}}, nil
		}, fluss.CodeRequestTimeOut, true, 0, kerr.RequestTimedOut, true},
		// The refusal answers the last attempt only: the first one's answer
		// may have been lost after Fluss stored the batch.
		{"not leader then refused", 5000, 0, notLeaderThenGap, fluss.CodeOutOfOrderSequence, false, 2, kerr.OutOfOrderSequenceNumber, true},
		// An idempotent batch resent with its sequence would have been
		// answered as a duplicate had the first attempt stored it.
		{"idempotent: not leader then refused", 5000, 9, notLeaderThenGap, fluss.CodeOutOfOrderSequence, false, 2, kerr.OutOfOrderSequenceNumber, false},
		{"idempotent: call error", 5000, 9, func(n int, c fakeCall) ([]fluss.BucketResult, error) {
			return nil, errors.New("fluss: produce: bad arguments")
		}, fluss.CodeUnknownServerError, false, 1, kerr.RequestTimedOut, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{RetryBackoffMin: 5 * time.Millisecond, RetryBackoffMax: 20 * time.Millisecond},
				func(*fakeFluss) func(int, fakeCall) ([]fluss.BucketResult, error) { return tc.handle })
			b, _ := ipcOf(t, 3, 1)
			req := baseReq(1, 2, b, 3)
			req.TimeoutMs = tc.timeoutMs
			if tc.writerID != 0 {
				req.WriterId, req.BatchSequence = tc.writerID, 0
			}
			a := h.run(t, req)[1]
			if fluss.ErrorCode(a.GetErrorCode()) != tc.wantCode || a.GetRetriable() != tc.retriable {
				t.Fatalf("answer %v, want code %s retriable %v", a, tc.wantCode, tc.retriable)
			}
			wantKafka := int32(0)
			if tc.kafka != nil {
				wantKafka = int32(tc.kafka.Code)
			}
			if a.GetKafkaErrorCode() != wantKafka || a.GetPossiblyStored() != tc.stored {
				t.Fatalf("answer %v, want kafka %v possibly stored %v", a, tc.kafka, tc.stored)
			}
			if tc.wantCode == fluss.CodeNone && a.GetBaseOffset() != 40 {
				t.Fatalf("base offset %d", a.GetBaseOffset())
			}
			if tc.wantCode != fluss.CodeNone && a.GetBaseOffset() != -1 {
				t.Fatalf("failed job reports base offset %d", a.GetBaseOffset())
			}
			calls := len(h.fake.snapshot())
			if (tc.calls != 0 && calls != tc.calls) || (tc.calls == 0 && calls < 2) {
				t.Fatalf("%d ProduceLog calls, want %d", calls, tc.calls)
			}
		})
	}
}

func TestAppendRejectsBadRequests(t *testing.T) {
	h := newHarness(t, Config{}, okAt)
	good, _ := ipcOf(t, 2, 1)
	mk := func(job uint64, edit func(*appendv1.AppendRequest)) *appendv1.AppendRequest {
		r := baseReq(job, 0, good, 2)
		edit(r)
		return r
	}
	cases := map[uint64]fluss.ErrorCode{}
	var reqs []*appendv1.AppendRequest
	add := func(code fluss.ErrorCode, edit func(*appendv1.AppendRequest)) {
		job := uint64(len(reqs) + 1)
		reqs = append(reqs, mk(job, edit))
		cases[job] = code
	}
	add(fluss.CodeInvalidRequiredAcks, func(r *appendv1.AppendRequest) { r.Acks = 2 })
	// Without the table path (a frontdoor older than appendsvc) nothing can
	// be looked up: refused for good, naming the missing fields.
	noPath := map[uint64]string{}
	for _, c := range []struct {
		db, table, msg string
	}{
		{"", "", "AppendRequest.database and table are empty"},
		{"", "t", "AppendRequest.database is empty"},
		{"db", "", "AppendRequest.table is empty"},
	} {
		add(fluss.CodeInvalidConfig, func(r *appendv1.AppendRequest) { r.Database, r.Table = c.db, c.table })
		noPath[uint64(len(reqs))] = c.msg
	}
	add(fluss.CodeCorruptRecord, func(r *appendv1.AppendRequest) { r.ArrowIpc = []byte("not arrow") })
	add(fluss.CodeCorruptRecord, func(r *appendv1.AppendRequest) { r.RecordCount = 5 })
	add(fluss.CodeSchemaNotExist, func(r *appendv1.AppendRequest) { r.SchemaId = 1 << 20 })
	add(fluss.CodeInvalidConfig, func(r *appendv1.AppendRequest) {
		r.ArrowCompression = catalogv1.ArrowCompression_ARROW_COMPRESSION_ZSTD
		r.ArrowCompressionLevel = 40
	})
	other, _ := ipcOfCols(t, goldentest.AllTypesColumns()[:2], 2, 1)
	add(fluss.CodeCorruptRecord, func(r *appendv1.AppendRequest) { r.ArrowIpc = other }) // not the table's columns
	nulls := ipcWithNullID(t)
	add(fluss.CodeCorruptRecord, func(r *appendv1.AppendRequest) { r.ArrowIpc = nulls; r.RecordCount = 2 }) // null in NOT NULL id
	// Records sections are checked as closely as Arrow IPC, without
	// decompressing them.
	_, goodRec := ipcOf(t, 2, 1)
	records := logRecordsOf(t, goodRec, logbatch.CompressionLZ4Frame)
	asRecords := func(r *appendv1.AppendRequest, b []byte) { r.ArrowIpc, r.LogRecords = nil, b }
	add(fluss.CodeInvalidConfig, func(r *appendv1.AppendRequest) { r.LogRecords = records }) // both
	add(fluss.CodeCorruptRecord, func(r *appendv1.AppendRequest) { asRecords(r, records); r.RecordCount = 3 })
	add(fluss.CodeCorruptRecord, func(r *appendv1.AppendRequest) { asRecords(r, records); r.RecordCount = 0 })
	add(fluss.CodeCorruptRecord, func(r *appendv1.AppendRequest) { asRecords(r, []byte("not a records section")) })
	add(fluss.CodeCorruptRecord, func(r *appendv1.AppendRequest) {
		asRecords(r, logRecordsOf(t, goodRec, logbatch.CompressionNone)) // the table says LZ4
	})
	_, otherRec := ipcOfCols(t, goldentest.AllTypesColumns()[:3], 2, 1)
	add(fluss.CodeCorruptRecord, func(r *appendv1.AppendRequest) { asRecords(r, logRecordsOf(t, otherRec, logbatch.CompressionLZ4Frame)) })
	nullRec := recordWithNullID(t)
	add(fluss.CodeCorruptRecord, func(r *appendv1.AppendRequest) { asRecords(r, logRecordsOf(t, nullRec, logbatch.CompressionLZ4Frame)) })
	add(fluss.CodeSchemaNotExist, func(r *appendv1.AppendRequest) { r.SchemaId = 2 })
	fromFluss := uint64(len(reqs))
	add(fluss.CodeNone, func(r *appendv1.AppendRequest) {}) // a good job among them still goes through
	answers := h.run(t, reqs...)
	for job, want := range cases {
		a := answers[job]
		// Checks decided here are final; a schema Fluss does not know may
		// still appear, which Fluss classifies as retriable.
		retriable := job == fromFluss
		if fluss.ErrorCode(a.GetErrorCode()) != want || a.GetRetriable() != retriable {
			t.Errorf("job %d: %v, want code %s, retriable %v", job, a, want, retriable)
		}
		if want != fluss.CodeNone && a.GetErrorMessage() == "" {
			t.Errorf("job %d: no error message", job)
		}
		// Refused before sending: certainly not stored, with a Kafka code.
		if a.GetPossiblyStored() || (want != fluss.CodeNone) != (a.GetKafkaErrorCode() != 0) {
			t.Errorf("job %d: %v, want not possibly stored and a Kafka code exactly when failed", job, a)
		}
	}
	for job, msg := range noPath {
		if !strings.Contains(answers[job].GetErrorMessage(), msg) {
			t.Errorf("job %d: message %q does not contain %q", job, answers[job].GetErrorMessage(), msg)
		}
	}
	if n := len(h.fake.snapshot()); n != 1 {
		t.Fatalf("%d ProduceLog calls, want only the good job's", n)
	}
	// Every answer is counted under its code.
	var rm metricdata.ResourceMetrics
	if err := h.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	byCode := map[int64]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "ferry.append.jobs" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				code, _ := dp.Attributes.Value("fluss.error_code")
				byCode[code.AsInt64()] += dp.Value
			}
		}
	}
	wantByCode := map[int64]int64{}
	for _, code := range cases {
		wantByCode[int64(code)]++
	}
	if !reflect.DeepEqual(byCode, wantByCode) {
		t.Fatalf("ferry.append.jobs by code %v, want %v", byCode, wantByCode)
	}
}

// TestAppendCoalescesQueuedJobs holds the first request until more jobs for
// the bucket queue up; they must then travel together, in order, with base
// offsets derived from record counts.
func TestAppendCoalescesQueuedJobs(t *testing.T) {
	release := make(chan struct{})
	first := make(chan struct{})
	h := newHarness(t, Config{}, func(f *fakeFluss) func(int, fakeCall) ([]fluss.BucketResult, error) {
		ok := okAt(f)
		return func(n int, c fakeCall) ([]fluss.BucketResult, error) {
			if n == 1 {
				close(first)
				<-release
			}
			return ok(n, c)
		}
	})
	var reqs []*appendv1.AppendRequest
	for i := range 5 {
		b, _ := ipcOf(t, i+1, uint64(i))
		reqs = append(reqs, baseReq(uint64(i+1), 0, b, i+1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := h.client.Append(ctx)
	if err != nil {
		t.Fatal(err)
	}
	send := func(r *appendv1.AppendRequest) {
		if err := stream.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	send(reqs[0])
	<-first // job 1 is in flight; the others queue behind it
	for _, r := range reqs[1:] {
		send(r)
	}
	// Let them reach the queue before the first call returns.
	time.Sleep(200 * time.Millisecond)
	close(release)
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	answers := map[uint64]*appendv1.AppendResponse{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		answers[resp.GetJobId()] = resp
	}
	want := int64(0)
	for _, r := range reqs {
		if a := answers[r.GetJobId()]; a.GetErrorCode() != 0 || a.GetBaseOffset() != want {
			t.Fatalf("job %d: %v, want base offset %d", r.GetJobId(), a, want)
		}
		want += int64(r.GetRecordCount())
	}
	calls := h.fake.snapshot()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2 (first alone, the rest coalesced)", len(calls))
	}
	n := 0
	it := logbatch.NewIterator(recordsOf(calls[1].batches[0]))
	for it.Next() {
		n++
		if got := it.Batch().RecordCount; got != int32(n+1) {
			t.Fatalf("coalesced batch %d has %d records, want %d", n, got, n+1)
		}
	}
	if n != 4 || it.Err() != nil {
		t.Fatalf("%d batches in the coalesced call (err %v)", n, it.Err())
	}
	// Two requests, carrying 1 and 4 jobs.
	var rm metricdata.ResourceMetrics
	if err := h.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var hist *metricdata.HistogramDataPoint[int64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "ferry.append.request_jobs" {
				hist = &m.Data.(metricdata.Histogram[int64]).DataPoints[0]
			}
		}
	}
	if hist == nil || hist.Count != 2 || hist.Sum != 5 {
		t.Fatalf("ferry.append.request_jobs %+v, want 2 requests with 5 jobs", hist)
	}
}

func TestAppendTracesPerMessage(t *testing.T) {
	h := newHarness(t, Config{}, okAt)
	// The sender's span context travels inside the message.
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), parent), carrier)
	b, _ := ipcOf(t, 2, 1)
	req := baseReq(9, 0, b, 2)
	req.Trace = &tracev1.TraceContext{Carrier: carrier}
	h.run(t, req)
	if err := h.tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var appendSpan, produceSpan sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		switch s.Name() {
		case "append":
			appendSpan = s
		case "fluss.ProduceLog":
			produceSpan = s
		}
	}
	if appendSpan == nil || produceSpan == nil {
		t.Fatalf("spans %v", h.spans.Ended())
	}
	if appendSpan.Parent().SpanID() != parent.SpanID() || appendSpan.SpanContext().TraceID() != parent.TraceID() {
		t.Fatalf("append span parent %v, want %v", appendSpan.Parent(), parent)
	}
	if produceSpan.Parent().SpanID() != appendSpan.SpanContext().SpanID() {
		t.Fatal("fluss.ProduceLog is not a child of append")
	}
	if got := h.fake.snapshot()[0].span; got.SpanID() != produceSpan.SpanContext().SpanID() {
		t.Fatal("the Fluss client did not get the produce span's context")
	}
}

// logRecordsOf is rec as the records section of a log batch.
func logRecordsOf(t testing.TB, rec arrow.RecordBatch, c logbatch.Compression) []byte {
	t.Helper()
	b, err := logbatch.NewBuilder().AppendRecords(nil, rec, logbatch.Options{Compression: c})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ipcWithNullID is testCols with a null in the NOT NULL id column, as
// Arrow IPC.
func ipcWithNullID(t *testing.T) []byte {
	t.Helper()
	rec := recordWithNullID(t)
	defer rec.Release()
	// The Arrow field says nullable so the types match; only the data is wrong.
	var b bytes.Buffer
	w := ipc.NewWriter(&b, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// recordWithNullID has a null in the table's NOT NULL id column.
func recordWithNullID(t *testing.T) arrow.RecordBatch {
	t.Helper()
	cols := []types.Field{{Name: "id", Type: types.DataType{Root: types.BigInt, Nullable: true}}, testCols[1]}
	schema, err := types.ArrowSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	rb.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 0}, []bool{true, false})
	rb.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
	return rb.NewRecordBatch()
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{DefaultTimeout: -1}, "DefaultTimeout"},
		{Config{DefaultTimeout: time.Minute, MaxTimeout: time.Second}, "MaxTimeout"},
		{Config{MaxPending: -1}, "MaxPending"},
		{Config{MaxCoalesceBytes: -5}, "MaxCoalesceBytes"},
		{Config{RetryBackoffMin: -1}, "RetryBackoffMin"},
		{Config{RetryBackoffMin: time.Second, RetryBackoffMax: time.Millisecond}, "RetryBackoffMax"},
		{Config{Magic: 3}, "Magic"},
	} {
		err := tc.cfg.WithDefaults().Validate()
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.field)) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.field)
		}
	}
	if err := (Config{}).WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAppendBucket streams jobs of one bucket through the service,
// keeping window jobs unanswered as frontdoor does, against a Fluss that
// answers after a fixed round trip: what one bucket sustains when building
// batches competes with waiting for Fluss. The jobs come as Arrow IPC
// (appendsvc decodes, checks and encodes the rows) and as records sections
// (appendsvc checks the layout and adds the header).
func BenchmarkAppendBucket(b *testing.B) {
	for _, bc := range []struct {
		name string
		rows int
		ipc  bool
	}{
		{"ipc", 300, true},
		{"log_records", 300, false},
		// A section the size make bench's 64 KiB Kafka batches become.
		{"log_records_2000_rows", 2000, false},
	} {
		ipcBytes, rec := ipcOf(b, bc.rows, 1)
		defer rec.Release()
		fill := func(r *appendv1.AppendRequest) { r.ArrowIpc = ipcBytes }
		size := len(ipcBytes)
		if !bc.ipc {
			records := logRecordsOf(b, rec, logbatch.CompressionLZ4Frame)
			fill = func(r *appendv1.AppendRequest) { r.LogRecords = records }
			size = len(records)
		}
		b.Run(bc.name, func(b *testing.B) { benchmarkAppendBucket(b, bc.rows, size, fill) })
	}
}

func benchmarkAppendBucket(b *testing.B, rows, size int, fill func(*appendv1.AppendRequest)) {
	const window = 8
	const rtt = 500 * time.Microsecond
	h := newHarness(b, Config{}, func(f *fakeFluss) func(int, fakeCall) ([]fluss.BucketResult, error) {
		return func(_ int, c fakeCall) ([]fluss.BucketResult, error) {
			time.Sleep(rtt)
			return []fluss.BucketResult{{Bucket: c.batches[0].Bucket}}, nil
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := h.client.Append(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(size))
	// The fake round trip makes wall time per job mostly sleep; the
	// process's CPU time per job is what the encoding changes.
	cpuStart := processCPU(b)
	sent, answered := 0, 0
	for b.Loop() {
		for sent-answered >= window {
			if _, err := stream.Recv(); err != nil {
				b.Fatal(err)
			}
			answered++
		}
		sent++
		req := baseReq(uint64(sent), 0, nil, rows)
		fill(req)
		if err := stream.Send(req); err != nil {
			b.Fatal(err)
		}
	}
	for ; answered < sent; answered++ {
		if _, err := stream.Recv(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sent*rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(processCPU(b)-cpuStart)/float64(sent), "cpu-ns/op")
	// Jobs a Fluss call carries depend on how fast jobs are built against
	// the fake's round trip, and wall time per job on them.
	b.ReportMetric(float64(sent)/float64(len(h.fake.snapshot())), "jobs/call")
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
