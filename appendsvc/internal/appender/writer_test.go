package appender

import (
	"context"
	"log/slog"
	"testing"
	"time"

	noopmetric "go.opentelemetry.io/otel/metric/noop"
	nooptrace "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
)

// writerFluss adds writer id allocation to fakeFluss.
type writerFluss struct {
	*fakeFluss
	next int64
	err  error
}

func (w *writerFluss) InitWriter(context.Context) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.next++
	return w.next, nil
}

func TestInitWriter(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Fluss
		code codes.Code
	}{
		{"allocates", &writerFluss{fakeFluss: &fakeFluss{}, next: 41}, codes.OK},
		{"fluss without writer ids", &fakeFluss{}, codes.Unimplemented},
		{"fluss unreachable", &writerFluss{fakeFluss: &fakeFluss{}, err: fluss.ErrUnreachable}, codes.Unavailable},
		{"fluss refuses", &writerFluss{fakeFluss: &fakeFluss{}, err: &fluss.Error{Code: fluss.CodeAuthorization, Message: "no"}}, codes.Internal},
		{"deadline", &writerFluss{fakeFluss: &fakeFluss{}, err: context.DeadlineExceeded}, codes.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := New(Config{}, tc.f, slog.New(slog.DiscardHandler), nooptrace.NewTracerProvider(), noopmetric.NewMeterProvider(), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := svc.InitWriter(context.Background(), &appendv1.InitWriterRequest{})
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code %v (%v), want %v", got, err, tc.code)
			}
			if tc.code == codes.OK && resp.GetWriterId() != 42 {
				t.Fatalf("writer id %d, want 42", resp.GetWriterId())
			}
		})
	}
}

// TestAppendDoesNotCoalesceWriterBatches: batches with a writer id go to
// Fluss one per request. Fluss answers a request holding any duplicate
// batch as that duplicate and appends none of the others, so sharing a
// request would lose new batches queued behind a resent one.
func TestAppendDoesNotCoalesceWriterBatches(t *testing.T) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := h.client.Append(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		b, _ := ipcOf(t, 2, uint64(i))
		r := baseReq(uint64(i+1), 0, b, 2)
		r.WriterId, r.BatchSequence = 7, int32(i)
		if err := stream.Send(r); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-first // the rest queue behind the first
		}
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if resp, err := stream.Recv(); err != nil || resp.GetErrorCode() != 0 {
			t.Fatalf("answer %v, %v", resp, err)
		}
	}
	calls := h.fake.snapshot()
	if len(calls) != 4 {
		t.Fatalf("%d produce calls, want 4 (one per writer batch)", len(calls))
	}
	for i, c := range calls {
		it := logbatch.NewIterator(recordsOf(c.batches[0]))
		n := 0
		for it.Next() {
			n++
			if b := it.Batch(); b.WriterID != 7 || b.BatchSequence != int32(i) {
				t.Fatalf("call %d: writer %d sequence %d, want 7/%d", i, b.WriterID, b.BatchSequence, i)
			}
		}
		if n != 1 || it.Err() != nil {
			t.Fatalf("call %d holds %d batches (%v)", i, n, it.Err())
		}
	}
}
