// Package stack runs Ferry's local stack as child processes: a real Apache Fluss cluster
// (ZooKeeper, CoordinatorServer, TabletServer from the Maven Central jars that tools/install.sh
// fetched) and, unless asked for Fluss only, the four Ferry services built from this tree.
// ferrystack (e2e/cmd/ferrystack) is its command line; tools/test.sh uses it for the tests.
package stack

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Service names, as used for binaries, log files and -services.
const (
	Catalog   = "catalogsvc"
	Transcode = "transcodesvc"
	Append    = "appendsvc"
	Fetch     = "fetchsvc"
	Schema    = "schemasvc"
	Frontdoor = "frontdoor"
)

// Internal gRPC mTLS settings (services/runtime) the stack sets for every service.
const (
	EnvGRPCTLSCA     = "FERRY_GRPC_TLS_CA"
	EnvGRPCTLSCert   = "FERRY_GRPC_TLS_CERT"
	EnvGRPCTLSKey    = "FERRY_GRPC_TLS_KEY"
	EnvGRPCPlaintext = "FERRY_GRPC_PLAINTEXT"
)

// ClientCertName is the certificate the stack issues for itself and for tests that call a
// service directly (health checks, fault tests): a caller that is none of the services.
const ClientCertName = "ferrystack"

// EnvStateDir is frontdoor's state directory setting. A frontdoor started without it in its
// ServiceSpec.Env gets <run dir>/state/<service name>, kept across Restart; set it to "" in
// the spec to run a frontdoor without persisted idempotence state.
const EnvStateDir = "FERRY_STATE_DIR"

// EnvTxnLogTable is frontdoor's transaction journal table. A frontdoor started without it in
// its ServiceSpec.Env gets a table of its stack's own (every frontdoor of the stack shares
// it), so that stacks on one Fluss cluster never recover each other's transactions.
const EnvTxnLogTable = "FERRY_TXN_LOG_TABLE"

// The Fluss credential settings of catalogsvc, appendsvc and fetchsvc. A spec that sets
// EnvFlussSASLUsername itself (wrong credentials, say) keeps its own.
const (
	EnvFlussSASLUsername     = "FERRY_FLUSS_SASL_USERNAME"
	EnvFlussSASLPasswordFile = "FERRY_FLUSS_SASL_PASSWORD_FILE"
)

// Single is the process that runs every service in single-process mode (Config.Single), and
// SinglePackage its main package (cmd/ferry).
const (
	Single        = "ferry"
	SinglePackage = "cmd/ferry"
)

// ServiceNames lists the Ferry services in start order: schemasvc needs catalogsvc,
// frontdoor needs catalogsvc, transcodesvc and appendsvc, and serves consumers when fetchsvc
// runs too; transcodesvc and fetchsvc resolve schema ids at schemasvc when it runs.
var ServiceNames = []string{Catalog, Schema, Transcode, Append, Fetch, Frontdoor}

// Config is everything a stack run needs. DefaultConfig is what `make up` runs; TestConfig moves
// every port out of the way of a developer's stack so tests can run next to it.
type Config struct {
	// Name prefixes the run directory .cache/run/<Name>-<random>/ (data and logs).
	Name string
	// Root is the repository root: go.work, .cache/ and e2e/flusshelper live there.
	Root string
	// Host is the address every server binds to and advertises.
	Host string

	ZooKeeperPort   int
	CoordinatorPort int
	TabletPort      int
	// ExternalFluss, when set, is the coordinator address (host:port) of a Fluss cluster that
	// someone else runs, e.g. the one tools/test.sh started: the stack then starts no ZooKeeper,
	// coordinator or tablet server (their ports are ignored) and points the services there.
	ExternalFluss string

	// FlussSASL, when set, is a Fluss cluster that requires SASL/PLAIN from its clients: the
	// stack's own cluster then authenticates on CoordinatorPort and TabletPort, while its servers
	// talk to each other on plaintext listeners at CoordinatorInternalPort and TabletInternalPort.
	// catalogsvc, appendsvc, fetchsvc, frontdoor, schemasvc and the helper log in with FlussSASL.User.
	FlussSASL               *FlussSASL
	CoordinatorInternalPort int
	TabletInternalPort      int
	// ExtraTabletPorts start one more tablet server per port (ids 1, 2, ...; processes
	// "tablet-1", ...), e.g. for tables with a replication factor above 1. Not with FlussSASL.
	ExtraTabletPorts []int
	// FlussServerOptions are added to every coordinator and tablet server's server.yaml
	// (e.g. log.replica.fetch.wait-max-time).
	FlussServerOptions map[string]string

	// FlussOnly skips the Ferry services.
	FlussOnly bool
	// Single runs every service in one process (cmd/ferry, process name Single) instead of one
	// process per service: its gRPC port is FrontdoorPort, its metrics port
	// FrontdoorMetricsPort; the other services' ports are not used.
	Single bool
	// Services selects which Ferry services to start; empty means all of ServiceNames.
	Services []string

	CatalogPort int
	// TranscodePorts starts one transcodesvc per port (it is stateless and scaled out).
	TranscodePorts []int
	AppendPort     int
	FetchPort      int
	// SchemaPort is schemasvc's gRPC port, RegistryPort its Schema Registry REST port.
	SchemaPort    int
	RegistryPort  int
	FrontdoorPort int // frontdoor's gRPC (health) port
	KafkaPort     int
	// The metrics ports: each service serves Prometheus /metrics there (FERRY_METRICS_ADDR).
	// 0 leaves a service without the endpoint. TranscodeMetricsPorts pairs with TranscodePorts
	// by index; a transcodesvc past its end has no endpoint.
	CatalogMetricsPort    int
	TranscodeMetricsPorts []int
	AppendMetricsPort     int
	FetchMetricsPort      int
	SchemaMetricsPort     int
	FrontdoorMetricsPort  int
	// AdvertisedAddr is what frontdoor tells Kafka clients; empty means Host:KafkaPort.
	AdvertisedAddr string
	NodeID         int

	// LogLevel, LogFormat and OTLPEndpoint are passed to every service (FERRY_LOG_LEVEL,
	// FERRY_LOG_FORMAT, OTEL_EXPORTER_OTLP_ENDPOINT; empty endpoint: no export).
	LogLevel     string
	LogFormat    string
	OTLPEndpoint string
	// PprofPortOffset, when positive, has every service serve Go profiles
	// (FERRY_PPROF_ADDR) on its gRPC port plus this offset, for profiling
	// the services under load (e2e/bench -pprof-port-offset).
	PprofPortOffset int
	// ServiceGOMAXPROCS, when positive, is every Ferry service's GOMAXPROCS: the
	// cores each may run Go code on at once, as a container's CPU limit sets it.
	ServiceGOMAXPROCS int

	// Java is the java executable for the Fluss servers.
	Java string
	// ServerHeap is the -Xmx of the coordinator and tablet server JVMs.
	ServerHeap string

	// ReadyTimeout bounds the whole start-up; StopGrace is how long each process gets between
	// SIGTERM and SIGKILL.
	ReadyTimeout time.Duration
	StopGrace    time.Duration
	// Keep leaves the run directory in place after Stop (for reading logs and data).
	Keep bool
	// GRPCPlaintext runs the services' internal gRPC without TLS. Off by default: the stack
	// issues a CA and a certificate per service into <run dir>/pki and the services use
	// mutual TLS, as in production.
	GRPCPlaintext bool
}

// FlussSASL is the SASL/PLAIN set-up of a secured Fluss cluster.
type FlussSASL struct {
	// Users are the user names and passwords the cluster accepts (its JAAS configuration).
	Users map[string]string
	// User and Password are what Ferry's services and the helper log in with.
	User, Password string
}

// FlussClientConf is the Fluss client configuration (client.security.*) a Java client needs
// to reach this stack's Fluss cluster, empty when the cluster needs no authentication.
func (c Config) FlussClientConf() map[string]string {
	if c.FlussSASL == nil {
		return nil
	}
	return map[string]string{
		"client.security.protocol":       "SASL",
		"client.security.sasl.mechanism": "PLAIN",
		"client.security.sasl.username":  c.FlussSASL.User,
		"client.security.sasl.password":  c.FlussSASL.Password,
	}
}

// DefaultConfig is the developer stack `make up` starts.
func DefaultConfig() Config {
	return Config{
		Name:            "dev",
		Host:            "127.0.0.1",
		ZooKeeperPort:   2181,
		CoordinatorPort: 9123,
		TabletPort:      9124,
		CatalogPort:     7101,
		TranscodePorts:  []int{7102, 7112},
		AppendPort:      7103,
		FrontdoorPort:   7104,
		FetchPort:       7105,
		SchemaPort:      7106,
		RegistryPort:    8081,
		KafkaPort:       9092,
		NodeID:          1, // as in deploy/compose.yaml
		LogLevel:        "info",
		LogFormat:       "text",
		Java:            "java",
		ServerHeap:      "1g",
		ReadyTimeout:    3 * time.Minute,
		StopGrace:       15 * time.Second,

		// Metrics: the gRPC port plus 100.
		CatalogMetricsPort:    7201,
		TranscodeMetricsPorts: []int{7202, 7212},
		AppendMetricsPort:     7203,
		FrontdoorMetricsPort:  7204,
		FetchMetricsPort:      7205,
		SchemaMetricsPort:     7206,
	}
}

// TestConfig is the Fluss-only stack tools/test.sh starts: ports that collide neither with
// DefaultConfig nor with a shared development cluster.
func TestConfig() Config {
	c := DefaultConfig()
	c.Name = "test"
	c.ZooKeeperPort = 28181
	c.CoordinatorPort = 28122
	c.TabletPort = 28123
	c.FlussOnly = true
	return c
}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// optionKey is a Fluss configuration option name.
var optionKey = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
var heapPattern = regexp.MustCompile(`^[1-9][0-9]*[kmgKMG]?$`)

// Validate reports the first bad field by name. It does not touch the network: port
// availability is checked when the stack starts.
func (c Config) Validate() error {
	if !namePattern.MatchString(c.Name) {
		return fmt.Errorf("stack config: Name %q: want 1-32 of [a-z0-9_-], starting with a letter or digit", c.Name)
	}
	if c.Root == "" {
		return errors.New("stack config: Root: empty (the repository root holding go.work)")
	}
	if _, err := os.Stat(filepath.Join(c.Root, "go.work")); err != nil {
		return fmt.Errorf("stack config: Root %q: no go.work there: %w", c.Root, err)
	}
	if c.Host == "" || strings.ContainsAny(c.Host, " /") {
		return fmt.Errorf("stack config: Host %q: want a hostname or IP address", c.Host)
	}
	if c.ExternalFluss != "" {
		if c.FlussOnly {
			return errors.New("stack config: ExternalFluss with FlussOnly: nothing would be started")
		}
		if err := checkHostPort(c.ExternalFluss); err != nil {
			return fmt.Errorf("stack config: ExternalFluss %q: %v", c.ExternalFluss, err)
		}
	}
	for k, v := range c.FlussServerOptions {
		if !optionKey.MatchString(k) || strings.ContainsAny(v, "\n\r") {
			return fmt.Errorf("stack config: FlussServerOptions: %q: want a dotted option name and a one-line value", k)
		}
	}
	if len(c.ExtraTabletPorts) > 0 && (c.FlussSASL != nil || c.ExternalFluss != "") {
		return errors.New("stack config: ExtraTabletPorts need the stack's own Fluss cluster without FlussSASL")
	}
	if sasl := c.FlussSASL; sasl != nil {
		if sasl.User == "" || sasl.Password == "" {
			return errors.New("stack config: FlussSASL: User and Password must be set")
		}
		if c.ExternalFluss == "" && sasl.Users[sasl.User] != sasl.Password {
			return fmt.Errorf("stack config: FlussSASL: Users must hold %q with its Password", sasl.User)
		}
		for u, pw := range sasl.Users {
			// They are written into a JAAS option line, user_<name>="<password>".
			if !namePattern.MatchString(u) || strings.ContainsAny(pw, "\"\\\n") {
				return fmt.Errorf("stack config: FlussSASL: user %q: want [a-z0-9_-] names and passwords without quotes, backslashes or newlines", u)
			}
		}
	}
	seen := map[int]string{}
	for _, p := range c.namedPorts() {
		if p.port < 1 || p.port > 65535 {
			return fmt.Errorf("stack config: %s %d: out of range 1..65535", p.field, p.port)
		}
		if other, dup := seen[p.port]; dup {
			return fmt.Errorf("stack config: %s %d: already used by %s", p.field, p.port, other)
		}
		seen[p.port] = p.field
	}
	if !c.FlussOnly {
		if len(c.TranscodePorts) == 0 && c.wants(Transcode) {
			return errors.New("stack config: TranscodePorts: empty, at least one transcodesvc is needed")
		}
		for _, s := range c.Services {
			if !contains(ServiceNames, s) {
				return fmt.Errorf("stack config: Services: unknown service %q (known: %s)", s, strings.Join(ServiceNames, ", "))
			}
		}
		if c.Single && len(c.Services) > 0 {
			return errors.New("stack config: Single runs every service; Services must be empty")
		}
		if c.wants(Frontdoor) {
			for _, dep := range []string{Catalog, Transcode, Append} {
				if !c.wants(dep) {
					return fmt.Errorf("stack config: Services: frontdoor needs %s", dep)
				}
			}
		}
	}
	if c.NodeID < 0 {
		return fmt.Errorf("stack config: NodeID %d: must be >= 0", c.NodeID)
	}
	if c.AdvertisedAddr != "" {
		if err := checkHostPort(c.AdvertisedAddr); err != nil {
			return fmt.Errorf("stack config: AdvertisedAddr %q: %v", c.AdvertisedAddr, err)
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("stack config: LogLevel %q: want debug|info|warn|error", c.LogLevel)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		return fmt.Errorf("stack config: LogFormat %q: want text|json", c.LogFormat)
	}
	if c.Java == "" {
		return errors.New("stack config: Java: empty")
	}
	if !heapPattern.MatchString(c.ServerHeap) {
		return fmt.Errorf("stack config: ServerHeap %q: want a JVM size like 512m or 1g", c.ServerHeap)
	}
	if c.ReadyTimeout <= 0 {
		return fmt.Errorf("stack config: ReadyTimeout %v: must be positive", c.ReadyTimeout)
	}
	if c.StopGrace <= 0 {
		return fmt.Errorf("stack config: StopGrace %v: must be positive", c.StopGrace)
	}
	return nil
}

// checkHostPort accepts host:port with a non-empty host and a port in 1..65535.
func checkHostPort(s string) error {
	host, port, ok := strings.Cut(s, ":")
	if !ok || host == "" || port == "" {
		return errors.New("want host:port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return errors.New("bad port")
	}
	return nil
}

type namedPort struct {
	field string
	port  int
}

// namedPorts lists every port the stack will listen on, with the field that sets it.
func (c Config) namedPorts() []namedPort {
	var ps []namedPort
	if c.ExternalFluss == "" {
		ps = append(ps, namedPort{"ZooKeeperPort", c.ZooKeeperPort},
			namedPort{"CoordinatorPort", c.CoordinatorPort},
			namedPort{"TabletPort", c.TabletPort})
		if c.FlussSASL != nil {
			ps = append(ps, namedPort{"CoordinatorInternalPort", c.CoordinatorInternalPort},
				namedPort{"TabletInternalPort", c.TabletInternalPort})
		}
		for i, p := range c.ExtraTabletPorts {
			ps = append(ps, namedPort{fmt.Sprintf("ExtraTabletPorts[%d]", i), p})
		}
	}
	if c.FlussOnly {
		return ps
	}
	// Metrics ports set to 0 are off and not listed.
	metrics := func(field string, port int) {
		if port != 0 {
			ps = append(ps, namedPort{field, port})
		}
	}
	if c.Single {
		ps = append(ps, namedPort{"FrontdoorPort", c.FrontdoorPort}, namedPort{"KafkaPort", c.KafkaPort},
			namedPort{"RegistryPort", c.RegistryPort})
		metrics("FrontdoorMetricsPort", c.FrontdoorMetricsPort)
		return ps
	}
	if c.wants(Catalog) {
		ps = append(ps, namedPort{"CatalogPort", c.CatalogPort})
		metrics("CatalogMetricsPort", c.CatalogMetricsPort)
	}
	if c.wants(Schema) {
		ps = append(ps, namedPort{"SchemaPort", c.SchemaPort}, namedPort{"RegistryPort", c.RegistryPort})
		metrics("SchemaMetricsPort", c.SchemaMetricsPort)
	}
	if c.wants(Transcode) {
		for i, p := range c.TranscodePorts {
			ps = append(ps, namedPort{fmt.Sprintf("TranscodePorts[%d]", i), p})
			metrics(fmt.Sprintf("TranscodeMetricsPorts[%d]", i), c.transcodeMetricsPort(i))
		}
	}
	if c.wants(Append) {
		ps = append(ps, namedPort{"AppendPort", c.AppendPort})
		metrics("AppendMetricsPort", c.AppendMetricsPort)
	}
	if c.wants(Fetch) {
		ps = append(ps, namedPort{"FetchPort", c.FetchPort})
		metrics("FetchMetricsPort", c.FetchMetricsPort)
	}
	if c.wants(Frontdoor) {
		ps = append(ps, namedPort{"FrontdoorPort", c.FrontdoorPort}, namedPort{"KafkaPort", c.KafkaPort})
		metrics("FrontdoorMetricsPort", c.FrontdoorMetricsPort)
	}
	return ps
}

// transcodeMetricsPort is the metrics port of the i-th transcodesvc, 0 if it has none.
func (c Config) transcodeMetricsPort(i int) int {
	if i < len(c.TranscodeMetricsPorts) {
		return c.TranscodeMetricsPorts[i]
	}
	return 0
}

// Ports maps every port this stack listens on to the Config field that sets it
// ("ZooKeeperPort", "TranscodePorts[1]", ...), for checks against deployment files.
func (c Config) Ports() map[string]int {
	m := map[string]int{}
	for _, p := range c.namedPorts() {
		m[p.field] = p.port
	}
	return m
}

// wants reports whether service s is part of this stack.
func (c Config) wants(s string) bool {
	if c.FlussOnly {
		return false
	}
	return len(c.Services) == 0 || contains(c.Services, s)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (c Config) addr(port int) string { return c.Host + ":" + strconv.Itoa(port) }

// FlussBootstrap is the coordinator address clients bootstrap from: ExternalFluss when set.
func (c Config) FlussBootstrap() string {
	if c.ExternalFluss != "" {
		return c.ExternalFluss
	}
	return c.addr(c.CoordinatorPort)
}

// RegistryURL is the Schema Registry REST API's base URL (schemasvc, or the single process).
func (c Config) RegistryURL() string { return "http://" + c.addr(c.RegistryPort) }

// TabletAddr is the tablet server's address.
func (c Config) TabletAddr() string { return c.addr(c.TabletPort) }

// ZooKeeperAddr is ZooKeeper's client address.
func (c Config) ZooKeeperAddr() string { return c.addr(c.ZooKeeperPort) }

// KafkaAddr is where Kafka clients connect to frontdoor.
func (c Config) KafkaAddr() string {
	if c.AdvertisedAddr != "" {
		return c.AdvertisedAddr
	}
	return c.addr(c.KafkaPort)
}

// HelperPath is the flusshelper wrapper script.
func (c Config) HelperPath() string {
	return filepath.Join(c.Root, "e2e", "flusshelper", "flusshelper")
}

// CacheDir is the repository's .cache directory (jars, binaries, run directories).
func (c Config) CacheDir() string { return filepath.Join(c.Root, ".cache") }

// ServiceBinDir is where the service binaries built from this tree go: a directory per
// checkout, so that git worktrees sharing one .cache never start each other's services.
func (c Config) ServiceBinDir() string {
	sum := sha256.Sum256([]byte(c.Root))
	return filepath.Join(c.CacheDir(), "bin", "services-"+hex.EncodeToString(sum[:6]))
}

// ServiceSpec describes one Ferry service process: which package to build, the environment it
// runs with, and its ports. It is data so deployment files can be checked against it.
type ServiceSpec struct {
	// Name is unique per process ("transcodesvc", "transcodesvc-2", ...).
	Name string
	// Package is the main package directory relative to Root; its last element is the binary
	// name (BinaryName).
	Package string
	// GRPCAddr is FERRY_LISTEN; the gRPC health service answers there.
	GRPCAddr string
	// Env is the complete service environment (empty values are not exported).
	Env map[string]string
	// Ports names every port the process listens on ("grpc", "kafka", "metrics").
	Ports map[string]int
}

// ServiceSpecs returns the services this stack starts, in start order.
func (c Config) ServiceSpecs() []ServiceSpec {
	if c.FlussOnly {
		return nil
	}
	common := func(port, metricsPort int) map[string]string {
		env := map[string]string{
			"FERRY_LISTEN":                c.addr(port),
			"FERRY_LOG_LEVEL":             c.LogLevel,
			"FERRY_LOG_FORMAT":            c.LogFormat,
			"OTEL_EXPORTER_OTLP_ENDPOINT": c.OTLPEndpoint,
			"FERRY_METRICS_ADDR":          "",
		}
		if metricsPort != 0 {
			env["FERRY_METRICS_ADDR"] = c.addr(metricsPort)
		}
		if c.PprofPortOffset > 0 {
			env["FERRY_PPROF_ADDR"] = c.addr(port + c.PprofPortOffset)
		}
		if c.ServiceGOMAXPROCS > 0 {
			env["GOMAXPROCS"] = strconv.Itoa(c.ServiceGOMAXPROCS)
		}
		return env
	}
	// ports names a service's ports, "metrics" only when it has one.
	ports := func(named map[string]int, metricsPort int) map[string]int {
		if metricsPort != 0 {
			named["metrics"] = metricsPort
		}
		return named
	}
	if c.Single {
		env := common(c.FrontdoorPort, c.FrontdoorMetricsPort)
		env["FERRY_FLUSS_BOOTSTRAP"] = c.FlussBootstrap()
		env["FERRY_KAFKA_LISTEN"] = c.addr(c.KafkaPort)
		env["FERRY_ADVERTISED_ADDR"] = c.KafkaAddr()
		env["FERRY_NODE_ID"] = strconv.Itoa(c.NodeID)
		env["FERRY_REGISTRY_LISTEN"] = c.addr(c.RegistryPort)
		return []ServiceSpec{{Name: Single, Package: SinglePackage, GRPCAddr: c.addr(c.FrontdoorPort),
			Env: env, Ports: ports(map[string]int{"grpc": c.FrontdoorPort, "kafka": c.KafkaPort, "registry": c.RegistryPort}, c.FrontdoorMetricsPort)}}
	}
	var specs []ServiceSpec
	if c.wants(Catalog) {
		env := common(c.CatalogPort, c.CatalogMetricsPort)
		env["FERRY_FLUSS_BOOTSTRAP"] = c.FlussBootstrap()
		specs = append(specs, ServiceSpec{Name: Catalog, Package: Catalog, GRPCAddr: c.addr(c.CatalogPort),
			Env: env, Ports: ports(map[string]int{"grpc": c.CatalogPort}, c.CatalogMetricsPort)})
	}
	if c.wants(Schema) {
		env := common(c.SchemaPort, c.SchemaMetricsPort)
		env["FERRY_FLUSS_BOOTSTRAP"] = c.FlussBootstrap()
		env["FERRY_CATALOG_ADDR"] = c.addr(c.CatalogPort)
		env["FERRY_REGISTRY_LISTEN"] = c.addr(c.RegistryPort)
		specs = append(specs, ServiceSpec{Name: Schema, Package: Schema, GRPCAddr: c.addr(c.SchemaPort),
			Env: env, Ports: ports(map[string]int{"grpc": c.SchemaPort, "registry": c.RegistryPort}, c.SchemaMetricsPort)})
	}
	// schemaEnv points a service at schemasvc's gRPC address when the stack runs it.
	schemaEnv := func(env map[string]string) map[string]string {
		if c.wants(Schema) {
			env["FERRY_SCHEMA_ADDR"] = c.addr(c.SchemaPort)
		}
		return env
	}
	var transcodeAddrs []string
	if c.wants(Transcode) {
		for i, p := range c.TranscodePorts {
			name := Transcode
			if i > 0 {
				name = fmt.Sprintf("%s-%d", Transcode, i+1)
			}
			transcodeAddrs = append(transcodeAddrs, c.addr(p))
			mp := c.transcodeMetricsPort(i)
			specs = append(specs, ServiceSpec{Name: name, Package: Transcode, GRPCAddr: c.addr(p),
				Env: schemaEnv(common(p, mp)), Ports: ports(map[string]int{"grpc": p}, mp)})
		}
	}
	if c.wants(Append) {
		env := common(c.AppendPort, c.AppendMetricsPort)
		env["FERRY_FLUSS_BOOTSTRAP"] = c.FlussBootstrap()
		specs = append(specs, ServiceSpec{Name: Append, Package: Append, GRPCAddr: c.addr(c.AppendPort),
			Env: env, Ports: ports(map[string]int{"grpc": c.AppendPort}, c.AppendMetricsPort)})
	}
	if c.wants(Fetch) {
		env := schemaEnv(common(c.FetchPort, c.FetchMetricsPort))
		env["FERRY_FLUSS_BOOTSTRAP"] = c.FlussBootstrap()
		specs = append(specs, ServiceSpec{Name: Fetch, Package: Fetch, GRPCAddr: c.addr(c.FetchPort),
			Env: env, Ports: ports(map[string]int{"grpc": c.FetchPort}, c.FetchMetricsPort)})
	}
	if c.wants(Frontdoor) {
		env := common(c.FrontdoorPort, c.FrontdoorMetricsPort)
		env["FERRY_KAFKA_LISTEN"] = c.addr(c.KafkaPort)
		env["FERRY_ADVERTISED_ADDR"] = c.KafkaAddr()
		env["FERRY_NODE_ID"] = strconv.Itoa(c.NodeID)
		env["FERRY_CATALOG_ADDR"] = c.addr(c.CatalogPort)
		env["FERRY_TRANSCODE_ADDR"] = strings.Join(transcodeAddrs, ",")
		env["FERRY_APPEND_ADDR"] = c.addr(c.AppendPort)
		env["FERRY_FLUSS_BOOTSTRAP"] = c.FlussBootstrap()
		if c.wants(Fetch) {
			env["FERRY_FETCH_ADDR"] = c.addr(c.FetchPort)
		}
		specs = append(specs, ServiceSpec{Name: Frontdoor, Package: Frontdoor, GRPCAddr: c.addr(c.FrontdoorPort),
			Env: env, Ports: ports(map[string]int{"grpc": c.FrontdoorPort, "kafka": c.KafkaPort}, c.FrontdoorMetricsPort)})
	}
	return specs
}

// BinaryName is the name of the spec's binary in .cache/bin and of its internal gRPC
// certificate: the last element of Package ("frontdoor", "ferry").
func (s ServiceSpec) BinaryName() string { return filepath.Base(s.Package) }

// Runs reports whether the spec's process runs the named service (one of ServiceNames): its
// own process, or the single process, which runs them all.
func (s ServiceSpec) Runs(service string) bool {
	return s.Package == service || s.Package == SinglePackage
}

// ProcessOf is the name of the process that runs the named service (one of ServiceNames): the
// service's own, or Single in single-process mode.
func (c Config) ProcessOf(service string) string {
	if c.Single {
		return Single
	}
	return service
}

// TestEnv is the environment tests need to reach this stack (see services/testenv).
func (c Config) TestEnv() map[string]string {
	env := map[string]string{
		"FERRY_TEST_FLUSS_BOOTSTRAP": c.FlussBootstrap(),
		"FERRY_TEST_FLUSS_HELPER":    c.HelperPath(),
	}
	if c.wants(Frontdoor) {
		env["FERRY_TEST_KAFKA_BOOTSTRAP"] = c.KafkaAddr()
	}
	if c.Single || c.wants(Schema) {
		env["FERRY_TEST_SCHEMA_REGISTRY_URL"] = c.RegistryURL()
	}
	return env
}

// FindRoot walks up from dir to the directory holding go.work.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work in %s or any parent: run from inside the Ferry repository", dir)
		}
	}
}
