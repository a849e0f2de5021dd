package server

import (
	"bytes"
	"fmt"

	"context"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

// fakeRegistry is a SchemaService serving fixed schemas, counting calls.
type fakeRegistry struct {
	schemav1.UnimplementedSchemaServiceServer
	mu    sync.Mutex
	texts map[int32]string
	calls map[int32]int
	down  bool
}

func (f *fakeRegistry) GetSchema(_ context.Context, req *schemav1.GetSchemaRequest) (*schemav1.GetSchemaResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[req.GetId()]++
	if f.down {
		return nil, status.Error(codes.Unavailable, "registry down")
	}
	text, ok := f.texts[req.GetId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "schema %d not found", req.GetId())
	}
	return &schemav1.GetSchemaResponse{Schema: &schemav1.Schema{Id: req.GetId(), Type: schemav1.SchemaType_SCHEMA_TYPE_AVRO, Text: text}}, nil
}

func (f *fakeRegistry) callsFor(id int32) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

// dialRegistry serves f over a real gRPC connection.
func dialRegistry(t *testing.T, f *fakeRegistry) schemav1.SchemaServiceClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	schemav1.RegisterSchemaServiceServer(gs, f)
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///registry",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); gs.Stop() })
	return schemav1.NewSchemaServiceClient(conn)
}

const orderSchema = `{"type":"record","name":"order","fields":[{"name":"id","type":"long"},{"name":"item","type":["null","string"]}]}`

func avroOrdersMapping() *catalogv1.TopicMapping {
	return &catalogv1.TopicMapping{
		Topic: "orders", MappingId: "orders-avro",
		Columns: []*catalogv1.Field{
			{Name: "id", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_BIGINT, false)},
			{Name: "item", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)},
		},
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO},
	}
}

func avroValue(t *testing.T, id int32, v map[string]any) []byte {
	t.Helper()
	b, err := avro.Marshal(avro.MustParse(orderSchema), v)
	if err != nil {
		t.Fatal(err)
	}
	return append(schemas.AppendFrame(nil, id), b...)
}

func TestAvroWithoutRegistryIsRefused(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	resp := h.exchange(t, &transcodev1.TranscodeRequest{JobId: 1, MappingId: "orders-avro", Mapping: avroOrdersMapping(),
		RecordBatch: recordsBatch(avroValue(t, 1, map[string]any{"id": int64(1), "item": "a"}))})[1]
	f := resp.GetFailure()
	if f == nil || f.GetErrorCode() != int32(kerr.UnknownServerError.Code) || !strings.Contains(f.GetErrorMessage(), "-schema-addr") {
		t.Fatalf("want a failure naming -schema-addr, got %v", resp)
	}
}

func TestAvroSchemasFromRegistry(t *testing.T) {
	reg := &fakeRegistry{texts: map[int32]string{1: orderSchema, 2: `{"type":"record","name":"n","fields":[{"name":"id","type":"string"}]}`}, calls: map[int32]int{}}
	cfg := DefaultConfig()
	cfg.Schemas = dialRegistry(t, reg)
	h := newHarness(t, cfg)
	m := avroOrdersMapping()

	good := recordsBatch(avroValue(t, 1, map[string]any{"id": int64(1), "item": "kettle"}), avroValue(t, 1, map[string]any{"id": int64(2), "item": nil}))
	bad := recordsBatch(avroValue(t, 1, map[string]any{"id": int64(3), "item": "x"}), avroValue(t, 42, map[string]any{"id": int64(4), "item": "y"}),
		append(schemas.AppendFrame(nil, 2), 2, 'x'))
	answers := h.exchange(t,
		&transcodev1.TranscodeRequest{JobId: 1, MappingId: m.MappingId, Mapping: m, RecordBatch: good},
		&transcodev1.TranscodeRequest{JobId: 2, MappingId: m.MappingId, RecordBatch: good},
	)
	for id, a := range answers {
		if a.GetBatch().GetRecordCount() != 2 {
			t.Fatalf("job %d: want 2 rows, got %v", id, a)
		}
	}
	rec := readIPCRows(t, answers[1].GetBatch().GetArrowIpc())
	if want := "[[1 kettle] [2 <nil>]]"; rec != want {
		t.Fatalf("rows %s, want %s", rec, want)
	}
	if n := reg.callsFor(1); n != 1 {
		t.Fatalf("schema id 1 fetched %d times, want once (ids are cached)", n)
	}

	resp := h.exchange(t, &transcodev1.TranscodeRequest{JobId: 3, MappingId: m.MappingId, Mapping: m, RecordBatch: bad})[3]
	f := resp.GetFailure()
	if f == nil || f.GetErrorCode() != int32(kerr.InvalidRecord.Code) || len(f.GetRecordErrors()) != 2 {
		t.Fatalf("want INVALID_RECORD with 2 record errors, got %v", resp)
	}
	if e := f.GetRecordErrors()[0]; e.GetBatchIndex() != 1 || !strings.Contains(e.GetMessage(), "unknown schema id 42") {
		t.Fatalf("record error %v", e)
	}
	if e := f.GetRecordErrors()[1]; e.GetBatchIndex() != 2 || !strings.Contains(e.GetMessage(), "schema id 2 does not fit topic orders: field id: Avro string cannot fill column id") {
		t.Fatalf("record error %v", e)
	}

	// A registry that cannot answer makes the batch retriable, not bad.
	reg.mu.Lock()
	reg.down = true
	reg.mu.Unlock()
	resp = h.exchange(t, &transcodev1.TranscodeRequest{JobId: 4, MappingId: m.MappingId, Mapping: m,
		RecordBatch: recordsBatch(avroValue(t, 7, map[string]any{"id": int64(1), "item": "a"}))})[4]
	if f := resp.GetFailure(); f == nil || f.GetErrorCode() != int32(kerr.RequestTimedOut.Code) || !strings.Contains(f.GetErrorMessage(), "registry down") {
		t.Fatalf("want REQUEST_TIMED_OUT naming the registry's error, got %v", resp)
	}
	// ... while schemas it answered before are still served from the cache.
	resp = h.exchange(t, &transcodev1.TranscodeRequest{JobId: 5, MappingId: m.MappingId, Mapping: m, RecordBatch: good})[5]
	if resp.GetBatch().GetRecordCount() != 2 {
		t.Fatalf("want the cached schema to serve, got %v", resp)
	}
	// Ids 1 and 2 once each, 42 unknown, 7 while the registry was down.
	got := h.counters(t)
	for k, v := range map[string]int64{"ferry.transcode.schema_fetches{ok}": 2, "ferry.transcode.schema_fetches{unknown}": 1, "ferry.transcode.schema_fetches{error}": 1} {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

// readIPCRows renders the rows of an Arrow IPC stream of BIGINT and STRING
// columns.
func readIPCRows(t *testing.T, data []byte) string {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var rows [][]any
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			var row []any
			for _, c := range rec.Columns() {
				if c.IsNull(i) {
					row = append(row, nil)
					continue
				}
				switch a := c.(type) {
				case *array.Int64:
					row = append(row, a.Value(i))
				case *array.String:
					row = append(row, a.Value(i))
				}
			}
			rows = append(rows, row)
		}
	}
	return fmt.Sprint(rows)
}

// TestFramedKeyColumn: a log table whose kafka.key.column takes Avro keys
// (kafka.key.format=avro) stores the string each framed key holds; a key
// framed with an unknown id fails its record, naming the id.
func TestFramedKeyColumn(t *testing.T) {
	reg := &fakeRegistry{texts: map[int32]string{5: `"string"`}, calls: map[int32]int{}}
	cfg := DefaultConfig()
	cfg.Schemas = dialRegistry(t, reg)
	h := newHarness(t, cfg)
	m := &catalogv1.TopicMapping{
		Topic: "orders", MappingId: "orders-avro-keys",
		Columns: []*catalogv1.Field{
			{Name: "k", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_STRING, true)},
			{Name: "id", Type: dt(catalogv1.TypeRoot_TYPE_ROOT_BIGINT, false)},
		},
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON, KeyColumn: "k", KeyFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO},
	}
	key := func(id int32, s string) []byte {
		b, err := avro.Marshal(avro.MustParse(`"string"`), s)
		if err != nil {
			t.Fatal(err)
		}
		return append(schemas.AppendFrame(nil, id), b...)
	}
	answers := h.exchange(t,
		&transcodev1.TranscodeRequest{JobId: 1, MappingId: m.MappingId, Mapping: m,
			RecordBatch: keyedRecordsBatch([][]byte{key(5, "user-1"), nil}, []byte(`{"id": 1}`), []byte(`{"id": 2}`))},
		&transcodev1.TranscodeRequest{JobId: 2, MappingId: m.MappingId,
			RecordBatch: keyedRecordsBatch([][]byte{key(5, "fine"), key(6, "x")}, []byte(`{"id": 3}`), []byte(`{"id": 4}`))},
	)
	if rows := readIPCRows(t, answers[1].GetBatch().GetArrowIpc()); rows != "[[user-1 1] [<nil> 2]]" {
		t.Fatalf("rows %s (%v), want the unframed key and a null one", rows, answers[1])
	}
	f := answers[2].GetFailure()
	if f == nil || f.GetErrorCode() != int32(kerr.InvalidRecord.Code) || len(f.GetRecordErrors()) != 1 ||
		f.GetRecordErrors()[0].GetBatchIndex() != 1 || !strings.Contains(f.GetRecordErrors()[0].GetMessage(), "record key: unknown schema id 6") {
		t.Fatalf("want INVALID_RECORD for record 1's key, got %v", answers[2])
	}
}
