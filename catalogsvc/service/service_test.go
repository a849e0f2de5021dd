package service_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/catalogsvc/internal/mapping"
	"github.com/ferrygw/ferry/catalogsvc/service"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/runtime"
	"github.com/ferrygw/ferry/services/testenv"
	"github.com/ferrygw/ferry/services/testenv/devpki"
	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func validConfig() *service.Config {
	c := service.DefaultConfig()
	c.Fluss.Bootstrap = "127.0.0.1:9123"
	return c
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*service.Config)
		want string // the setting the error must name; empty: valid
	}{
		{"defaults", func(*service.Config) {}, ""},
		{"cluster id", func(c *service.Config) { c.ClusterID = "has space" }, service.EnvClusterID},
		{"databases", func(c *service.Config) { c.Databases = "ok,no.dots" }, service.EnvDatabases},
		{"expose", func(c *service.Config) { c.Expose = "some" }, service.EnvExpose},
		{"interval", func(c *service.Config) { c.RefreshInterval = 0 }, service.EnvRefreshInterval},
		{"timeout", func(c *service.Config) { c.RefreshTimeout = 0 }, service.EnvRefreshTimeout},
		{"gap", func(c *service.Config) { c.MinRefreshGap = -time.Second }, service.EnvMinRefreshGap},
		{"lease", func(c *service.Config) { c.MaxLease = 0 }, service.EnvMaxLease},
		{"bootstrap", func(c *service.Config) { c.Fluss.Bootstrap = "" }, runtime.EnvFlussBootstrap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mod(c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			var se *runtime.SettingError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want a SettingError naming %s", err, tt.want)
			}
		})
	}
}

func TestCatalogConfig(t *testing.T) {
	c := validConfig()
	c.Databases = "a, b"
	c.Expose = "all"
	cc := c.CatalogConfig()
	if cc.Mapping.ClusterID != mapping.DeriveClusterID([]string{"127.0.0.1:9123"}) {
		t.Errorf("derived cluster id = %q", cc.Mapping.ClusterID)
	}
	if len(cc.Databases) != 2 || cc.Databases[1] != "b" || cc.Mapping.Exposure != mapping.ExposeAll {
		t.Errorf("catalog config = %+v", cc)
	}
	if err := cc.Validate(); err != nil {
		t.Errorf("catalog config invalid: %v", err)
	}
	c.ClusterID = "prod-1"
	if got := c.CatalogConfig().Mapping.ClusterID; got != "prod-1" {
		t.Errorf("explicit cluster id = %q", got)
	}
}

func TestRunServiceRejectsBadSettings(t *testing.T) {
	var stderr bytes.Buffer
	env := map[string]string{service.EnvExpose: "everything", runtime.EnvFlussBootstrap: "127.0.0.1:9123"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	code := runtime.RunService(context.Background(), catalogsvc(), []string{"-listen", "127.0.0.1:0", "-grpc-plaintext"}, lookup, &stderr)
	if code != runtime.ExitConfig || !strings.Contains(stderr.String(), service.EnvExpose) {
		t.Errorf("exit %d, stderr %q; want %d naming %s", code, stderr.String(), runtime.ExitConfig, service.EnvExpose)
	}
}

// refusedWithoutCertificate waits for addr to accept connections and
// checks that a plaintext health call is refused there.
func refusedWithoutCertificate(addr string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err == nil {
		return errors.New("a plaintext caller without a certificate was served")
	}
	return nil
}

func catalogsvc() runtime.Service[*service.Config] {
	return runtime.Service[*service.Config]{
		Name: "catalogsvc", DefaultListen: "127.0.0.1:0", Version: "test",
		Declare: service.Declare, Setup: service.Setup,
	}
}

// TestIntegrationServiceOverGRPC runs the whole service as main does and
// talks to it as frontdoor would, over internal mTLS.
func TestIntegrationServiceOverGRPC(t *testing.T) {
	f := testenv.Fluss(t)
	db := f.NewDatabase(t, "catalogsvc")
	info := f.NewTable(t, testenv.TableSpec{Database: db, Table: "events", BucketCount: 4,
		Columns:          []testenv.Column{{Name: "payload", Type: "BYTES"}, {Name: "k", Type: "BYTES"}},
		CustomProperties: enabled(mapping.PropValueFormat, "raw", mapping.PropValueColumn, "payload", mapping.PropKeyColumn, "k")})

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	pki := t.TempDir()
	if err := devpki.Generate(pki, []string{"catalogsvc", "frontdoor"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runtime.RunService(ctx, catalogsvc(), []string{
			"-listen", addr, "-fluss-bootstrap", f.Bootstrap, "-databases", db,
			"-cluster-id", "it-cluster", "-log-level", "warn",
			"-grpc-tls-ca", filepath.Join(pki, devpki.CAFile),
			"-grpc-tls-cert", devpki.CertFile(pki, "catalogsvc"), "-grpc-tls-key", devpki.KeyFile(pki, "catalogsvc"),
		}, func(string) (string, bool) { return "", false }, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != runtime.ExitOK {
			t.Errorf("service exit %d: %s", code, stderr.String())
		}
	}()

	if err := refusedWithoutCertificate(addr); err != nil {
		t.Error(err)
	}
	clientTLS, err := devpki.ClientTLS(pki, "frontdoor", "catalogsvc")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(clientTLS)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	waitUntil(t, rctx, "the service to serve", func() bool {
		resp, err := healthpb.NewHealthClient(conn).Check(rctx, &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	})
	client := catalogv1.NewCatalogServiceClient(conn)

	topic := db + ".events"
	res, err := client.ResolveTopics(rctx, &catalogv1.ResolveTopicsRequest{Topics: []string{topic, db + ".nope"}})
	if err != nil {
		t.Fatal(err)
	}
	got := res.GetResults()
	if got[0].GetErrorCode() != 0 || got[0].GetMapping().GetTableId() != info.TableID || got[0].GetMapping().GetPartitionCount() != 4 ||
		got[0].GetMapping().GetMapping().GetValueColumn() != "payload" || got[1].GetErrorCode() != int32(kerr.UnknownTopicOrPartition.Code) {
		t.Fatalf("ResolveTopics = %v", got)
	}

	hb, err := client.Heartbeat(rctx, &catalogv1.HeartbeatRequest{
		Broker: &catalogv1.Broker{NodeId: 2, Host: "10.0.0.2", Port: 9092}, LeaseMs: 30_000})
	if err != nil || hb.GetClusterId() != "it-cluster" {
		t.Fatalf("Heartbeat = %v, %v", hb, err)
	}
	md, err := client.Metadata(rctx, &catalogv1.MetadataRequest{AllTopics: true,
		Self: &catalogv1.Broker{NodeId: 1, Host: "10.0.0.1", Port: 9092}})
	if err != nil {
		t.Fatal(err)
	}
	if md.GetClusterId() != "it-cluster" || md.GetControllerId() != 1 || len(md.GetBrokers()) != 2 {
		t.Errorf("Metadata brokers: cluster %q controller %d brokers %v", md.GetClusterId(), md.GetControllerId(), md.GetBrokers())
	}
	if len(md.GetTopics()) != 1 || md.GetTopics()[0].GetTopic() != topic || len(md.GetTopics()[0].GetPartitions()) != 4 {
		t.Fatalf("Metadata topics = %v", md.GetTopics())
	}
	leaders := map[int32]int{}
	for _, p := range md.GetTopics()[0].GetPartitions() {
		leaders[p.GetLeaderId()]++
	}
	if leaders[1] != 2 || leaders[2] != 2 {
		t.Errorf("4 partitions over brokers 1 and 2: %v", leaders)
	}
	list, err := client.ListTopics(rctx, &catalogv1.ListTopicsRequest{})
	if err != nil || len(list.GetTopics()) != 1 {
		t.Errorf("ListTopics = %v, %v", list, err)
	}
}
