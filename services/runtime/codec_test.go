package runtime

import (
	"testing"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	tracev1 "github.com/ferrygw/ferry/services/api/gen/ferry/trace/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// payload is n bytes that differ from their neighbours, so a misplaced
// slice shows.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

func appendRequest(records int) *appendv1.AppendRequest {
	partition := int64(3)
	return &appendv1.AppendRequest{
		JobId: 41, TableId: 7, PartitionId: &partition, BucketId: 2, SchemaId: 1,
		ArrowCompression: catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME, ArrowCompressionLevel: 3,
		RecordCount: 330, Acks: -1, TimeoutMs: 30000, WriterId: 99, BatchSequence: 12,
		Trace:    &tracev1.TraceContext{Carrier: map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
		Database: "fluss", Table: "orders",
		Pieces: []*appendv1.AppendPiece{
			{PartitionName: "2026", BucketId: 1, RecordCount: 2, BatchSequence: 4, LogRecords: payload(300)},
			{PartitionName: "2027", BucketId: 0, RecordCount: 1, KvRecords: payload(40)},
		},
		LogRecords: payload(records),
	}
}

// frames splits b into pooled buffers of at most n bytes, as gRPC hands a
// message's HTTP/2 frames to the codec.
func frames(b []byte, n int) mem.BufferSlice {
	var s mem.BufferSlice
	for len(b) > 0 {
		k := min(n, len(b))
		s = append(s, mem.Copy(b[:k], mem.DefaultBufferPool()))
		b = b[k:]
	}
	return s
}

// TestCodecWireFormat: what codec writes, gRPC's proto codec reads, and the
// other way round, so either side of a connection may run either codec.
func TestCodecWireFormat(t *testing.T) {
	for _, records := range []int{0, 100, 40 << 10} {
		want := appendRequest(records)
		var c codec

		ours, err := c.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got := new(appendv1.AppendRequest)
		if err := protoCodec.Unmarshal(ours, got); err != nil {
			t.Fatalf("%d bytes of records: gRPC's codec reads codec's output: %v", records, err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("%d bytes of records: gRPC's codec read %v, want %v", records, got, want)
		}
		ours.Free()

		theirs, err := protoCodec.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got = new(appendv1.AppendRequest)
		if err := c.Unmarshal(frames(theirs.Materialize(), 16<<10), got); err != nil {
			t.Fatalf("%d bytes of records: codec reads gRPC's output: %v", records, err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("%d bytes of records: codec read %v, want %v", records, got, want)
		}
		theirs.Free()
	}
}

// TestCodecUnmarshalOwnsItsBytes: the message's bytes and strings stay as
// they were after gRPC frees the frames and the pool hands them out again.
func TestCodecUnmarshalOwnsItsBytes(t *testing.T) {
	want := appendRequest(40 << 10)
	wire, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	data := frames(wire, 16<<10)
	bufs := make([][]byte, len(data))
	for i, b := range data {
		bufs[i] = b.ReadOnlyData()
	}
	got := new(appendv1.AppendRequest)
	if err := (codec{}).Unmarshal(data, got); err != nil {
		t.Fatal(err)
	}
	data.Free()
	for _, b := range bufs {
		for i := range b {
			b[i] = 0xff
		}
	}
	if !proto.Equal(got, want) {
		t.Fatal("the message changed when its frames were overwritten")
	}
}

// TestCodecFallback: messages without generated fast paths (health) and
// nested messages of other packages go through.
func TestCodecFallback(t *testing.T) {
	var c codec
	want := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
	data, err := c.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got := new(healthpb.HealthCheckResponse)
	if err := c.Unmarshal(data, got); err != nil || !proto.Equal(got, want) {
		t.Fatalf("health response: got %v, %v; want %v", got, err, want)
	}

	req := &transcodev1.TranscodeRequest{JobId: 1, MappingId: "m-1", Partition: 2, RecordBatch: payload(500),
		Mapping: &catalogv1.TopicMapping{MappingId: "m-1", Topic: "orders", Database: "fluss", Table: "orders"}}
	data, err = c.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	got2 := new(transcodev1.TranscodeRequest)
	if err := c.Unmarshal(data, got2); err != nil || !proto.Equal(got2, req) {
		t.Fatalf("transcode request: got %v, %v; want %v", got2, err, req)
	}
}

// TestCodecRejectsTruncated: a message cut inside a field is an error, not
// a shorter message.
func TestCodecRejectsTruncated(t *testing.T) {
	wire, err := proto.Marshal(appendRequest(1000))
	if err != nil {
		t.Fatal(err)
	}
	// Cuts inside the first field and inside the last one (log_records).
	for _, cut := range []int{1, len(wire) - 500, len(wire) - 1} {
		if err := (codec{}).Unmarshal(frames(wire[:cut], 64), new(appendv1.AppendRequest)); err == nil {
			t.Errorf("%d of %d bytes: no error", cut, len(wire))
		}
	}
}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkCodec is one job's AppendRequest (40 KiB of records, 16 KiB
// frames) through gRPC's proto codec and through codec.
func BenchmarkCodec(b *testing.B) {
	msg := appendRequest(40 << 10)
	wire := mustMarshal(b, msg)
	for _, bc := range []struct {
		name string
		c    interface {
			Marshal(any) (mem.BufferSlice, error)
			Unmarshal(mem.BufferSlice, any) error
		}
	}{{"grpc", protoCodec}, {"ferry", codec{}}} {
		b.Run("marshal/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				data, err := bc.c.Marshal(msg)
				if err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
		b.Run("unmarshal/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				data := frames(wire, 16<<10)
				if err := bc.c.Unmarshal(data, new(appendv1.AppendRequest)); err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
	}
}
