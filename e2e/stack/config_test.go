package stack

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testRoot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.work"), []byte("go 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestConfigValidate(t *testing.T) {
	root := testRoot(t)
	base := DefaultConfig()
	base.Root = root
	tests := []struct {
		name    string
		mut     func(c *Config)
		wantErr string // substring naming the field; empty: valid
	}{
		{name: "default", mut: func(c *Config) {}},
		{name: "test config", mut: func(c *Config) { *c = TestConfig(); c.Root = root }},
		{name: "bad name", mut: func(c *Config) { c.Name = "Dev Stack" }, wantErr: "Name"},
		{name: "no root", mut: func(c *Config) { c.Root = "" }, wantErr: "Root"},
		{name: "root without go.work", mut: func(c *Config) { c.Root = t.TempDir() }, wantErr: "Root"},
		{name: "empty host", mut: func(c *Config) { c.Host = "" }, wantErr: "Host"},
		{name: "port zero", mut: func(c *Config) { c.TabletPort = 0 }, wantErr: "TabletPort 0"},
		{name: "port too big", mut: func(c *Config) { c.ZooKeeperPort = 70000 }, wantErr: "ZooKeeperPort 70000"},
		{name: "duplicate port", mut: func(c *Config) { c.AppendPort = c.CatalogPort }, wantErr: "AppendPort 7101: already used by CatalogPort"},
		{name: "duplicate transcode port", mut: func(c *Config) { c.TranscodePorts = []int{7102, 7102} }, wantErr: "TranscodePorts[1]"},
		{name: "service ports ignored for fluss only", mut: func(c *Config) { c.FlussOnly = true; c.AppendPort = c.CatalogPort }},
		{name: "single ignores the other services' ports", mut: func(c *Config) { c.Single = true; c.AppendPort = c.CatalogPort }},
		{name: "single with a service subset", mut: func(c *Config) { c.Single = true; c.Services = []string{Catalog} }, wantErr: "Single runs every service"},
		{name: "single port clash", mut: func(c *Config) { c.Single = true; c.KafkaPort = c.FrontdoorPort }, wantErr: "KafkaPort 7104: already used by FrontdoorPort"},
		{name: "metrics port clashes", mut: func(c *Config) { c.FrontdoorMetricsPort = c.KafkaPort }, wantErr: "FrontdoorMetricsPort 9092: already used by KafkaPort"},
		{name: "transcode metrics port clashes", mut: func(c *Config) { c.TranscodeMetricsPorts = []int{7202, 7201} }, wantErr: "TranscodeMetricsPorts[1] 7201: already used by CatalogMetricsPort"},
		{name: "metrics ports off", mut: func(c *Config) {
			c.CatalogMetricsPort, c.TranscodeMetricsPorts, c.AppendMetricsPort, c.FrontdoorMetricsPort, c.FetchMetricsPort = 0, nil, 0, 0, 0
		}},
		{name: "no transcode port", mut: func(c *Config) { c.TranscodePorts = nil }, wantErr: "TranscodePorts"},
		{name: "unknown service", mut: func(c *Config) { c.Services = []string{"catalogsvc", "kafkasvc"} }, wantErr: `unknown service "kafkasvc"`},
		{name: "frontdoor without deps", mut: func(c *Config) { c.Services = []string{Frontdoor} }, wantErr: "frontdoor needs catalogsvc"},
		{name: "subset", mut: func(c *Config) { c.Services = []string{Catalog, Append}; c.TranscodePorts = nil }},
		{name: "external fluss", mut: func(c *Config) { c.ExternalFluss = "127.0.0.1:28122" }},
		{name: "external fluss ignores fluss ports", mut: func(c *Config) { c.ExternalFluss = "127.0.0.1:28122"; c.TabletPort = c.CatalogPort }},
		{name: "external fluss without port", mut: func(c *Config) { c.ExternalFluss = "127.0.0.1" }, wantErr: "ExternalFluss"},
		{name: "external fluss only", mut: func(c *Config) { c.ExternalFluss = "127.0.0.1:28122"; c.FlussOnly = true }, wantErr: "ExternalFluss with FlussOnly"},
		{name: "negative node id", mut: func(c *Config) { c.NodeID = -1 }, wantErr: "NodeID"},
		{name: "bad advertised", mut: func(c *Config) { c.AdvertisedAddr = "localhost" }, wantErr: "AdvertisedAddr"},
		{name: "bad advertised port", mut: func(c *Config) { c.AdvertisedAddr = "localhost:http" }, wantErr: "AdvertisedAddr"},
		{name: "bad log level", mut: func(c *Config) { c.LogLevel = "verbose" }, wantErr: "LogLevel"},
		{name: "bad log format", mut: func(c *Config) { c.LogFormat = "xml" }, wantErr: "LogFormat"},
		{name: "no java", mut: func(c *Config) { c.Java = "" }, wantErr: "Java"},
		{name: "bad heap", mut: func(c *Config) { c.ServerHeap = "lots" }, wantErr: "ServerHeap"},
		{name: "zero ready timeout", mut: func(c *Config) { c.ReadyTimeout = 0 }, wantErr: "ReadyTimeout"},
		{name: "negative grace", mut: func(c *Config) { c.StopGrace = -time.Second }, wantErr: "StopGrace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.TranscodePorts = append([]int(nil), base.TranscodePorts...)
			tc.mut(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestDefaultPorts(t *testing.T) {
	// These numbers are a contract with README, Makefile and deploy/: change them together.
	d := DefaultConfig()
	got := d.Ports()
	want := map[string]int{
		"ZooKeeperPort": 2181, "CoordinatorPort": 9123, "TabletPort": 9124,
		"CatalogPort": 7101, "TranscodePorts[0]": 7102, "TranscodePorts[1]": 7112,
		"AppendPort": 7103, "FrontdoorPort": 7104, "FetchPort": 7105, "KafkaPort": 9092,
		"CatalogMetricsPort": 7201, "TranscodeMetricsPorts[0]": 7202, "TranscodeMetricsPorts[1]": 7212,
		"AppendMetricsPort": 7203, "FrontdoorMetricsPort": 7204, "FetchMetricsPort": 7205,
		"SchemaPort": 7106, "RegistryPort": 8081, "SchemaMetricsPort": 7206,
	}
	for k, v := range got {
		if v >= 32768 {
			t.Errorf("%s = %d: in the ephemeral range, where the kernel hands out client ports", k, v)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("ports = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	tc := TestConfig()
	if tc.ZooKeeperPort != 28181 || tc.CoordinatorPort != 28122 || tc.TabletPort != 28123 || !tc.FlussOnly {
		t.Errorf("TestConfig = %+v", tc)
	}
}

func TestServiceSpecs(t *testing.T) {
	c := DefaultConfig()
	c.OTLPEndpoint = "http://127.0.0.1:4317"
	specs := c.ServiceSpecs()
	var names []string
	byName := map[string]ServiceSpec{}
	for _, s := range specs {
		names = append(names, s.Name)
		byName[s.Name] = s
	}
	if got := strings.Join(names, ","); got != "catalogsvc,schemasvc,transcodesvc,transcodesvc-2,appendsvc,fetchsvc,frontdoor" {
		t.Fatalf("service order = %s", got)
	}
	for _, s := range specs {
		for _, k := range []string{"FERRY_LISTEN", "FERRY_LOG_LEVEL", "FERRY_LOG_FORMAT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
			if _, ok := s.Env[k]; !ok {
				t.Errorf("%s: env lacks %s", s.Name, k)
			}
		}
		if s.Env["FERRY_LISTEN"] != s.GRPCAddr || s.GRPCAddr != "127.0.0.1:"+itoa(s.Ports["grpc"]) {
			t.Errorf("%s: FERRY_LISTEN %q, GRPCAddr %q, grpc port %d disagree", s.Name, s.Env["FERRY_LISTEN"], s.GRPCAddr, s.Ports["grpc"])
		}
		if s.Ports["metrics"] == 0 || s.Env["FERRY_METRICS_ADDR"] != "127.0.0.1:"+itoa(s.Ports["metrics"]) {
			t.Errorf("%s: FERRY_METRICS_ADDR %q, metrics port %d disagree", s.Name, s.Env["FERRY_METRICS_ADDR"], s.Ports["metrics"])
		}
		if _, set := s.Env["GOMAXPROCS"]; set {
			t.Errorf("%s: GOMAXPROCS set without ServiceGOMAXPROCS", s.Name)
		}
	}
	one := DefaultConfig()
	one.ServiceGOMAXPROCS = 1
	for _, s := range one.ServiceSpecs() {
		if s.Env["GOMAXPROCS"] != "1" {
			t.Errorf("%s: GOMAXPROCS %q with ServiceGOMAXPROCS 1", s.Name, s.Env["GOMAXPROCS"])
		}
	}
	// A metrics port of 0 and a transcodesvc past TranscodeMetricsPorts have no endpoint.
	off := DefaultConfig()
	off.AppendMetricsPort, off.TranscodeMetricsPorts = 0, []int{7202}
	for _, s := range off.ServiceSpecs() {
		_, has := s.Ports["metrics"]
		if off := s.Name == Append || s.Name == "transcodesvc-2"; has == off || (off && s.Env["FERRY_METRICS_ADDR"] != "") {
			t.Errorf("%s: metrics port %v, FERRY_METRICS_ADDR %q", s.Name, s.Ports, s.Env["FERRY_METRICS_ADDR"])
		}
	}
	if byName["transcodesvc-2"].Package != Transcode || byName["transcodesvc-2"].GRPCAddr != "127.0.0.1:7112" {
		t.Errorf("second transcodesvc = %+v", byName["transcodesvc-2"])
	}
	for _, n := range []string{Catalog, Append, Fetch} {
		if got := byName[n].Env["FERRY_FLUSS_BOOTSTRAP"]; got != "127.0.0.1:9123" {
			t.Errorf("%s FERRY_FLUSS_BOOTSTRAP = %q", n, got)
		}
	}
	fd := byName[Frontdoor].Env
	wantFD := map[string]string{
		"FERRY_LISTEN": "127.0.0.1:7104", "FERRY_KAFKA_LISTEN": "127.0.0.1:9092", "FERRY_ADVERTISED_ADDR": "127.0.0.1:9092",
		"FERRY_NODE_ID": "1", "FERRY_CATALOG_ADDR": "127.0.0.1:7101", "FERRY_TRANSCODE_ADDR": "127.0.0.1:7102,127.0.0.1:7112",
		"FERRY_APPEND_ADDR": "127.0.0.1:7103", "FERRY_FETCH_ADDR": "127.0.0.1:7105", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
	}
	for k, v := range wantFD {
		if fd[k] != v {
			t.Errorf("frontdoor %s = %q, want %q", k, fd[k], v)
		}
	}
	sc := byName[Schema].Env
	for k, v := range map[string]string{"FERRY_LISTEN": "127.0.0.1:7106", "FERRY_REGISTRY_LISTEN": "127.0.0.1:8081",
		"FERRY_CATALOG_ADDR": "127.0.0.1:7101", "FERRY_FLUSS_BOOTSTRAP": "127.0.0.1:9123", "FERRY_METRICS_ADDR": "127.0.0.1:7206"} {
		if sc[k] != v {
			t.Errorf("schemasvc %s = %q, want %q", k, sc[k], v)
		}
	}
	// transcodesvc and fetchsvc resolve schema ids at schemasvc.
	for _, n := range []string{Transcode, "transcodesvc-2", Fetch} {
		if got := byName[n].Env["FERRY_SCHEMA_ADDR"]; got != "127.0.0.1:7106" {
			t.Errorf("%s FERRY_SCHEMA_ADDR = %q", n, got)
		}
	}
	if got := c.TestEnv()["FERRY_TEST_SCHEMA_REGISTRY_URL"]; got != "http://127.0.0.1:8081" {
		t.Errorf("TestEnv registry URL = %q", got)
	}
	if _, ok := byName[Transcode].Env["FERRY_FLUSS_BOOTSTRAP"]; ok {
		t.Error("transcodesvc must not get a Fluss address: it is stateless")
	}

	ext := c
	ext.ExternalFluss = "10.0.0.5:9123"
	for _, s := range ext.ServiceSpecs() {
		if got, ok := s.Env["FERRY_FLUSS_BOOTSTRAP"]; ok && got != "10.0.0.5:9123" {
			t.Errorf("ExternalFluss: %s FERRY_FLUSS_BOOTSTRAP = %q", s.Name, got)
		}
	}
	if _, ok := ext.Ports()["CoordinatorPort"]; ok {
		t.Errorf("ExternalFluss: Ports() still lists Fluss ports: %v", ext.Ports())
	}
	if got := ext.TestEnv()["FERRY_TEST_FLUSS_BOOTSTRAP"]; got != "10.0.0.5:9123" {
		t.Errorf("ExternalFluss: TestEnv bootstrap = %q", got)
	}

	c.FlussOnly = true
	if specs := c.ServiceSpecs(); len(specs) != 0 {
		t.Errorf("FlussOnly specs = %v, want none", specs)
	}
}

func TestServiceEnvFiltersParent(t *testing.T) {
	t.Setenv("FERRY_CATALOG_ADDR", "leaked:1")
	t.Setenv("OTEL_SERVICE_NAME", "leaked")
	spec := ServiceSpec{Env: map[string]string{"FERRY_LISTEN": "127.0.0.1:1", "OTEL_EXPORTER_OTLP_ENDPOINT": ""}}
	env := strings.Join(ServiceEnv(spec), "\n")
	if strings.Contains(env, "leaked") {
		t.Errorf("parent FERRY_/OTEL_ settings leaked into the service env")
	}
	if !strings.Contains(env, "FERRY_LISTEN=127.0.0.1:1") {
		t.Errorf("spec env missing")
	}
	if strings.Contains(env, "OTEL_EXPORTER_OTLP_ENDPOINT=") {
		t.Errorf("empty values must not be exported")
	}
	if !strings.Contains(env, "PATH=") {
		t.Errorf("ordinary parent env (PATH) dropped")
	}
}

func TestEnvLines(t *testing.T) {
	got := EnvLines(map[string]string{"B": "/a b/c", "A": "127.0.0.1:1", "C": "it's"})
	want := "export A=127.0.0.1:1\nexport B='/a b/c'\nexport C='it'\\''s'\n"
	if got != want {
		t.Errorf("EnvLines =\n%s\nwant\n%s", got, want)
	}
}

func TestFindRoot(t *testing.T) {
	root := testRoot(t)
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := FindRoot(deep)
	if err != nil || got != root {
		t.Errorf("FindRoot = %q, %v; want %q", got, err, root)
	}
	if _, err := FindRoot(t.TempDir()); err == nil {
		t.Error("FindRoot outside a repository succeeded")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// Checkouts that share one .cache (git worktrees with .cache linked) build their services into
// directories of their own, so one never starts another's binaries.
func TestServiceBinDirPerCheckout(t *testing.T) {
	a, b := Config{Root: "/work/main"}, Config{Root: "/work/wt/x"}
	if filepath.Base(a.ServiceBinDir()) == filepath.Base(b.ServiceBinDir()) {
		t.Errorf("both checkouts build into %s", filepath.Base(a.ServiceBinDir()))
	}
	if filepath.Dir(a.ServiceBinDir()) != filepath.Join(a.CacheDir(), "bin") || a.ServiceBinDir() != (Config{Root: "/work/main"}).ServiceBinDir() {
		t.Errorf("ServiceBinDir %s: want a stable directory under %s", a.ServiceBinDir(), filepath.Join(a.CacheDir(), "bin"))
	}
}

// In single-process mode the stack runs one process, cmd/ferry, with the settings the five
// services had, on frontdoor's ports.
func TestSingleServiceSpec(t *testing.T) {
	c := DefaultConfig()
	c.Root = testRoot(t)
	c.Single = true
	c.ExternalFluss = "fluss:9123"
	specs := c.ServiceSpecs()
	if len(specs) != 1 {
		t.Fatalf("%d specs, want 1", len(specs))
	}
	sp := specs[0]
	if sp.Name != Single || sp.Package != SinglePackage || sp.BinaryName() != "ferry" || sp.GRPCAddr != "127.0.0.1:7104" {
		t.Errorf("spec %+v", sp)
	}
	for k, v := range map[string]string{
		"FERRY_LISTEN": "127.0.0.1:7104", "FERRY_KAFKA_LISTEN": "127.0.0.1:9092", "FERRY_FLUSS_BOOTSTRAP": "fluss:9123",
		"FERRY_METRICS_ADDR": "127.0.0.1:7204", "FERRY_ADVERTISED_ADDR": "127.0.0.1:9092", "FERRY_NODE_ID": "1",
		"FERRY_REGISTRY_LISTEN": "127.0.0.1:8081",
	} {
		if sp.Env[k] != v {
			t.Errorf("%s=%q, want %q", k, sp.Env[k], v)
		}
	}
	for _, k := range []string{"FERRY_CATALOG_ADDR", "FERRY_TRANSCODE_ADDR", "FERRY_APPEND_ADDR", "FERRY_FETCH_ADDR", "FERRY_SCHEMA_ADDR"} {
		if _, set := sp.Env[k]; set {
			t.Errorf("%s set for the single process", k)
		}
	}
	for _, svc := range ServiceNames {
		if !sp.Runs(svc) || c.ProcessOf(svc) != Single {
			t.Errorf("%s is not run by the single process", svc)
		}
	}
	if got := len(c.Ports()); got != 4 {
		t.Errorf("ports %v, want gRPC, Kafka, Schema Registry and metrics", c.Ports())
	}
	if DefaultConfig().ProcessOf(Append) != Append {
		t.Error("microservices: appendsvc runs in a process of another name")
	}
}
