package inproc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/runtime"
)

var metrics *sdkmetric.ManualReader // of the last newConn

func newConn(t *testing.T) (*Conn, *tracetest.SpanRecorder, *bytes.Buffer) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	metrics = sdkmetric.NewManualReader()
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := New(tp, sdkmetric.NewMeterProvider(sdkmetric.WithReader(metrics)), log)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec, &logs.buf
}

// calls is the number of calls the duration histogram counted per method and status code.
func calls(t *testing.T) map[string]uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if m.Name != "rpc.client.call.duration" || !ok {
				continue
			}
			for _, dp := range h.DataPoints {
				method, _ := dp.Attributes.Value("rpc.method")
				code, _ := dp.Attributes.Value("rpc.response.status_code")
				out[method.AsString()+" "+code.AsString()] += dp.Count
			}
		}
	}
	return out
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// catalogServer answers ResolveTopics with fn.
type catalogServer struct {
	catalogv1.UnimplementedCatalogServiceServer
	fn func(context.Context, *catalogv1.ResolveTopicsRequest) (*catalogv1.ResolveTopicsResponse, error)
}

func (s *catalogServer) ResolveTopics(ctx context.Context, r *catalogv1.ResolveTopicsRequest) (*catalogv1.ResolveTopicsResponse, error) {
	return s.fn(ctx, r)
}

func TestUnaryPassesMessagesAndTraces(t *testing.T) {
	c, rec, logs := newConn(t)
	req := &catalogv1.ResolveTopicsRequest{Topics: []string{"a"}}
	want := &catalogv1.ResolveTopicsResponse{}
	var got *catalogv1.ResolveTopicsRequest
	client := c.Catalog(&catalogServer{fn: func(ctx context.Context, r *catalogv1.ResolveTopicsRequest) (*catalogv1.ResolveTopicsResponse, error) {
		got = r
		runtime.LoggerFrom(ctx).Info("handled")
		return want, nil
	}})
	resp, err := client.ResolveTopics(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got != req || resp != want {
		t.Error("the messages were not handed over as they are")
	}
	if !strings.Contains(logs.String(), "rpc=/ferry.catalog.v1.CatalogService/ResolveTopics") {
		t.Errorf("the handler's logger lacks the method: %s", logs.String())
	}
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != "ferry.catalog.v1.CatalogService/ResolveTopics" {
		t.Fatalf("spans %v", spans)
	}

	// An unimplemented method answers as gRPC does.
	if _, err := client.Metadata(context.Background(), &catalogv1.MetadataRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("Metadata: %v", err)
	}
	wantCalls := map[string]uint64{"ferry.catalog.v1.CatalogService/ResolveTopics OK": 1, "ferry.catalog.v1.CatalogService/Metadata Unimplemented": 1}
	if got := calls(t); !maps.Equal(got, wantCalls) {
		t.Errorf("calls measured %v, want %v", got, wantCalls)
	}
}

func TestUnaryErrorsBecomeStatuses(t *testing.T) {
	c, _, logs := newConn(t)
	for _, tc := range []struct {
		name string
		fn   func(context.Context) error
		code codes.Code
	}{
		{"status", func(context.Context) error { return status.Error(codes.NotFound, "gone") }, codes.NotFound},
		{"plain", func(context.Context) error { return errors.New("boom") }, codes.Unknown},
		{"deadline", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, codes.DeadlineExceeded},
		{"panic", func(context.Context) error { panic("bad request") }, codes.Internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := c.Catalog(&catalogServer{fn: func(ctx context.Context, _ *catalogv1.ResolveTopicsRequest) (*catalogv1.ResolveTopicsResponse, error) {
				return &catalogv1.ResolveTopicsResponse{}, tc.fn(ctx)
			}})
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			resp, err := client.ResolveTopics(ctx, &catalogv1.ResolveTopicsRequest{})
			if status.Code(err) != tc.code || resp != nil {
				t.Errorf("got %v, %v; want code %v and no answer", resp, err, tc.code)
			}
		})
	}
	if !strings.Contains(logs.String(), "rpc handler panicked") {
		t.Errorf("the panic was not logged: %s", logs.String())
	}
}

// echoTranscoder answers each job with its id and ends the stream with
// end once the client closed its side.
type echoTranscoder struct {
	transcodev1.UnimplementedTranscodeServiceServer
	end      error
	received []*transcodev1.TranscodeRequest
	ctxDone  chan error
}

func (e *echoTranscoder) Transcode(s grpc.BidiStreamingServer[transcodev1.TranscodeRequest, transcodev1.TranscodeResponse]) error {
	if err := s.SendHeader(metadata.Pairs("k", "v")); err != nil {
		return err
	}
	s.SetTrailer(metadata.Pairs("t", "1"))
	for {
		req, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return e.end
		}
		if err != nil {
			if e.ctxDone != nil {
				e.ctxDone <- s.Context().Err()
			}
			return err
		}
		e.received = append(e.received, req)
		if req.GetPartition() < 0 {
			panic("negative partition")
		}
		if err := s.Send(&transcodev1.TranscodeResponse{JobId: req.GetJobId()}); err != nil {
			return err
		}
	}
}

func TestStreamDeliversInOrderThenEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  error
		want error
	}{
		{"ok", nil, io.EOF},
		{"status", status.Error(codes.ResourceExhausted, "full"), status.Error(codes.ResourceExhausted, "full")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rec, _ := newConn(t)
			srv := &echoTranscoder{end: tc.end}
			st, err := c.Transcode(srv).Transcode(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			const n = 100 // more than both directions buffer
			var sent []*transcodev1.TranscodeRequest
			go func() {
				for i := range n {
					r := &transcodev1.TranscodeRequest{JobId: uint64(i + 1)}
					sent = append(sent, r)
					if err := st.Send(r); err != nil {
						t.Errorf("send: %v", err)
					}
				}
				_ = st.CloseSend()
			}()
			for i := range n {
				resp, err := st.Recv()
				if err != nil {
					t.Fatalf("recv %d: %v", i, err)
				}
				if resp.GetJobId() != uint64(i+1) {
					t.Fatalf("answer %d has job %d", i, resp.GetJobId())
				}
			}
			if _, err := st.Recv(); err.Error() != tc.want.Error() {
				t.Errorf("end of stream: %v, want %v", err, tc.want)
			}
			if len(srv.received) != n || srv.received[0] != sent[0] {
				t.Error("the server did not get the client's messages themselves")
			}
			if md, err := st.Header(); err != nil || md.Get("k")[0] != "v" {
				t.Errorf("header %v, %v", md, err)
			}
			if md := st.Trailer(); md.Get("t")[0] != "1" {
				t.Errorf("trailer %v", md)
			}
			if err := st.Send(&transcodev1.TranscodeRequest{}); !errors.Is(err, io.EOF) && status.Code(err) != codes.Internal {
				t.Errorf("send after the end: %v", err)
			}
			if spans := rec.Ended(); len(spans) != 1 || spans[0].Name() != "ferry.transcode.v1.TranscodeService/Transcode" {
				t.Errorf("spans %v", spans)
			}
			code := status.Code(tc.end).String()
			if got := calls(t); got["ferry.transcode.v1.TranscodeService/Transcode "+code] != 1 {
				t.Errorf("calls measured %v, want the stream once with %s", got, code)
			}
		})
	}
}

func TestStreamClientCancelEndsHandler(t *testing.T) {
	c, _, _ := newConn(t)
	srv := &echoTranscoder{ctxDone: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.Transcode(srv).Transcode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&transcodev1.TranscodeRequest{JobId: 7}); err != nil {
		t.Fatal(err)
	}
	if resp, err := st.Recv(); err != nil || resp.GetJobId() != 7 {
		t.Fatalf("recv %v %v", resp, err)
	}
	cancel()
	if _, err := st.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("client recv after cancel: %v", err)
	}
	select {
	case err := <-srv.ctxDone:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler's context: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not see the cancel")
	}
}

func TestStreamHandlerPanicIsInternal(t *testing.T) {
	c, _, logs := newConn(t)
	st, err := c.Transcode(&echoTranscoder{}).Transcode(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&transcodev1.TranscodeRequest{Partition: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); status.Code(err) != codes.Internal {
		t.Errorf("recv: %v", err)
	}
	if !strings.Contains(logs.String(), "negative partition") {
		t.Errorf("panic not logged: %s", logs.String())
	}
}

// appendServer sends one answer without reading; RecvMsg on the untyped
// interface gets a copy of it.
type appendServer struct {
	appendv1.UnimplementedAppendServiceServer
	sent *appendv1.AppendResponse
}

func (a *appendServer) Append(s grpc.BidiStreamingServer[appendv1.AppendRequest, appendv1.AppendResponse]) error {
	return s.Send(a.sent)
}

func TestStreamRecvMsgCopies(t *testing.T) {
	c, _, _ := newConn(t)
	srv := &appendServer{sent: &appendv1.AppendResponse{JobId: 3, BaseOffset: 42}}
	st, err := c.Append(srv).Append(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got appendv1.AppendResponse
	if err := st.RecvMsg(&got); err != nil {
		t.Fatal(err)
	}
	if got.GetJobId() != 3 || got.GetBaseOffset() != 42 || &got == srv.sent {
		t.Errorf("RecvMsg: %v", &got)
	}
	if err := st.RecvMsg(&got); !errors.Is(err, io.EOF) {
		t.Errorf("second RecvMsg: %v", err)
	}
}
