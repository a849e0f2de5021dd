package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/runtime"
	"github.com/ferrygw/ferry/transcodesvc/service"
)

// TestServiceRuns starts the real service as main would, waits for it to
// report SERVING, transcodes one real client batch through it and shuts it
// down cleanly.
func TestServiceRuns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- runtime.RunService(ctx, runtime.Service[*service.Config]{
			Name: "transcodesvc", DefaultListen: "127.0.0.1:7102", Version: "test", Declare: service.Declare, Setup: service.Setup,
		}, []string{"-listen", addr, "-transcode-workers", "1", "-log-level", "error", "-grpc-plaintext"},
			func(string) (string, bool) { return "", false }, &stderr)
	}()

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		hctx, hcancel := context.WithTimeout(ctx, time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(hctx, &healthpb.HealthCheckRequest{})
		hcancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not SERVING: %v (stderr %s)", err, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	batch, err := os.ReadFile("internal/kafkabatch/testdata/java-mixed-snappy.batch")
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	st, err := transcodev1.NewTranscodeServiceClient(conn).Transcode(sctx)
	if err != nil {
		t.Fatal(err)
	}
	m := &catalogv1.TopicMapping{Topic: "lines", MappingId: "m1",
		Columns: []*catalogv1.Field{{Name: "line", Type: &catalogv1.DataType{Root: catalogv1.TypeRoot_TYPE_ROOT_STRING, Nullable: true}}},
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_STRING, ValueColumn: "line"}}
	if err := st.Send(&transcodev1.TranscodeRequest{JobId: 7, Mapping: m, MappingId: "m1", RecordBatch: batch}); err != nil {
		t.Fatal(err)
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetJobId() != 7 || resp.GetBatch().GetRecordCount() != 5 {
		t.Fatalf("answer %v", resp)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("stream end: %v", err)
	}

	cancel()
	select {
	case code := <-exited:
		if code != runtime.ExitOK {
			t.Fatalf("exit code %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("did not shut down")
	}
	if strings.Contains(stderr.String(), "transcodesvc:") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}
