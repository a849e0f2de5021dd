package appender

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/testenv"
)

type realEnv struct {
	cluster *testenv.Cluster
	fc      *fluss.Client
	client  appendv1.AppendServiceClient
	db      string
}

// newRealEnv runs the service in-process over a bufconn gRPC server,
// writing into the test cluster through services/fluss.
func newRealEnv(t testing.TB) *realEnv {
	t.Helper()
	cluster := testenv.Fluss(t)
	client, fc := serveAppend(t, cluster.Bootstrap, Config{})
	return &realEnv{cluster: cluster, fc: fc, client: client, db: cluster.NewDatabase(t, "appendsvc")}
}

// serveAppend runs the service with cfg in-process over a bufconn gRPC
// server, writing into the cluster at bootstrap; everything stops when the
// test ends.
func serveAppend(t testing.TB, bootstrap string, cfg Config, opts ...fluss.Option) (appendv1.AppendServiceClient, *fluss.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fc, err := fluss.Dial(ctx, bootstrap, opts...)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tp := sdktrace.NewTracerProvider()
	svc, err := New(cfg, NewClientAdapter(fc, log), log, tp, noopmetric.NewMeterProvider(), propagation.TraceContext{})
	if err != nil {
		t.Fatal(err)
	}
	lis := bufconn.Listen(4 << 20)
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	appendv1.RegisterAppendServiceServer(srv, svc)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		fc.Close()
		_ = tp.Shutdown(context.Background())
	})
	return appendv1.NewAppendServiceClient(conn), fc
}

func (e *realEnv) table(t testing.TB, name string, cols []types.Field, buckets int, compression string) testenv.TableInfo {
	t.Helper()
	var spec []testenv.Column
	for _, c := range cols {
		spec = append(spec, testenv.Column{Name: c.Name, Type: c.Type.String()})
	}
	return e.cluster.NewTable(t, testenv.TableSpec{Database: e.db, Table: name, Columns: spec, BucketCount: buckets,
		Properties: map[string]string{"table.log.arrow.compression.type": compression}})
}

// stream sends reqs on one stream and collects the answers.
func (e *realEnv) stream(t testing.TB, reqs []*appendv1.AppendRequest) map[uint64]*appendv1.AppendResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := e.client.Append(ctx)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		for _, r := range reqs {
			if err := s.Send(r); err != nil {
				errc <- err
				return
			}
		}
		errc <- s.CloseSend()
	}()
	out := map[uint64]*appendv1.AppendResponse{}
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out[resp.GetJobId()] = resp
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRealAppendEveryType appends all-types batches to three buckets of a
// real table through the service and reads every row back with the Java
// client; offsets answered must be where the rows are.
func TestRealAppendEveryType(t *testing.T) {
	e := newRealEnv(t)
	cols := goldentest.AllTypesColumns()
	info := e.table(t, "every_type", cols, 3, "LZ4_FRAME")
	var reqs []*appendv1.AppendRequest
	recs := map[uint64]arrow.RecordBatch{}
	total := 0
	for i := range 9 {
		rows := 5 + 7*i
		b, rec := ipcOfCols(t, cols, rows, uint64(i+1))
		job := uint64(i + 1)
		recs[job] = rec
		r := baseReq(job, int32(i%3), b, rows)
		r.TableId, r.SchemaId, r.TimeoutMs = info.TableID, info.SchemaID, 60000
		reqs = append(reqs, r)
		total += rows
	}
	answers := e.stream(t, reqs)
	type loc struct {
		bucket int32
		offset int64
	}
	want := map[loc]map[string]any{}
	for _, r := range reqs {
		a := answers[r.GetJobId()]
		if a == nil || a.GetErrorCode() != 0 {
			t.Fatalf("job %d: %v", r.GetJobId(), a)
		}
		rec := recs[r.GetJobId()]
		for row := 0; row < int(rec.NumRows()); row++ {
			want[loc{r.GetBucketId(), a.GetBaseOffset() + int64(row)}] = goldentest.ScanRowValues(rec, cols, row)
		}
	}
	scanned := e.cluster.Scan(t, e.db, "every_type", testenv.ScanOptions{Expect: total, Timeout: time.Minute})
	if len(scanned) != total {
		t.Fatalf("scanned %d rows, want %d", len(scanned), total)
	}
	for _, s := range scanned {
		w, ok := want[loc{s.Bucket, s.Offset}]
		if !ok {
			t.Fatalf("row at bucket %d offset %d was not written by any job", s.Bucket, s.Offset)
		}
		if d := goldentest.SameScanValue(w, s.Row); d != "" {
			t.Errorf("bucket %d offset %d: %s", s.Bucket, s.Offset, d)
		}
	}
}

// TestRealAppendErrors checks answers Fluss decides: an unknown table id and
// a bucket the table does not have fail without a base offset.
func TestRealAppendErrors(t *testing.T) {
	e := newRealEnv(t)
	info := e.table(t, "errors", testCols, 2, "NONE")
	b, _ := ipcOf(t, 3, 1)
	unknown := baseReq(1, 0, b, 3)
	unknown.TableId = 1 << 40
	noBucket := baseReq(2, 7, b, 3)
	noBucket.TableId, noBucket.SchemaId, noBucket.TimeoutMs = info.TableID, info.SchemaID, 3000
	ok := baseReq(3, 1, b, 3)
	ok.TableId, ok.SchemaId = info.TableID, info.SchemaID
	answers := e.stream(t, []*appendv1.AppendRequest{unknown, noBucket, ok})
	if a := answers[1]; fluss.ErrorCode(a.GetErrorCode()) != fluss.CodeTableNotExist || a.GetRetriable() || a.GetBaseOffset() != -1 {
		t.Errorf("unknown table: %v", a)
	}
	// The client reports the bucket as unknown to its metadata, which is
	// retriable (a table can grow), so the job runs out its timeout.
	if a := answers[2]; fluss.ErrorCode(a.GetErrorCode()) != fluss.CodeRequestTimeOut || !a.GetRetriable() || a.GetBaseOffset() != -1 ||
		!strings.Contains(a.GetErrorMessage(), "UNKNOWN_TABLE_OR_BUCKET") {
		t.Errorf("missing bucket: %v", a)
	}
	if a := answers[3]; a.GetErrorCode() != 0 || a.GetBaseOffset() != 0 {
		t.Errorf("good job: %v", a)
	}
}

// TestRealAppendPartitioned writes to two partitions of a partitioned table
// by partition id and reads the rows back with the Java client.
func TestRealAppendPartitioned(t *testing.T) {
	e := newRealEnv(t)
	cols := []types.Field{
		{Name: "id", Type: types.DataType{Root: types.BigInt}},
		{Name: "p", Type: types.DataType{Root: types.String}},
	}
	var spec []testenv.Column
	for _, c := range cols {
		spec = append(spec, testenv.Column{Name: c.Name, Type: c.Type.String()})
	}
	info := e.cluster.NewTable(t, testenv.TableSpec{Database: e.db, Table: "parts", Columns: spec, BucketCount: 2,
		PartitionKeys: []string{"p"}, Properties: map[string]string{"table.log.arrow.compression.type": "ZSTD"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := fluss.TablePath{Database: e.db, Table: "parts"}
	for _, v := range []string{"a", "b"} {
		if err := e.fc.CreatePartition(ctx, path, fluss.PartitionSpec{"p": v}, false); err != nil {
			t.Fatal(err)
		}
	}
	parts, err := e.fc.ListPartitions(ctx, path)
	if err != nil || len(parts) != 2 {
		t.Fatalf("partitions %v: %v", parts, err)
	}
	schema, err := types.ArrowSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []*appendv1.AppendRequest
	want := map[string]bool{}
	for i, part := range parts {
		for bucket := range int32(2) {
			rb := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
			for r := range 3 {
				id := int64(100*i + 10*int(bucket) + r)
				rb.Field(0).(*array.Int64Builder).Append(id)
				rb.Field(1).(*array.StringBuilder).Append(part.Name)
				want[fmt.Sprintf("%d/%d/%d/%s", part.ID, bucket, id, part.Name)] = true
			}
			rec := rb.NewRecordBatch()
			rb.Release()
			var buf bytes.Buffer
			w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			r := baseReq(uint64(len(reqs)+1), bucket, buf.Bytes(), 3)
			pid := part.ID
			r.TableId, r.SchemaId, r.PartitionId, r.TimeoutMs = info.TableID, info.SchemaID, &pid, 60000
			r.ArrowCompression = catalogv1.ArrowCompression_ARROW_COMPRESSION_ZSTD
			reqs = append(reqs, r)
		}
	}
	for id, a := range e.stream(t, reqs) {
		if a.GetErrorCode() != 0 || a.GetBaseOffset() != 0 {
			t.Fatalf("job %d: %v", id, a)
		}
	}
	rows := e.cluster.Scan(t, e.db, "parts", testenv.ScanOptions{Expect: len(want), Timeout: time.Minute})
	for _, r := range rows {
		if r.PartitionID == nil {
			t.Fatalf("row without partition: %+v", r)
		}
		key := fmt.Sprintf("%d/%d/%v/%v", *r.PartitionID, r.Bucket, r.Row["id"], r.Row["p"])
		if !want[key] {
			t.Fatalf("unexpected row %s", key)
		}
		delete(want, key)
	}
	if len(want) != 0 {
		t.Fatalf("rows not read back: %v", want)
	}
}

func ipcOfCols(t testing.TB, cols []types.Field, rows int, seed uint64) ([]byte, arrow.RecordBatch) {
	t.Helper()
	saved := testCols
	testCols = cols
	defer func() { testCols = saved }()
	return ipcOf(t, rows, seed)
}

// BenchmarkRealAppend pushes jobs of 1000 rows through the service into a
// 4-bucket table on real Fluss (skipped without it).
func BenchmarkRealAppend(b *testing.B) {
	e := newRealEnv(b)
	for _, comp := range []string{"NONE", "LZ4_FRAME", "ZSTD"} {
		info := e.table(b, "bench_"+comp, testCols, 4, comp)
		payload, _ := ipcOf(b, 1000, 1)
		enum := catalogv1.ArrowCompression(catalogv1.ArrowCompression_value["ARROW_COMPRESSION_"+comp])
		b.Run(comp, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			s, err := e.client.Append(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var failed atomic.Int64
			done := make(chan error, 1)
			go func() {
				for {
					resp, err := s.Recv()
					if errors.Is(err, io.EOF) {
						done <- nil
						return
					}
					if err != nil {
						done <- err
						return
					}
					if resp.GetErrorCode() != 0 {
						failed.Add(1)
					}
				}
			}()
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			// A plain loop, not b.Loop: the timer must keep running until
			// every answer is in, not stop when the last job is sent.
			b.ResetTimer()
			job := uint64(0)
			for range b.N {
				job++
				r := baseReq(job, int32(job%4), payload, 1000)
				r.TableId, r.SchemaId, r.ArrowCompression, r.TimeoutMs = info.TableID, info.SchemaID, enum, 60000
				if err := s.Send(r); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.CloseSend(); err != nil {
				b.Fatal(err)
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			if n := failed.Load(); n > 0 {
				b.Fatal(fmt.Sprintf("%d jobs failed", n))
			}
			b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
