package roundtrip

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/recordbatch"
	"github.com/ferrygw/ferry/services/runtime"
	transcodesvc "github.com/ferrygw/ferry/transcodesvc/service"
)

// Column types, as the Fluss table has them (what fetchsvc reads);
// protoOf gives the mapping's form of the same type (what transcodesvc gets).
func ty(r types.Root) types.DataType { return types.DataType{Root: r, Nullable: true} }
func withP(t types.DataType, p int) types.DataType {
	t.Precision = p
	return t
}
func withLen(t types.DataType, n int) types.DataType {
	t.Length = n
	return t
}
func tDec(p, s int) types.DataType {
	t := ty(types.Decimal)
	t.Precision, t.Scale = p, s
	return t
}
func tArray(e types.DataType) types.DataType {
	t := ty(types.Array)
	t.Element = &e
	return t
}
func tMap(k, v types.DataType) types.DataType {
	t := ty(types.Map)
	k.Nullable = false
	t.Key, t.Value = &k, &v
	return t
}
func tRow(fields ...types.Field) types.DataType {
	t := ty(types.Row)
	t.Fields = fields
	return t
}
func fld(name string, t types.DataType) types.Field { return types.Field{Name: name, Type: t} }

var protoRoots = map[types.Root]catalogv1.TypeRoot{
	types.Boolean: catalogv1.TypeRoot_TYPE_ROOT_BOOLEAN, types.TinyInt: catalogv1.TypeRoot_TYPE_ROOT_TINYINT,
	types.SmallInt: catalogv1.TypeRoot_TYPE_ROOT_SMALLINT, types.Int: catalogv1.TypeRoot_TYPE_ROOT_INTEGER,
	types.BigInt: catalogv1.TypeRoot_TYPE_ROOT_BIGINT, types.Float: catalogv1.TypeRoot_TYPE_ROOT_FLOAT,
	types.Double: catalogv1.TypeRoot_TYPE_ROOT_DOUBLE, types.Decimal: catalogv1.TypeRoot_TYPE_ROOT_DECIMAL,
	types.Char: catalogv1.TypeRoot_TYPE_ROOT_CHAR, types.String: catalogv1.TypeRoot_TYPE_ROOT_STRING,
	types.Binary: catalogv1.TypeRoot_TYPE_ROOT_BINARY, types.Bytes: catalogv1.TypeRoot_TYPE_ROOT_BYTES,
	types.Date: catalogv1.TypeRoot_TYPE_ROOT_DATE, types.Time: catalogv1.TypeRoot_TYPE_ROOT_TIME,
	types.TimestampNTZ: catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_NTZ, types.TimestampLTZ: catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ,
	types.Array: catalogv1.TypeRoot_TYPE_ROOT_ARRAY, types.Map: catalogv1.TypeRoot_TYPE_ROOT_MAP, types.Row: catalogv1.TypeRoot_TYPE_ROOT_ROW,
}

func protoOf(t types.DataType) *catalogv1.DataType {
	p := &catalogv1.DataType{Root: protoRoots[t.Root], Nullable: t.Nullable,
		Length: int32(t.Length), Precision: int32(t.Precision), Scale: int32(t.Scale)}
	if t.Element != nil {
		p.Element = protoOf(*t.Element)
	}
	if t.Key != nil {
		p.Key, p.Value = protoOf(*t.Key), protoOf(*t.Value)
	}
	for _, f := range t.Fields {
		p.Fields = append(p.Fields, &catalogv1.Field{Name: f.Name, Type: protoOf(f.Type)})
	}
	return p
}

// transcoder serves transcodesvc, built from its default settings as its
// main builds it, on a loopback port for the test.
func transcoder(t *testing.T) transcodev1.TranscodeServiceClient {
	t.Helper()
	s := runtime.NewSettings("transcodesvc")
	rc := runtime.DefaultConfig("transcodesvc", "127.0.0.1:0")
	rc.Declare(s)
	c := transcodesvc.Declare(s)
	// Plaintext: the test's own gRPC server below serves it, on loopback.
	env := map[string]string{"FERRY_GRPC_PLAINTEXT": "true"}
	if err := s.Parse(nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil); err != nil {
		t.Fatal(err)
	}
	app, err := runtime.NewApp(t.Context(), rc, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := transcodesvc.New(t.Context(), app, c)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	transcodev1.RegisterTranscodeServiceServer(gs, svc)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return transcodev1.NewTranscodeServiceClient(cc)
}

// transcode sends values as one record batch and returns the rows
// transcodesvc made of them.
func transcode(ctx context.Context, t *testing.T, tc transcodev1.TranscodeServiceClient, m *catalogv1.TopicMapping, values [][]byte) arrow.RecordBatch {
	t.Helper()
	recs := make([]recordbatch.Record, len(values))
	for i, v := range values {
		recs[i] = recordbatch.Record{Value: v, Timestamp: 1767323045678, OffsetDelta: int32(i)}
	}
	batch, err := recordbatch.AppendBatch(nil, 0, int32(len(values)-1), recs)
	if err != nil {
		t.Fatal(err)
	}
	st, err := tc.Transcode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&transcodev1.TranscodeRequest{JobId: 1, Mapping: m, MappingId: m.GetMappingId(), RecordBatch: batch}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = st.CloseSend()
	if f := resp.GetFailure(); f != nil {
		t.Fatalf("transcode failed: %v", f)
	}
	rd, err := ipc.NewReader(bytes.NewReader(resp.GetBatch().GetArrowIpc()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	if !rd.Next() {
		t.Fatalf("no record batch in the answer: %v", rd.Err())
	}
	rec := rd.RecordBatch()
	rec.Retain()
	return rec
}

// TestJSONRoundTripsThroughRebuild: a row converted from JSON by
// transcodesvc, rebuilt as JSON by the read path (fetchsvc/rebuild) and
// converted again is the same row, for every type, so produce → consume →
// produce gives back equal values under the documented type rules
// (docs/transcoding.md §3).
func TestJSONRoundTripsThroughRebuild(t *testing.T) {
	columns := []types.Field{
		fld("b", ty(types.Boolean)), fld("i8", ty(types.TinyInt)), fld("i16", ty(types.SmallInt)), fld("i32", ty(types.Int)), fld("i64", ty(types.BigInt)),
		fld("f32", ty(types.Float)), fld("f64", ty(types.Double)), fld("dec", tDec(10, 2)), fld("dec0", tDec(38, 0)),
		fld("c", withLen(ty(types.Char), 3)), fld("s", ty(types.String)), fld("bin", withLen(ty(types.Binary), 2)), fld("by", ty(types.Bytes)),
		fld("d", ty(types.Date)), fld("t0", withP(ty(types.Time), 0)), fld("t3", withP(ty(types.Time), 3)), fld("t9", withP(ty(types.Time), 9)),
		fld("ntz3", withP(ty(types.TimestampNTZ), 3)), fld("ntz9", withP(ty(types.TimestampNTZ), 9)),
		fld("ltz0", withP(ty(types.TimestampLTZ), 0)), fld("ltz6", withP(ty(types.TimestampLTZ), 6)),
		fld("arr", tArray(ty(types.String))), fld("smap", tMap(ty(types.String), ty(types.Int))),
		fld("imap", tMap(ty(types.Int), ty(types.String))),
		fld("row", tRow(fld("city", ty(types.String)), fld("zip", ty(types.Int)), fld("tags", tArray(ty(types.Int))))),
	}
	m := &catalogv1.TopicMapping{Topic: "t", MappingId: "m1",
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON,
			UnknownFields: catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT}}
	for _, c := range columns {
		m.Columns = append(m.Columns, &catalogv1.Field{Name: c.Name, Type: protoOf(c.Type)})
	}
	values := [][]byte{
		[]byte(`{"b": true, "i8": -128, "i16": 32767, "i32": -2147483648, "i64": "9223372036854775807",
			"f32": 0.1, "f64": -1.25e-3, "dec": "-12.3", "dec0": "12345678901234567890123456789012345678",
			"c": "äbc", "s": "quote \" nl \n ✓", "bin": "AAE=", "by": "AAH/",
			"d": "1969-12-31", "t0": "23:59:59", "t3": "12:34:56.789", "t9": "00:00:00.000000001",
			"ntz3": "1969-12-31T23:59:59.999", "ntz9": "2262-04-11T23:47:16.854775807", "ltz0": "2026-01-02T04:04:05+01:00",
			"ltz6": "2026-01-02T03:04:05.000001Z",
			"arr": ["a", null], "smap": {"x": 1, "y": null}, "imap": [[-1, "a"], [2, null]],
			"row": {"city": "Zürich", "zip": 8001, "tags": [1, null]}}`),
		[]byte(`{"f32": "NaN", "f64": "-Infinity", "dec": 0, "arr": [], "smap": {}, "row": {}}`),
		[]byte(`{}`),
	}
	tc := transcoder(t)
	first := transcode(t.Context(), t, tc, m, values)
	defer first.Release()
	if first.NumRows() != int64(len(values)) || first.NumCols() != int64(len(columns)) {
		t.Fatalf("%d rows of %d columns, want %d of %d", first.NumRows(), first.NumCols(), len(values), len(columns))
	}
	rb, err := rebuild.Compile(m, columns)
	if err != nil {
		t.Fatal(err)
	}
	var rebuilt [][]byte
	for row := range int(first.NumRows()) {
		var r rebuild.Record
		if err := rb.Rebuild(&r, first, row, 0); err != nil {
			t.Fatalf("row %d: %v", row, err)
		}
		rebuilt = append(rebuilt, r.Value)
	}
	second := transcode(t.Context(), t, tc, m, rebuilt)
	defer second.Release()
	for i := range int(first.NumCols()) {
		// NaN must come back as NaN; floats otherwise compare exactly.
		if !array.ApproxEqual(first.Column(i), second.Column(i), array.WithNaNsEqual(true), array.WithAbsTolerance(0)) {
			t.Errorf("column %s changed in the round trip:\n first  %v\n second %v", columns[i].Name, first.Column(i), second.Column(i))
		}
	}
}
