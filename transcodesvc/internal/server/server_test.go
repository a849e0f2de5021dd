package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
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

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	tracev1 "github.com/ferrygw/ferry/services/api/gen/ferry/trace/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/transcodesvc/internal/convert"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "kafkabatch", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func dt(root catalogv1.TypeRoot, nullable bool) *catalogv1.DataType {
	return &catalogv1.DataType{Root: root, Nullable: nullable}
}

// benchMapping is the schema of the "bench" fixtures.
func benchMapping(id string) *catalogv1.TopicMapping {
	dec := dt(catalogv1.TypeRoot_TYPE_ROOT_DECIMAL, true)
	dec.Precision, dec.Scale = 10, 2
	ltz := dt(catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ, true)
	ltz.Precision = 3
	tags := dt(catalogv1.TypeRoot_TYPE_ROOT_ARRAY, true)
	tags.Element = dt(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)
	addr := dt(catalogv1.TypeRoot_TYPE_ROOT_ROW, true)
	addr.Fields = []*catalogv1.Field{{Name: "city", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)}, {Name: "zip", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_INTEGER, true)}}
	return &catalogv1.TopicMapping{
		Topic: "bench", MappingId: id,
		Columns: []*catalogv1.Field{
			{Name: "id", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_BIGINT, false)},
			{Name: "name", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)},
			{Name: "price", Type: dec},
			{Name: "ratio", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_DOUBLE, true)},
			{Name: "ok", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN, true)},
			{Name: "day", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_DATE, true)},
			{Name: "at", Type: ltz},
			{Name: "tags", Type: tags},
			{Name: "count", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_INTEGER, true)},
			{Name: "addr", Type: addr},
		},
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON},
	}
}

type harness struct {
	svc     *Service
	client  transcodev1.TranscodeServiceClient
	spans   *tracetest.SpanRecorder
	tp      *sdktrace.TracerProvider
	metrics *sdkmetric.ManualReader
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	svc, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), Telemetry{
		Tracer: tp, Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Propagator: propagation.TraceContext{},
	})
	if err != nil {
		t.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	transcodev1.RegisterTranscodeServiceServer(gs, svc)
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		gs.Stop()
		<-done
		_ = tp.Shutdown(context.Background())
	})
	return &harness{svc: svc, client: transcodev1.NewTranscodeServiceClient(conn), spans: spans, tp: tp, metrics: reader}
}

// exchange sends reqs on one stream, closes it and returns the answers by
// job id.
func (h *harness) exchange(t *testing.T, reqs ...*transcodev1.TranscodeRequest) map[uint64]*transcodev1.TranscodeResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := h.client.Transcode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sendErr := make(chan error, 1)
	go func() {
		for _, r := range reqs {
			if err := st.Send(r); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- st.CloseSend()
	}()
	out := map[uint64]*transcodev1.TranscodeResponse{}
	for {
		resp, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("recv: %v", err)
		}
		if _, dup := out[resp.GetJobId()]; dup {
			t.Fatalf("job %d answered twice", resp.GetJobId())
		}
		out[resp.GetJobId()] = resp
	}
	if err := <-sendErr; err != nil {
		t.Fatalf("send: %v", err)
	}
	return out
}

func TestTranscodeStream(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	m := benchMapping("bench-v1")
	good := fixture(t, "franz-go-bench-zstd.batch")
	badCRC := append([]byte(nil), fixture(t, "franz-go-bench-none.batch")...)
	badCRC[len(badCRC)-1] ^= 0xff
	codec7 := append([]byte(nil), fixture(t, "franz-go-mixed-none.batch")...)
	codec7[22] |= 7 // attributes low byte; the CRC check comes first, so refresh it
	binary.BigEndian.PutUint32(codec7[17:], crc32c(codec7[21:]))

	resps := h.exchange(t,
		&transcodev1.TranscodeRequest{JobId: 1, Mapping: m, MappingId: "bench-v1", Partition: 3, RecordBatch: good},
		&transcodev1.TranscodeRequest{JobId: 2, MappingId: "bench-v1", RecordBatch: fixture(t, "franz-go-bench-gzip.batch")},
		&transcodev1.TranscodeRequest{JobId: 3, MappingId: "never-sent", RecordBatch: good},
		&transcodev1.TranscodeRequest{JobId: 4, MappingId: "bench-v1", RecordBatch: badCRC},
		&transcodev1.TranscodeRequest{JobId: 5, MappingId: "bench-v1", RecordBatch: codec7},
		// The edge set is not JSON: a tombstone and three non-objects.
		&transcodev1.TranscodeRequest{JobId: 6, MappingId: "bench-v1", RecordBatch: fixture(t, "franz-go-edge-none.batch")},
	)
	if len(resps) != 6 {
		t.Fatalf("%d answers, want 6", len(resps))
	}
	for _, id := range []uint64{1, 2} {
		b := resps[id].GetBatch()
		if b == nil {
			t.Fatalf("job %d: %v", id, resps[id].GetFailure())
		}
		if b.GetRecordCount() != 1000 || b.GetProducerId() != 4242 || b.GetProducerEpoch() != 0 || b.GetBaseSequence() != 0 || b.GetMaxTimestamp() != 1767323045678 {
			t.Errorf("job %d: batch header %d %d %d %d %d", id, b.GetRecordCount(), b.GetProducerId(), b.GetProducerEpoch(), b.GetBaseSequence(), b.GetMaxTimestamp())
		}
		r, err := ipc.NewReader(bytes.NewReader(b.GetArrowIpc()))
		if err != nil {
			t.Fatal(err)
		}
		if !r.Next() || r.RecordBatch().NumRows() != 1000 || r.Schema().NumFields() != 10 {
			t.Fatalf("job %d: bad IPC: %v", id, r.Err())
		}
		r.Release()
	}
	if !bytes.Equal(resps[1].GetBatch().GetArrowIpc(), resps[2].GetBatch().GetArrowIpc()) {
		t.Errorf("zstd and gzip batches of the same records gave different Arrow")
	}
	wantFail := map[uint64]struct {
		code int32
		msg  string
	}{
		3: {-1, `mapping "never-sent" is unknown to this instance`},
		4: {2, "CRC mismatch"},
		5: {76, "codec 7"},
		6: {87, "4 of 4 records"},
	}
	for id, w := range wantFail {
		f := resps[id].GetFailure()
		if f == nil || f.GetErrorCode() != w.code || !strings.Contains(f.GetErrorMessage(), w.msg) {
			t.Errorf("job %d: got %v, want code %d with %q", id, resps[id], w.code, w.msg)
		}
	}
	if recs := resps[6].GetFailure().GetRecordErrors(); len(recs) != 4 || recs[0].GetBatchIndex() != 0 || !strings.Contains(recs[0].GetMessage(), "tombstone") || recs[3].GetBatchIndex() != 3 {
		t.Errorf("record errors %v", recs)
	}
}

// TestLogRecords asks for Fluss records sections: with the table's
// compression, and holding the same rows as the IPC answer to the same
// batch.
func TestLogRecords(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	m := benchMapping("bench-lz4")
	m.ArrowCompression = catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME
	good := fixture(t, "franz-go-bench-zstd.batch")
	resps := h.exchange(t,
		&transcodev1.TranscodeRequest{JobId: 1, Mapping: m, MappingId: "bench-lz4", RecordBatch: good},
		&transcodev1.TranscodeRequest{JobId: 2, MappingId: "bench-lz4", RecordBatch: good, WantLogRecords: true},
	)
	ipcAnswer, logAnswer := resps[1].GetBatch(), resps[2].GetBatch()
	if ipcAnswer == nil || logAnswer == nil {
		t.Fatalf("answers %v, %v", resps[1], resps[2])
	}
	if len(logAnswer.GetArrowIpc()) != 0 || len(logAnswer.GetLogRecords()) == 0 || logAnswer.GetRecordCount() != 1000 {
		t.Fatalf("log records answer: %d IPC bytes, %d records bytes, %d records", len(logAnswer.GetArrowIpc()), len(logAnswer.GetLogRecords()), logAnswer.GetRecordCount())
	}
	plan, err := convert.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := logbatch.CheckRecords(logAnswer.GetLogRecords(), plan.Schema, 1000, logbatch.CompressionLZ4Frame); err != nil {
		t.Fatal(err)
	}
	opts := logbatch.DefaultOptions(1)
	opts.Compression = logbatch.CompressionLZ4Frame
	framed, err := logbatch.Frame(nil, logAnswer.GetLogRecords(), 1000, opts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(bytes.NewReader(ipcAnswer.GetArrowIpc()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatal(r.Err())
	}
	want, err := logbatch.Build(r.RecordBatch(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(framed, want) {
		t.Fatal("the records section framed differs from the batch built from the IPC answer's rows")
	}
}

// TestOutputBound refuses a batch whose Arrow would not fit an answer.
func TestOutputBound(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxOutputBytes = 64 << 10
	h := newHarness(t, cfg)
	resps := h.exchange(t, &transcodev1.TranscodeRequest{JobId: 1, Mapping: benchMapping("m"), MappingId: "m", RecordBatch: fixture(t, "franz-go-bench-snappy.batch")},
		&transcodev1.TranscodeRequest{JobId: 2, MappingId: "m", RecordBatch: fixture(t, "franz-go-mixed-none.batch")})
	if f := resps[1].GetFailure(); f == nil || f.GetErrorCode() != int32(kerr.MessageTooLarge.Code) {
		t.Fatalf("big batch: %v", resps[1])
	}
	// The stream survives and serves the next job.
	if resps[2] == nil {
		t.Fatalf("no answer after the refused batch")
	}
}

// TestOutputBoundBeforeConverting: a batch of many tiny records whose
// rows alone would not fit an answer is refused before its Arrow is built
// (a 32 MiB batch of two-byte values would build gigabytes for a wide
// table); the same batch with fewer records converts.
func TestOutputBoundBeforeConverting(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxOutputBytes = 64 << 10
	h := newHarness(t, cfg)
	rowFloor := int(minRowBytes(mustPlan(t, benchMapping("m")).Schema))
	if rowFloor < 40 {
		t.Fatalf("bench schema's row floor is %d bytes; BIGINT, DECIMAL, DOUBLE, DATE, TIMESTAMP and more take more", rowFloor)
	}
	many := cfg.MaxOutputBytes/rowFloor + 1
	resps := h.exchange(t,
		&transcodev1.TranscodeRequest{JobId: 1, Mapping: benchMapping("m"), MappingId: "m", RecordBatch: tinyRecordsBatch(many, `{"id":1}`)},
		&transcodev1.TranscodeRequest{JobId: 2, MappingId: "m", RecordBatch: tinyRecordsBatch(10, `{"id":1}`)})
	if f := resps[1].GetFailure(); f == nil || f.GetErrorCode() != int32(kerr.MessageTooLarge.Code) || !strings.Contains(f.GetErrorMessage(), "at least") {
		t.Fatalf("%d tiny records: %v; want MESSAGE_TOO_LARGE before converting", many, resps[1])
	}
	if b := resps[2].GetBatch(); b == nil || b.GetRecordCount() != 10 {
		t.Fatalf("10 tiny records: %v", resps[2])
	}
}

func mustPlan(t *testing.T, m *catalogv1.TopicMapping) *convert.Plan {
	t.Helper()
	p, err := convert.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tinyRecordsBatch is an uncompressed record batch (magic 2, no producer
// id) of n records with value v, keys and headers empty.
func tinyRecordsBatch(n int, v string) []byte {
	values := make([][]byte, n)
	for i := range values {
		values[i] = []byte(v)
	}
	return recordsBatch(values...)
}

// recordsBatch is an uncompressed batch of records with these values.
func recordsBatch(values ...[]byte) []byte {
	return keyedRecordsBatch(make([][]byte, len(values)), values...)
}

// keyedRecordsBatch is recordsBatch with a key per value (nil: a null key).
func keyedRecordsBatch(keys [][]byte, values ...[]byte) []byte {
	n := len(values)
	var records []byte
	for i, v := range values {
		var r []byte
		r = append(r, 0)                     // attributes
		r = binary.AppendVarint(r, 0)        // timestamp delta
		r = binary.AppendVarint(r, int64(i)) // offset delta
		if keys[i] == nil {
			r = binary.AppendVarint(r, -1) // null key
		} else {
			r = append(binary.AppendVarint(r, int64(len(keys[i]))), keys[i]...)
		}
		r = binary.AppendVarint(r, int64(len(v)))
		r = append(r, v...)
		r = binary.AppendVarint(r, 0) // no headers
		records = binary.AppendVarint(records, int64(len(r)))
		records = append(records, r...)
	}
	var tail []byte
	tail = binary.BigEndian.AppendUint16(tail, 0)
	tail = binary.BigEndian.AppendUint32(tail, uint32(n-1))
	tail = binary.BigEndian.AppendUint64(tail, 1700000000000)
	tail = binary.BigEndian.AppendUint64(tail, 1700000000000)
	tail = binary.BigEndian.AppendUint64(tail, ^uint64(0)) // producer id -1
	tail = binary.BigEndian.AppendUint16(tail, ^uint16(0))
	tail = binary.BigEndian.AppendUint32(tail, ^uint32(0))
	tail = binary.BigEndian.AppendUint32(tail, uint32(n))
	tail = append(tail, records...)
	var b []byte
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(4+1+4+len(tail)))
	b = binary.BigEndian.AppendUint32(b, 0)
	b = append(b, 2)
	b = binary.BigEndian.AppendUint32(b, crc32c(tail))
	return append(b, tail...)
}

// counters returns the service's counter sums by name and result attribute.
func (h *harness) counters(t *testing.T) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				key := m.Name
				if v, ok := dp.Attributes.Value("result"); ok {
					key += "{" + v.AsString() + "}"
				}
				out[key] += dp.Value
			}
		}
	}
	return out
}

func TestMetrics(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	good := fixture(t, "franz-go-bench-none.batch")
	h.exchange(t,
		&transcodev1.TranscodeRequest{JobId: 1, Mapping: benchMapping("m"), MappingId: "m", RecordBatch: good},
		&transcodev1.TranscodeRequest{JobId: 2, MappingId: "m", RecordBatch: good[:100]},
		&transcodev1.TranscodeRequest{JobId: 3, MappingId: "unknown"},
	)
	got := h.counters(t)
	want := map[string]int64{
		"ferry.transcode.jobs{ok}": 1, "ferry.transcode.jobs{2}": 1, "ferry.transcode.jobs{-1}": 1,
		"ferry.transcode.records": 1000, "ferry.transcode.batch_bytes": int64(len(good) + 100),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

// TestMappingMemory: a stream that forgot a mapping (its bound is 1 here)
// or a new stream still finds one the instance compiled; an id the instance
// never saw is a failure answer, and a broken mapping is never served.
func TestMappingMemory(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxStreamMappings = 1
	h := newHarness(t, cfg)
	good := fixture(t, "franz-go-bench-none.batch")
	broken := benchMapping("broken")
	broken.Columns = nil
	first := h.exchange(t,
		&transcodev1.TranscodeRequest{JobId: 1, Mapping: benchMapping("a"), MappingId: "a", RecordBatch: good},
		&transcodev1.TranscodeRequest{JobId: 2, Mapping: benchMapping("b"), MappingId: "b", RecordBatch: good},
		&transcodev1.TranscodeRequest{JobId: 3, MappingId: "a", RecordBatch: good},
		&transcodev1.TranscodeRequest{JobId: 4, Mapping: broken, MappingId: "broken", RecordBatch: good},
	)
	for id := uint64(1); id <= 3; id++ {
		if first[id].GetBatch() == nil {
			t.Fatalf("job %d: %v", id, first[id])
		}
	}
	second := h.exchange(t,
		&transcodev1.TranscodeRequest{JobId: 1, MappingId: "b", RecordBatch: good},
		&transcodev1.TranscodeRequest{JobId: 2, MappingId: "never", RecordBatch: good},
		&transcodev1.TranscodeRequest{JobId: 3, MappingId: "broken", RecordBatch: good},
	)
	if second[1].GetBatch() == nil {
		t.Fatalf("second stream, known mapping: %v", second[1])
	}
	for id, want := range map[uint64]string{2: "is unknown to this instance", 3: "table has no columns"} {
		if f := second[id].GetFailure(); f == nil || !strings.Contains(f.GetErrorMessage(), want) {
			t.Fatalf("second stream job %d: %v, want %q", id, second[id], want)
		}
	}
}

func TestBadMappings(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	broken := benchMapping("broken")
	broken.Mapping.KeyColumn = "nope"
	resps := h.exchange(t,
		&transcodev1.TranscodeRequest{JobId: 1, Mapping: broken, MappingId: "broken"},
		&transcodev1.TranscodeRequest{JobId: 2, MappingId: "broken"},
		&transcodev1.TranscodeRequest{JobId: 3, Mapping: benchMapping("a"), MappingId: "b"},
		&transcodev1.TranscodeRequest{JobId: 4, Mapping: benchMapping("")},
	)
	for id, want := range map[uint64]string{
		1: `key column "nope" is not a column`,
		2: `mapping "broken" cannot be served: topic bench: key column "nope"`,
		3: "must be set and agree",
		4: "must be set and agree",
	} {
		if f := resps[id].GetFailure(); f == nil || f.GetErrorCode() != int32(kerr.UnknownServerError.Code) || !strings.Contains(f.GetErrorMessage(), want) {
			t.Errorf("job %d: got %v, want %q", id, resps[id], want)
		}
	}
}

// TestConcurrentJobs runs many jobs through few workers on two streams at
// once and checks every job gets exactly its own answer.
func TestConcurrentJobs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workers = 2
	h := newHarness(t, cfg)
	codecs := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	done := make(chan struct{})
	for s := 0; s < 2; s++ {
		go func() {
			defer func() { done <- struct{}{} }()
			var reqs []*transcodev1.TranscodeRequest
			for i := 0; i < 40; i++ {
				r := &transcodev1.TranscodeRequest{JobId: uint64(i), MappingId: "bench", RecordBatch: fixture(t, "franz-go-bench-"+codecs[i%len(codecs)]+".batch")}
				if i == 0 {
					r.Mapping = benchMapping("bench")
				}
				if i%7 == 3 {
					r.RecordBatch = r.RecordBatch[:len(r.RecordBatch)-3]
				}
				reqs = append(reqs, r)
			}
			resps := h.exchange(t, reqs...)
			if len(resps) != 40 {
				t.Errorf("%d answers, want 40", len(resps))
			}
			for i := uint64(0); i < 40; i++ {
				truncated := i%7 == 3
				if truncated != (resps[i].GetFailure() != nil) || (!truncated && resps[i].GetBatch().GetRecordCount() != 1000) {
					t.Errorf("job %d: %v", i, resps[i])
				}
			}
		}()
	}
	<-done
	<-done
}

// TestTraceContext checks the transcode span joins the trace the request
// carries, with the batch's attributes.
func TestTraceContext(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:  trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), parent), carrier)
	h.exchange(t, &transcodev1.TranscodeRequest{JobId: 9, Mapping: benchMapping("m"), MappingId: "m",
		RecordBatch: fixture(t, "franz-go-bench-lz4.batch"), Trace: &tracev1.TraceContext{Carrier: carrier}})
	var found bool
	for _, s := range h.spans.Ended() {
		if s.Name() != "transcode" {
			continue
		}
		found = true
		if s.SpanContext().TraceID() != parent.TraceID() || s.Parent().SpanID() != parent.SpanID() {
			t.Errorf("span trace %s parent %s, want %s %s", s.SpanContext().TraceID(), s.Parent().SpanID(), parent.TraceID(), parent.SpanID())
		}
		attrs := map[string]string{}
		for _, a := range s.Attributes() {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		if attrs["ferry.batch.records"] != "1000" || attrs["ferry.batch.codec"] != "lz4" || attrs["ferry.batch.bytes"] == "" {
			t.Errorf("span attributes %v", attrs)
		}
	}
	if !found {
		t.Fatal("no transcode span")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Workers = 0 }, "Workers"},
		{func(c *Config) { c.MaxDecompressedBytes = 10 }, "MaxDecompressedBytes"},
		{func(c *Config) { c.PlanCacheSize = 0 }, "PlanCacheSize"},
		{func(c *Config) { c.MaxStreamMappings = -1 }, "MaxStreamMappings"},
		{func(c *Config) { c.MaxOutputBytes = 0 }, "MaxOutputBytes"},
		{func(c *Config) { c.MaxStreamPending = 0 }, "MaxStreamPending"},
	} {
		c := DefaultConfig()
		tt.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want error naming %s", err, tt.want)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestPlanCacheEvicts(t *testing.T) {
	c := newPlanCache(2)
	for _, id := range []string{"a", "b", "a", "c"} {
		if e := c.get(benchMapping(id)); e.err != nil {
			t.Fatal(e.err)
		}
	}
	if c.len() != 2 {
		t.Fatalf("%d entries", c.len())
	}
	c.mu.Lock()
	_, hasB := c.byID["b"]
	_, hasA := c.byID["a"]
	c.mu.Unlock()
	if hasB || !hasA {
		t.Fatalf("evicted the wrong entry: a=%v b=%v", hasA, hasB)
	}
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// TestStuckStreamDoesNotStarveOthers: a client that stops reading its
// answers fills its own pending bound but must not keep the shared worker
// slots from another stream.
func TestStuckStreamDoesNotStarveOthers(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workers = 1
	cfg.MaxStreamPending = 4
	h := newHarness(t, cfg)
	big := fixture(t, "franz-go-bench-none.batch")

	stuckCtx, stopStuck := context.WithCancel(context.Background())
	defer stopStuck()
	stuck, err := h.client.Transcode(stuckCtx)
	if err != nil {
		t.Fatal(err)
	}
	// Never Recv: once the HTTP/2 window is full the server's Send blocks.
	go func() {
		for i := 0; i < 64; i++ {
			r := &transcodev1.TranscodeRequest{JobId: uint64(i), MappingId: "m", RecordBatch: big}
			if i == 0 {
				r.Mapping = benchMapping("m")
			}
			if stuck.Send(r) != nil {
				return
			}
		}
	}()
	time.Sleep(500 * time.Millisecond)

	done := make(chan map[uint64]*transcodev1.TranscodeResponse, 1)
	go func() {
		done <- h.exchange(t, &transcodev1.TranscodeRequest{JobId: 1, Mapping: benchMapping("m"), MappingId: "m", RecordBatch: big})
	}()
	select {
	case resps := <-done:
		if resps[1].GetBatch() == nil {
			t.Fatalf("answer %v", resps[1])
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a stream whose client does not read starved another stream")
	}
}

// TestAnswersShared converts two batches of different rows one after the
// other on one stream with one worker, so the second reuses the first's
// converter: with AnswersShared the first answer's bytes are the same
// after the second job, and without it the converter writes over them.
func TestAnswersShared(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Workers, cfg.MaxStreamPending, cfg.AnswersShared = 1, 1, shared
			h := newHarness(t, cfg)
			m := benchMapping("shared")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			svc := h.svc
			st := &inprocStream{ctx: ctx, reqs: make(chan *transcodev1.TranscodeRequest, 2), resps: make(chan *transcodev1.TranscodeResponse, 2)}
			st.reqs <- &transcodev1.TranscodeRequest{JobId: 1, Mapping: m, MappingId: "shared", RecordBatch: tinyRecordsBatch(3, `{"id": 1, "name": "aaaa"}`), WantLogRecords: true}
			done := make(chan error, 1)
			go func() { done <- svc.Transcode(st) }()
			first := (<-st.resps).GetBatch().GetLogRecords()
			kept := bytes.Clone(first)
			st.reqs <- &transcodev1.TranscodeRequest{JobId: 2, MappingId: "shared", RecordBatch: tinyRecordsBatch(3, `{"id": 2, "name": "bbbb"}`), WantLogRecords: true}
			second := (<-st.resps).GetBatch().GetLogRecords()
			close(st.reqs)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if len(first) == 0 || bytes.Equal(kept, second) {
				t.Fatal("the two batches converted to the same bytes: the test proves nothing")
			}
			if got := bytes.Equal(first, kept); got != shared {
				t.Errorf("first answer unchanged after the second job: %v, want %v", got, shared)
			}
		})
	}
}

// inprocStream is a server stream fed from channels, whose answers are
// not copied: what an in-process caller gets.
type inprocStream struct {
	grpc.ServerStream
	ctx   context.Context
	reqs  chan *transcodev1.TranscodeRequest
	resps chan *transcodev1.TranscodeResponse
}

func (s *inprocStream) Context() context.Context { return s.ctx }

func (s *inprocStream) Recv() (*transcodev1.TranscodeRequest, error) {
	r, ok := <-s.reqs
	if !ok {
		return nil, io.EOF
	}
	return r, nil
}

func (s *inprocStream) Send(r *transcodev1.TranscodeResponse) error {
	s.resps <- r
	return nil
}
