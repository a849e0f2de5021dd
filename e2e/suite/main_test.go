package suite

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// env is the stack every test in this package runs against. TestMain sets it; when it is nil
// the suite is skipped (or failed, under FERRY_TEST_REQUIRE_FLUSS=1) with skipReason.
var env *suiteEnv

var skipReason string

type suiteEnv struct {
	stack *stack.Stack
	// kafka is frontdoor's Kafka address (the advertised one).
	kafka string
	// nodeID is frontdoor's Kafka node id.
	nodeID int32
	// tracing is the Jaeger that receives the services' spans, nil when Jaeger is not installed.
	tracing *tracing
	// ownFluss is set when TestMain started Fluss itself (no FERRY_TEST_FLUSS_BOOTSTRAP).
	ownFluss *stack.Stack
}

// TestMain owns the suite's stack: the first test that needs it starts it (so a -run that
// selects nothing here costs nothing), and TestMain stops it after the last test.
//
// The stack is the four services (two transcodesvc instances) as processes built from this tree,
// pointed at the Fluss cluster tools/test.sh started (FERRY_TEST_FLUSS_BOOTSTRAP), or at a Fluss
// cluster of its own on free ports when that is unset and the Fluss jars are installed; with
// Jaeger receiving the services' spans when it is installed.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if env != nil && code != 0 {
		// The services' logs explain most failures: keep them.
		env.stack.KeepDir()
	}
	if env != nil {
		if err := env.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e/suite: stop:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

var (
	startOnce sync.Once
	startErr  error
)

// ensureStarted starts the suite's stack once; afterwards env is set, or skipReason or startErr
// says why not.
func ensureStarted() {
	startOnce.Do(func() {
		if testing.Short() {
			skipReason = "-short: the end-to-end suite starts a whole stack"
			return
		}
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		env, startErr = startSuite(log)
	})
}

func startSuite(log *slog.Logger) (*suiteEnv, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	root, err := stack.FindRoot(wd)
	if err != nil {
		return nil, err
	}
	// Ten minutes at most for everything to come up: a cold `go build` of four services on two
	// cores plus, without an external cluster, a Fluss start.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	e := &suiteEnv{nodeID: 1}
	bootstrap := strings.TrimSpace(os.Getenv(testenv.EnvBootstrap))
	if bootstrap == "" {
		own, err := startOwnFluss(ctx, root, log)
		if err != nil || own == nil {
			return nil, err
		}
		e.ownFluss = own
		bootstrap = own.Config().FlussBootstrap()
		// services/testenv reads the cluster from the environment.
		for k, v := range own.Config().TestEnv() {
			os.Setenv(k, v)
		}
	}

	tr, err := startTracing(ctx, root, log)
	if err != nil {
		return nil, e.stopAfter(err)
	}
	e.tracing = tr

	// The ports are free when picked but not held; should another process take one before the
	// stack binds it, stack.Start says "is not free" and new ports are tried.
	var (
		s     *stack.Stack
		cfg   stack.Config
		start = time.Now()
	)
	for attempt := 1; ; attempt++ {
		cfg, err = servicesConfig("e2e", root)
		if err != nil {
			return nil, e.stopAfter(err)
		}
		cfg.ExternalFluss = bootstrap
		cfg.NodeID = int(e.nodeID)
		if tr != nil {
			cfg.OTLPEndpoint = tr.otlpEndpoint()
		}
		s, err = stack.Start(ctx, cfg, log)
		if err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(err.Error(), "is not free") {
			return nil, e.stopAfter(fmt.Errorf("start stack: %w", err))
		}
	}
	e.stack = s
	e.kafka = cfg.KafkaAddr()
	os.Setenv("FERRY_TEST_KAFKA_BOOTSTRAP", e.kafka)
	fmt.Fprintf(os.Stderr, "e2e/suite: stack ready in %v (Fluss %s, Kafka %s, tracing %v, logs %s)\n",
		time.Since(start).Round(time.Millisecond), bootstrap, e.kafka, tr != nil, filepath.Join(s.Dir(), "logs"))
	return e, nil
}

// servicesConfig is a stack of the six services (two transcodesvc) on free loopback ports, for
// the caller to point at a Fluss cluster (ExternalFluss, or Fluss ports of its own).
func servicesConfig(name, root string) (stack.Config, error) {
	ports, err := freePorts(16)
	if err != nil {
		return stack.Config{}, err
	}
	cfg := stack.DefaultConfig()
	cfg.Name = name
	cfg.Root = root
	cfg.CatalogPort = ports[0]
	cfg.TranscodePorts = []int{ports[1], ports[2]}
	cfg.AppendPort = ports[3]
	cfg.FrontdoorPort = ports[4]
	cfg.KafkaPort = ports[5]
	cfg.CatalogMetricsPort = ports[6]
	cfg.TranscodeMetricsPorts = []int{ports[7], ports[8]}
	cfg.AppendMetricsPort = ports[9]
	cfg.FrontdoorMetricsPort = ports[10]
	cfg.FetchPort = ports[11]
	cfg.FetchMetricsPort = ports[12]
	cfg.SchemaPort = ports[13]
	cfg.RegistryPort = ports[14]
	cfg.SchemaMetricsPort = ports[15]
	cfg.LogLevel = "debug"
	cfg.StopGrace = 10 * time.Second
	cfg.ReadyTimeout = 9 * time.Minute
	cfg.Keep = os.Getenv("FERRY_TEST_KEEP") == "1"
	cfg.Single = singleMode()
	return cfg, nil
}

// startOwnFluss starts a Fluss-only stack on free ports, or returns (nil, nil) with skipReason
// set when the Fluss jars are not installed and no cluster is required.
func startOwnFluss(ctx context.Context, root string, log *slog.Logger) (*stack.Stack, error) {
	jar := filepath.Join(root, ".cache", "fluss", "server-lib", "fluss-server-0.9.1-incubating.jar")
	if _, err := os.Stat(jar); err != nil {
		if os.Getenv(testenv.EnvRequireFluss) == "1" {
			return nil, fmt.Errorf("%s=1 but %s is unset and the Fluss jars are not installed (tools/install.sh)", testenv.EnvRequireFluss, testenv.EnvBootstrap)
		}
		skipReason = testenv.EnvBootstrap + " unset and Fluss not installed (run tools/install.sh or tools/test.sh)"
		return nil, nil
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	cfg := stack.TestConfig()
	cfg.Name = "e2e-fluss"
	cfg.Root = root
	cfg.ZooKeeperPort, cfg.CoordinatorPort, cfg.TabletPort = ports[0], ports[1], ports[2]
	cfg.ServerHeap = "512m"
	fmt.Fprintf(os.Stderr, "e2e/suite: %s unset: starting a Fluss cluster of its own on %v\n", testenv.EnvBootstrap, ports)
	return stack.Start(ctx, cfg, log)
}

// stopAfter stops whatever was started and returns err (joined with any stop failure).
func (e *suiteEnv) stopAfter(err error) error {
	if stopErr := e.stop(); stopErr != nil {
		return fmt.Errorf("%w (and stopping: %v)", err, stopErr)
	}
	return err
}

func (e *suiteEnv) stop() error {
	var errs []string
	if e.stack != nil {
		if err := e.stack.Stop(); err != nil {
			errs = append(errs, err.Error())
		}
		if e.stack.Kept() {
			fmt.Fprintln(os.Stderr, "e2e/suite: run directory kept:", e.stack.Dir())
		}
	}
	if e.tracing != nil {
		if err := e.tracing.stop(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if e.ownFluss != nil {
		if err := e.ownFluss.Stop(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// envSingle set to 1 runs the suite's stack in single-process mode (cmd/ferry, stack.Config.Single)
// and only the tests of singleTests; tools/test.sh runs those that way after the whole suite.
const envSingle = "FERRY_TEST_SINGLE"

// singleTests are the tests that make sense for one process: produce, consume, consumer groups,
// idempotence, crashes of the process (every service at once), a produce's trace and the Schema
// Registry's REST API. The others are about one service's process, the gRPC hops between them or
// a topology of their own.
var singleTests = []string{"TestProduceJSON", "TestConsumeWhatFerryWrote", "TestConsumerGroup", "TestFaultKill", "TestFaultKillIdempotentClients",
	"TestTracingOneTracePerProduce", "TestSchemaRegistryPythonClient", "TestAvroProduceConsumePython", "TestJSONSchemaProduceConsumePython",
	"TestProtobufProduceConsumePython"}

func singleMode() bool { return os.Getenv(envSingle) == "1" }

// process is the name of the stack process that runs the named service, or the process name
// itself (stack.Config.ProcessOf): in single-process mode every service is stack.Single.
func process(s *stack.Stack, name string) string { return s.Config().ProcessOf(name) }

// need returns the suite's stack and Fluss cluster, or skips (fails under
// FERRY_TEST_REQUIRE_FLUSS=1) when TestMain did not start one. In single-process mode it skips
// the tests not in singleTests.
func need(t *testing.T) (*suiteEnv, *testenv.Cluster) {
	t.Helper()
	if top, _, _ := strings.Cut(t.Name(), "/"); singleMode() && !slices.Contains(singleTests, top) {
		t.Skipf("%s=1: not one of the single-process tests", envSingle)
	}
	ensureStarted()
	if startErr != nil {
		t.Fatalf("e2e stack: %v", startErr)
	}
	if env == nil {
		if os.Getenv(testenv.EnvRequireFluss) == "1" && !testing.Short() {
			t.Fatalf("no stack: %s", skipReason)
		}
		t.Skip(skipReason)
	}
	return env, testenv.Fluss(t)
}

// freePorts reserves n distinct free loopback ports. They are released before use, so another
// process could take one in between; stack.Start then fails naming the port.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// TestSingleTestsListedInTestSh keeps tools/test.sh's selection of single-process tests the same
// as singleTests, which need() enforces.
func TestSingleTestsListedInTestSh(t *testing.T) {
	b, err := os.ReadFile("../../tools/test.sh")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "single_tests='"
	for _, line := range strings.Split(string(b), "\n") {
		if list, ok := strings.CutPrefix(line, prefix); ok {
			if got, want := strings.TrimSuffix(list, "'"), strings.Join(singleTests, "|"); got != want {
				t.Errorf("tools/test.sh runs %s in single-process mode, singleTests are %s", got, want)
			}
			return
		}
	}
	t.Errorf("tools/test.sh has no %s... line", prefix)
}
