package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Main classes of the Fluss 0.9.1 server jar. ZooKeeper is the copy shaded into fluss-server.
const (
	zooKeeperMain   = "org.apache.fluss.shaded.zookeeper3.org.apache.zookeeper.server.quorum.QuorumPeerMain"
	coordinatorMain = "org.apache.fluss.server.coordinator.CoordinatorServer"
	tabletMain      = "org.apache.fluss.server.tablet.TabletServer"
)

// flussLayout is where one stack's Fluss files live inside its run directory.
type flussLayout struct {
	dir string
}

func (l flussLayout) path(parts ...string) string {
	return filepath.Join(append([]string{l.dir}, parts...)...)
}

// writeFlussConfig writes the ZooKeeper, coordinator and tablet configuration files.
func writeFlussConfig(c Config, l flussLayout) error {
	for _, d := range []string{"zookeeper/data", "coordinator/conf", "coordinator/data", "tablet/conf", "tablet/data", "remote", "logs"} {
		if err := os.MkdirAll(l.path(d), 0o755); err != nil {
			return err
		}
	}
	zk := strings.Join([]string{
		"dataDir=" + l.path("zookeeper", "data"),
		"clientPort=" + strconv.Itoa(c.ZooKeeperPort),
		"clientPortAddress=" + c.Host,
		"maxClientCnxns=0",
		"admin.enableServer=false",
		"tickTime=2000",
		"initLimit=10",
		"syncLimit=5",
		"",
	}, "\n")
	server := func(port, internalPort int, dataDir string, extra ...string) string {
		lines := []string{"zookeeper.address: " + c.ZooKeeperAddr()}
		if c.FlussSASL == nil {
			lines = append(lines, "bind.listeners: FLUSS://"+c.addr(port))
		} else {
			lines = append(lines,
				"bind.listeners: INTERNAL://"+c.addr(internalPort)+", CLIENT://"+c.addr(port),
				"internal.listener.name: INTERNAL",
				"security.protocol.map: CLIENT:SASL, INTERNAL:PLAINTEXT",
				"security.sasl.enabled.mechanisms: PLAIN",
				"security.sasl.plain.jaas.config: "+jaasPlain(c.FlussSASL.Users))
		}
		lines = append(lines,
			"data.dir: "+dataDir,
			"remote.data.dir: "+l.path("remote"),
			"default.bucket.number: 1",
			"default.replication.factor: 1",
		)
		for _, k := range slices.Sorted(maps.Keys(c.FlussServerOptions)) {
			lines = append(lines, k+": "+c.FlussServerOptions[k])
		}
		return strings.Join(append(lines, extra...), "\n") + "\n"
	}
	log4j := strings.Join([]string{
		"rootLogger.level = INFO",
		"rootLogger.appenderRef.out.ref = out",
		"appender.out.type = Console",
		"appender.out.name = out",
		"appender.out.layout.type = PatternLayout",
		"appender.out.layout.pattern = %d{ISO8601} %-5p %c{1} [%t] - %m%n",
		"",
	}, "\n")
	files := map[string]string{
		l.path("zookeeper", "zookeeper.properties"):  zk,
		l.path("coordinator", "conf", "server.yaml"): server(c.CoordinatorPort, c.CoordinatorInternalPort, l.path("coordinator", "data")),
		l.path("tablet", "conf", "server.yaml"):      server(c.TabletPort, c.TabletInternalPort, l.path("tablet", "data"), "tablet-server.id: 0"),
		l.path("log4j2.properties"):                  log4j,
	}
	for i, port := range c.ExtraTabletPorts {
		dir := extraTablet(i)
		for _, d := range []string{"conf", "data"} {
			if err := os.MkdirAll(l.path(dir, d), 0o755); err != nil {
				return err
			}
		}
		files[l.path(dir, "conf", "server.yaml")] = server(port, 0, l.path(dir, "data"), fmt.Sprintf("tablet-server.id: %d", i+1))
	}
	for name, content := range files {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// extraTablet is the process name (and directory) of the i-th extra tablet server.
func extraTablet(i int) string { return fmt.Sprintf("tablet-%d", i+1) }

// jaasPlain is the JAAS line of Fluss's PLAIN login module for users (sorted, so the file is
// the same on every run). Config.Validate keeps quotes out of names and passwords.
func jaasPlain(users map[string]string) string {
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required")
	for _, u := range names {
		fmt.Fprintf(&b, " user_%s=\"%s\"", u, users[u])
	}
	b.WriteString(";")
	return b.String()
}

// javaCommand builds the JVM command line for one Fluss main class.
func javaCommand(c Config, l flussLayout, heap, mainClass string, args ...string) []string {
	argv := []string{
		c.Java,
		"-Xms64m", "-Xmx" + heap,
		// Two cores in CI: a serial collector keeps GC threads from competing with the tests.
		"-XX:+UseSerialGC",
		// Arrow (shaded into fluss-server) needs reflective access to java.nio buffers.
		"--add-opens=java.base/java.nio=ALL-UNNAMED",
		"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
		"-Dlog4j.configurationFile=" + l.path("log4j2.properties"),
		"-cp", filepath.Join(c.CacheDir(), "fluss", "server-lib") + string(filepath.Separator) + "*",
		mainClass,
	}
	return append(argv, args...)
}

// checkInstalled fails fast, with the fix, when tools/install.sh has not run.
func checkInstalled(c Config) error {
	if _, err := exec.LookPath(c.Java); err != nil {
		return fmt.Errorf("java not found (%q): install a JDK 17+ and run tools/install.sh", c.Java)
	}
	jar := filepath.Join(c.CacheDir(), "fluss", "server-lib", "fluss-server-0.9.1-incubating.jar")
	if _, err := os.Stat(jar); err != nil && c.ExternalFluss == "" {
		return fmt.Errorf("Fluss server jars missing (%s): run tools/install.sh", jar)
	}
	if _, err := os.Stat(filepath.Join(c.CacheDir(), "fluss", "flusshelper.jar")); err != nil {
		return errors.New("flusshelper not built: run tools/install.sh")
	}
	return nil
}

// checkPortsFree fails fast when another process (often an earlier stack) holds a port.
func checkPortsFree(c Config) error {
	for _, p := range c.namedPorts() {
		ln, err := net.Listen("tcp", c.addr(p.port))
		if err != nil {
			return fmt.Errorf("%s %s is not free (another stack running?): %w", p.field, c.addr(p.port), err)
		}
		ln.Close()
	}
	return nil
}

// waitPort waits until addr accepts TCP connections, failing early if p exits.
func waitPort(ctx context.Context, p *Process, addr string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		d := net.Dialer{Timeout: time.Second}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %s not listening: %w\n%s", p.Name, addr, ctx.Err(), indent(p.LogTail(20)))
		case <-p.Done():
			return fmt.Errorf("%s exited before listening on %s (%v); log %s:\n%s", p.Name, addr, p.ExitErr(), p.LogPath, indent(p.LogTail(30)))
		case <-tick.C:
		}
	}
}

// waitFlussReady runs `flusshelper wait-ready` until the coordinator answers metadata calls and
// every tablet server of c has registered, which is what tests and services need.
func waitFlussReady(ctx context.Context, c Config) error {
	want := 1 + len(c.ExtraTabletPorts)
	for {
		n, err := flussTablets(ctx, c)
		if err != nil {
			return err
		}
		if n >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Fluss at %s: %d of %d tablet servers registered", c.FlussBootstrap(), n, want)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// flussTablets is the number of tablet servers wait-ready reports, once it reports one.
func flussTablets(ctx context.Context, c Config) (int, error) {
	deadline, ok := ctx.Deadline()
	timeout := time.Minute
	if ok {
		timeout = time.Until(deadline)
	}
	if timeout < time.Second {
		return 0, errors.New("no time left to wait for Fluss")
	}
	args := []string{"wait-ready", "--bootstrap", c.FlussBootstrap(),
		"--timeout", strconv.FormatInt(timeout.Milliseconds(), 10) + "ms"}
	conf := c.FlussClientConf()
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--conf", k+"="+conf[k])
	}
	cmd := exec.CommandContext(ctx, c.HelperPath(), args...)
	var out, stderr bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("Fluss at %s not ready: %v: %s", c.FlussBootstrap(), err, strings.TrimSpace(stderr.String()))
	}
	var r struct {
		Servers []struct {
			Type string `json:"type"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return 0, fmt.Errorf("flusshelper wait-ready: bad output %q: %w", out.String(), err)
	}
	n := 0
	for _, s := range r.Servers {
		if s.Type == "TABLET_SERVER" {
			n++
		}
	}
	return n, nil
}

func indent(s string) string {
	if s == "" {
		return "    (log empty)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
