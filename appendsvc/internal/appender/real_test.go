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
	"github.com/twmb/franz-go/pkg/kerr"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/flusstest"
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
	return e.cluster.NewTable(t, e.tableSpec(name, cols, buckets, compression))
}

func (e *realEnv) tableSpec(name string, cols []types.Field, buckets int, compression string) testenv.TableSpec {
	var spec []testenv.Column
	for _, c := range cols {
		spec = append(spec, testenv.Column{Name: c.Name, Type: c.Type.String()})
	}
	return testenv.TableSpec{Database: e.db, Table: name, Columns: spec, BucketCount: buckets,
		Properties: map[string]string{"table.log.arrow.compression.type": compression}}
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
		r.Database, r.Table = info.Database, info.Table
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

// TestRealAppendErrors checks answers Fluss decides: an unknown table id,
// a missing table or database and a bucket the table does not have fail
// without a base offset.
func TestRealAppendErrors(t *testing.T) {
	e := newRealEnv(t)
	info := e.table(t, "errors", testCols, 2, "NONE")
	b, _ := ipcOf(t, 3, 1)
	// The path names a table with another id.
	unknown := baseReq(1, 0, b, 3)
	unknown.TableId, unknown.Database, unknown.Table = 1<<40, info.Database, info.Table
	noTable := baseReq(4, 0, b, 3)
	noTable.TableId, noTable.Database, noTable.Table = info.TableID, info.Database, "no_such_table"
	noDatabase := baseReq(5, 0, b, 3)
	noDatabase.TableId, noDatabase.Database, noDatabase.Table = info.TableID, info.Database+"_no_such_db", info.Table
	noBucket := baseReq(2, 7, b, 3)
	noBucket.TableId, noBucket.SchemaId, noBucket.TimeoutMs = info.TableID, info.SchemaID, 3000
	noBucket.Database, noBucket.Table = info.Database, info.Table
	ok := baseReq(3, 1, b, 3)
	ok.TableId, ok.SchemaId = info.TableID, info.SchemaID
	ok.Database, ok.Table = info.Database, info.Table
	answers := e.stream(t, []*appendv1.AppendRequest{unknown, noBucket, ok, noTable, noDatabase})
	for job, what := range map[uint64]string{1: "unknown table id", 4: "missing table", 5: "missing database"} {
		if a := answers[job]; fluss.ErrorCode(a.GetErrorCode()) != fluss.CodeTableNotExist || a.GetRetriable() || a.GetBaseOffset() != -1 ||
			a.GetKafkaErrorCode() != int32(kerr.UnknownTopicOrPartition.Code) || !a.GetTableNotExist() || a.GetPossiblyStored() {
			t.Errorf("%s: %v, want non-retriable TABLE_NOT_EXIST: UNKNOWN_TOPIC_OR_PARTITION, table gone, not stored", what, a)
		}
	}
	// The client reports the bucket as unknown to its metadata, which is
	// retriable (a table can grow), so the job runs out its timeout.
	if a := answers[2]; fluss.ErrorCode(a.GetErrorCode()) != fluss.CodeRequestTimeOut || !a.GetRetriable() || a.GetBaseOffset() != -1 ||
		!strings.Contains(a.GetErrorMessage(), "UNKNOWN_TABLE_OR_BUCKET") || a.GetKafkaErrorCode() != int32(kerr.RequestTimedOut.Code) || !a.GetPossiblyStored() {
		t.Errorf("missing bucket: %v", a)
	}
	if a := answers[3]; a.GetErrorCode() != 0 || a.GetBaseOffset() != 0 {
		t.Errorf("good job: %v", a)
	}
}

// TestRealAppendRecreatedTable drops a table and creates it again under
// the same path: jobs for the old id fail with non-retriable
// TABLE_NOT_EXIST (frontdoor answers UNKNOWN_TOPIC_OR_PARTITION, and
// producers refresh their metadata), both in a service that wrote to the
// old table and in one that never met it (it finds the path naming
// another id), while jobs for the new id are appended.
func TestRealAppendRecreatedTable(t *testing.T) {
	e := newRealEnv(t)
	spec := e.tableSpec("recreated", testCols, 1, "NONE")
	old := e.cluster.NewTable(t, spec) // its cleanup drops the new table
	req := func(job uint64, info testenv.TableInfo, first int64) *appendv1.AppendRequest {
		r := baseReq(job, 0, idNameIPC(t, first, 2), 2)
		r.TableId, r.SchemaId, r.Database, r.Table, r.TimeoutMs = info.TableID, info.SchemaID, info.Database, info.Table, 20000
		return r
	}
	if a := e.stream(t, []*appendv1.AppendRequest{req(1, old, 1)})[1]; a.GetErrorCode() != 0 {
		t.Fatalf("append before recreating: %v", a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.fc.DropTable(ctx, fluss.TablePath{Database: spec.Database, Table: spec.Table}, false); err != nil {
		t.Fatal(err)
	}
	recreated, err := e.cluster.Helper.CreateTable(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if recreated.TableID == old.TableID {
		t.Fatalf("the recreated table has the old id %d", old.TableID)
	}
	fresh := *e
	fresh.client, _ = serveAppend(t, e.cluster.Bootstrap, Config{})
	for i, env := range map[string]*realEnv{"wrote the old table": e, "never met it": &fresh} {
		answers := env.stream(t, []*appendv1.AppendRequest{req(1, old, 100), req(2, recreated, 200)})
		if a := answers[1]; fluss.ErrorCode(a.GetErrorCode()) != fluss.CodeTableNotExist || a.GetRetriable() || a.GetBaseOffset() != -1 {
			t.Errorf("%s: append to the old id: %v, want non-retriable TABLE_NOT_EXIST", i, a)
		}
		if a := answers[2]; a.GetErrorCode() != 0 {
			t.Errorf("%s: append to the new id: %v", i, a)
		}
	}
	rows := e.cluster.Scan(t, spec.Database, spec.Table, testenv.ScanOptions{Timeout: time.Minute})
	if len(rows) != 4 {
		t.Fatalf("the recreated table holds %d rows, want the 4 appended to it: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if id := fmt.Sprint(r.Row["id"]); id != "200" && id != "201" {
			t.Errorf("row %+v was not appended to the new table", r)
		}
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
	var columns []types.Column
	for _, c := range cols {
		columns = append(columns, types.Column{Name: c.Name, Type: c.Type, ID: types.UnknownID})
	}
	path := fluss.TablePath{Database: e.db, Table: "parts"}
	info := flusstest.CreateTable(t, e.fc, path, fluss.TableDescriptor{Schema: types.Schema{Columns: columns}, NumBuckets: 2,
		PartitionKeys: []string{"p"}, Properties: map[string]string{fluss.PropArrowCompressionType: "ZSTD"}},
		fluss.PartitionSpec{"p": "a"}, fluss.PartitionSpec{"p": "b"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
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
			r.Database, r.Table = info.Database, info.Table
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
				r.Database, r.Table = info.Database, info.Table
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
