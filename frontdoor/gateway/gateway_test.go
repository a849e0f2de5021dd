package gateway

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/fakebackends"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/runtime"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
)

func serve(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

var service = runtime.Service[*Config]{Name: "frontdoor", DefaultListen: "127.0.0.1:0", Declare: Declare, Setup: Setup}

// TestServiceEndToEnd runs frontdoor as main does, against fake backends,
// and produces through it with franz-go.
func TestServiceEndToEnd(t *testing.T) {
	cat := fakebackends.NewCatalog()
	cat.AddTopic("orders", 2, 11)
	ap := fakebackends.NewAppender()
	catAddr := serve(t, func(s *grpc.Server) { catalogv1.RegisterCatalogServiceServer(s, cat) })
	tc1 := serve(t, func(s *grpc.Server) { transcodev1.RegisterTranscodeServiceServer(s, &fakebackends.Transcoder{}) })
	tc2 := serve(t, func(s *grpc.Server) { transcodev1.RegisterTranscodeServiceServer(s, &fakebackends.Transcoder{}) })
	apAddr := serve(t, func(s *grpc.Server) { appendv1.RegisterAppendServiceServer(s, ap) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	exit := make(chan int, 1)
	args := []string{"-listen", "127.0.0.1:0", "-kafka-listen", "127.0.0.1:0", "-node-id", "3",
		"-catalog-addr", catAddr, "-transcode-addr", tc1 + "," + tc2, "-append-addr", apAddr, "-log-level", "warn", "-grpc-plaintext"}
	go func() {
		exit <- runtime.RunService(ctx, service, args, func(string) (string, bool) { return "", false }, &stderr)
	}()

	deadline := time.Now().Add(15 * time.Second)
	for cat.LastBroker.Load() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("frontdoor never registered with the catalog; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := cat.LastBroker.Load()
	if b.NodeId != 3 || b.Host != "127.0.0.1" || b.Port == 0 {
		t.Fatalf("registered as %+v", b)
	}
	addr := fmt.Sprintf("%s:%d", b.Host, b.Port)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
	defer pcancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte("through main")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()
	if log := ap.Log(11, 1); len(log) != 1 || log[0] != "through main" {
		t.Fatalf("appended %q", log)
	}
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("frontdoor did not stop")
	}
}

func TestSettingErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"tls key without cert", []string{"-kafka-tls-key", "k.pem"}, "FERRY_KAFKA_TLS_KEY"},
		{"budget below request size", []string{"-kafka-max-request-bytes", "1000", "-kafka-conn-inflight-bytes", "10"}, "FERRY_KAFKA_CONN_INFLIGHT_BYTES"},
		{"missing users file", []string{"-sasl-users-file", "/nonexistent/users"}, "FERRY_SASL_USERS_FILE"},
		{"kafka port in use", []string{"-kafka-listen", busy.Addr().String()}, "FERRY_KAFKA_LISTEN"},
		{"bad node id", []string{"-node-id", "-1"}, "FERRY_NODE_ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"-listen", "127.0.0.1:0", "-kafka-listen", "127.0.0.1:0", "-grpc-plaintext"}, tc.args...)
			code := runtime.RunService(context.Background(), service, args, func(string) (string, bool) { return "", false }, &stderr)
			if code != runtime.ExitConfig || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d naming %s", code, stderr.String(), runtime.ExitConfig, tc.want)
			}
		})
	}
}

func TestAdvertised(t *testing.T) {
	bound := &net.TCPAddr{IP: net.IPv4zero, Port: 9092}
	for _, tc := range []struct {
		configured string
		host       string
		port       int
	}{
		{"", "127.0.0.1", 9092},
		{"kafka.example.com:19092", "kafka.example.com", 19092},
		{"10.0.0.5:0", "10.0.0.5", 9092},
	} {
		c := &Config{AdvertisedAddr: tc.configured}
		host, port, err := c.advertised(bound)
		if err != nil || host != tc.host || port != tc.port {
			t.Errorf("%q: %s:%d %v, want %s:%d", tc.configured, host, port, err, tc.host, tc.port)
		}
	}
}
