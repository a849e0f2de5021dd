package jaeger

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrygw/ferry/e2e/stack"
)

// Config is the Jaeger v2 configuration every instance runs with; see config.yaml for what it
// enables and the environment variables it reads.
//
//go:embed config.yaml
var Config []byte

// Environment variables config.yaml reads. Start sets all of them for the child.
const (
	EnvOTLPEndpoint      = "FERRY_JAEGER_OTLP_GRPC_ENDPOINT"
	EnvQueryHTTPEndpoint = "FERRY_JAEGER_QUERY_HTTP_ENDPOINT"
	EnvQueryGRPCEndpoint = "FERRY_JAEGER_QUERY_GRPC_ENDPOINT"
	EnvMaxTraces         = "FERRY_JAEGER_MAX_TRACES"
	EnvLogLevel          = "FERRY_JAEGER_LOG_LEVEL"
	EnvUIAssets          = "FERRY_JAEGER_UI_ASSETS"
)

// EnvBinary names the Jaeger binary explicitly, overriding the search in BinaryPath.
const EnvBinary = "FERRY_JAEGER_BIN"

// Default ports, the ones Jaeger documents: `make up` uses them so the UI is where people expect
// it. Tests should leave Options' ports at 0 so they never collide with a running stack.
const (
	DefaultOTLPPort      = 4317
	DefaultQueryPort     = 16686
	DefaultQueryGRPCPort = 16685
	DefaultMaxTraces     = 100_000
)

const (
	defaultReadyTimeout = 60 * time.Second
	defaultStopGrace    = 10 * time.Second
	logFileName         = "jaeger.log"
	configFileName      = "jaeger.yaml"
)

// ErrNotInstalled means no Jaeger binary was found; run tools/install-jaeger.sh.
var ErrNotInstalled = errors.New("jaeger binary not installed (run tools/install-jaeger.sh, or set " + EnvBinary + ")")

// Options configures one Jaeger process. The zero value of a port asks for a free loopback port.
type Options struct {
	// OTLPPort is the OTLP/gRPC receiver's port on 127.0.0.1.
	OTLPPort int
	// QueryPort is the query service's HTTP port on 127.0.0.1 (API and UI).
	QueryPort int
	// QueryGRPCPort is the query service's gRPC port on 127.0.0.1. Jaeger always opens it; Ferry
	// does not use it. Zero lets Jaeger bind an ephemeral port.
	QueryGRPCPort int
	// Dir receives the generated configuration and jaeger.log. Required: tests pass t.TempDir().
	Dir string
	// Binary is the jaeger executable; empty means BinaryPath().
	Binary string
	// MaxTraces bounds the in-memory store (oldest traces are evicted); zero means
	// DefaultMaxTraces. Must exceed 100, the depth of WaitForTrace's searches.
	MaxTraces int
	// UIAssets is a directory holding a built Jaeger web UI (jaeger-ui's build output, with
	// index.html) to serve at QueryURL; empty serves the binary's placeholder page. The Go
	// module does not ship the UI, so the query API is always there but the UI is not.
	UIAssets string
	// ReadyTimeout bounds the wait for readiness; zero means 60s.
	ReadyTimeout time.Duration
	// Logger receives start/stop lines; nil means slog.Default().
	Logger *slog.Logger
}

// Validate names the first bad field.
func (o Options) Validate() error {
	for _, p := range []struct {
		name string
		v    int
	}{{"OTLPPort", o.OTLPPort}, {"QueryPort", o.QueryPort}, {"QueryGRPCPort", o.QueryGRPCPort}} {
		if p.v < 0 || p.v > 65535 {
			return fmt.Errorf("jaeger: Options.%s %d out of range 0..65535", p.name, p.v)
		}
	}
	if o.OTLPPort != 0 && o.OTLPPort == o.QueryPort {
		return fmt.Errorf("jaeger: Options.QueryPort %d is also Options.OTLPPort", o.QueryPort)
	}
	if o.QueryGRPCPort != 0 && (o.QueryGRPCPort == o.OTLPPort || o.QueryGRPCPort == o.QueryPort) {
		return fmt.Errorf("jaeger: Options.QueryGRPCPort %d is also used by another listener", o.QueryGRPCPort)
	}
	if o.Dir == "" {
		return errors.New("jaeger: Options.Dir is empty")
	}
	// The memory store refuses searches as deep as its bound, and WaitForTrace searches
	// waitLimit deep.
	if o.MaxTraces < 0 || (o.MaxTraces > 0 && o.MaxTraces <= waitLimit) {
		return fmt.Errorf("jaeger: Options.MaxTraces %d must be 0 (default %d) or above %d", o.MaxTraces, DefaultMaxTraces, waitLimit)
	}
	if o.UIAssets != "" {
		if _, err := os.Stat(filepath.Join(o.UIAssets, "index.html")); err != nil {
			return fmt.Errorf("jaeger: Options.UIAssets %q has no index.html: %w", o.UIAssets, err)
		}
	}
	if o.ReadyTimeout < 0 {
		return fmt.Errorf("jaeger: Options.ReadyTimeout %v is negative", o.ReadyTimeout)
	}
	return nil
}

// BinaryPath finds the jaeger executable: $FERRY_JAEGER_BIN if set, else .cache/bin/jaeger in the
// repository containing the working directory (found by walking up to go.work), else `jaeger` on
// PATH. It returns ErrNotInstalled (wrapped) when none exists.
func BinaryPath() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
				p := filepath.Join(dir, ".cache", "bin", "jaeger")
				if checkExecutable(p) == nil {
					return p, nil
				}
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if p, err := exec.LookPath("jaeger"); err == nil {
		return p, nil
	}
	return "", ErrNotInstalled
}

func checkExecutable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s does not exist", ErrNotInstalled, p)
		}
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// Jaeger is a running Jaeger process. Stop it when done; it also dies with the parent process.
type Jaeger struct {
	// Client queries this instance's API.
	*Client

	otlpAddr  string
	queryAddr string
	grpcAddr  string
	dir       string
	log       *slog.Logger

	proc     *stack.Process
	stopOnce sync.Once
	stopErr  error
}

// OTLPEndpoint is the receiver's host:port, for otlptracegrpc.WithEndpoint or
// OTEL_EXPORTER_OTLP_ENDPOINT (with an http:// scheme, as the exporter wants for plaintext).
func (j *Jaeger) OTLPEndpoint() string { return j.otlpAddr }

// QueryURL is the base URL of the query API and UI, e.g. http://127.0.0.1:16686.
func (j *Jaeger) QueryURL() string { return "http://" + j.queryAddr }

// Dir is the run directory holding jaeger.yaml and jaeger.log.
func (j *Jaeger) Dir() string { return j.dir }

// LogPath is Jaeger's combined stdout/stderr.
func (j *Jaeger) LogPath() string { return filepath.Join(j.dir, logFileName) }

// Pid is the child's process id, which is also its process group id.
func (j *Jaeger) Pid() int { return j.proc.Pid() }

// Done is closed when the process has exited.
func (j *Jaeger) Done() <-chan struct{} { return j.proc.Done() }

// Start launches Jaeger with opts and returns once both its OTLP receiver and its query API
// answer. On failure nothing is left running and the error carries the end of jaeger.log.
func Start(ctx context.Context, opts Options) (*Jaeger, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = BinaryPath(); err != nil {
			return nil, err
		}
	} else if err := checkExecutable(bin); err != nil {
		return nil, fmt.Errorf("jaeger: Options.Binary: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("jaeger: run directory: %w", err)
	}
	// Ports picked here are free now, but another process may bind one before Jaeger does;
	// Jaeger then exits at once. Only when this package picked the ports is a retry with fresh
	// ones the right answer; a clash on a port the caller chose is the caller's to resolve.
	auto := opts.OTLPPort == 0 || opts.QueryPort == 0
	for attempt := 1; ; attempt++ {
		j, err := start(ctx, opts, bin, log)
		if err == nil || !auto || attempt == 3 || !errors.Is(err, errAddrInUse) {
			return j, err
		}
		log.Warn("jaeger lost a picked port to another process; retrying with new ports", "attempt", attempt, "err", err)
	}
}

// errAddrInUse marks a start-up failure caused by a port taken between picking and binding.
var errAddrInUse = errors.New("a listen address was taken")

func start(ctx context.Context, opts Options, bin string, log *slog.Logger) (*Jaeger, error) {
	ports, err := pickPorts(opts.OTLPPort, opts.QueryPort)
	if err != nil {
		return nil, err
	}
	otlpPort, queryPort := ports[0], ports[1]
	if opts.QueryGRPCPort != 0 && (opts.QueryGRPCPort == otlpPort || opts.QueryGRPCPort == queryPort) {
		return nil, fmt.Errorf("jaeger: Options.QueryGRPCPort %d was also picked as a free port; choose all three ports or none", opts.QueryGRPCPort)
	}
	maxTraces := opts.MaxTraces
	if maxTraces == 0 {
		maxTraces = DefaultMaxTraces
	}
	j := &Jaeger{
		otlpAddr:  hostPort(otlpPort),
		queryAddr: hostPort(queryPort),
		grpcAddr:  hostPort(opts.QueryGRPCPort),
		dir:       opts.Dir,
		log:       log,
	}
	j.Client = NewClient(j.QueryURL())

	cfgPath := filepath.Join(opts.Dir, configFileName)
	if err := os.WriteFile(cfgPath, Config, 0o644); err != nil {
		return nil, fmt.Errorf("jaeger: write config: %w", err)
	}
	// The log is started afresh: the ready marker must come from this run.
	if err := os.Remove(j.LogPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("jaeger: log file: %w", err)
	}
	env := append(childEnv(os.Environ()),
		EnvOTLPEndpoint+"="+j.otlpAddr,
		EnvQueryHTTPEndpoint+"="+j.queryAddr,
		EnvQueryGRPCEndpoint+"="+j.grpcAddr,
		EnvMaxTraces+"="+strconv.Itoa(maxTraces),
		// Info at least: readiness waits for the collector's info-level "ready" line.
		EnvLogLevel+"=info",
		EnvUIAssets+"="+opts.UIAssets,
	)
	// A process group tied to this process (see stack.StartProcess): Stop reaches the whole
	// group, and Jaeger never outlives a test binary killed by a timeout or SIGKILL.
	proc, err := stack.StartProcess("jaeger", []string{bin, "--config", cfgPath}, env, opts.Dir, j.LogPath())
	if err != nil {
		return nil, fmt.Errorf("jaeger: %w", err)
	}
	j.proc = proc
	log.Info("jaeger starting", "pid", proc.Pid(), "otlp", j.otlpAddr, "query", j.QueryURL(), "dir", opts.Dir)

	timeout := opts.ReadyTimeout
	if timeout == 0 {
		timeout = defaultReadyTimeout
	}
	readyCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := j.waitReady(readyCtx); err != nil {
		stopErr := j.Stop()
		if inUse, _ := fileContains(j.LogPath(), "address already in use"); inUse {
			err = fmt.Errorf("%w: %w", errAddrInUse, err)
		}
		return nil, errors.Join(fmt.Errorf("jaeger: not ready: %w\n--- %s (last lines)\n%s", err, j.LogPath(), proc.LogTail(30)), stopErr)
	}
	log.Info("jaeger ready", "pid", proc.Pid(), "ui", j.QueryURL())
	return j, nil
}

// readyMarker is what the OpenTelemetry Collector core logs once every extension and pipeline
// component has started. It is the only signal that Jaeger itself, not some other process that
// happens to hold the port, owns the listeners.
const readyMarker = "Everything is ready"

// waitReady polls until the collector reports that all components started, the OTLP port
// accepts connections and the query API answers; it fails early if the child exits.
func (j *Jaeger) waitReady(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-j.proc.Done():
			return fmt.Errorf("process exited during start-up: %v", j.proc.ExitErr())
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last check: %v)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-tick.C:
		}
		if last = j.checkReady(ctx); last == nil {
			return nil
		}
	}
}

func (j *Jaeger) checkReady(ctx context.Context) error {
	logged, err := fileContains(j.LogPath(), readyMarker)
	if err != nil {
		return err
	}
	if !logged {
		return errors.New("collector has not logged " + strconv.Quote(readyMarker))
	}
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", j.otlpAddr)
	if err != nil {
		return fmt.Errorf("OTLP receiver: %w", err)
	}
	c.Close()
	callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := j.Services(callCtx); err != nil {
		return fmt.Errorf("query API: %w", err)
	}
	return nil
}

// Stop sends SIGTERM to Jaeger's process group, waits up to 10s for a graceful exit, then
// SIGKILLs the group. It is idempotent; the error is non-nil only if the process could not be
// made to exit.
func (j *Jaeger) Stop() error {
	j.stopOnce.Do(func() { j.stopErr = j.stop() })
	return j.stopErr
}

func (j *Jaeger) stop() error {
	if err := j.proc.Stop(defaultStopGrace); err != nil {
		return fmt.Errorf("jaeger: %w", err)
	}
	j.log.Info("jaeger stopped", "pid", j.proc.Pid())
	return nil
}

// ExitErr is the exit status once the process has ended (nil for a clean exit or while it runs).
func (j *Jaeger) ExitErr() error { return j.proc.ExitErr() }

// childEnv drops settings that would change the child's behaviour behind config.yaml's back: a
// developer's own FERRY_JAEGER_* values and OTEL_* SDK variables (Jaeger embeds the OTel SDK).
func childEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, "FERRY_JAEGER_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// pickPorts returns the ports, each checked free on 127.0.0.1, with every 0 replaced by a free
// port. All probe listeners stay open until every port is chosen, so two zeros never yield the
// same port; checking explicit ports up front turns a clash into a precise error instead of a
// start-up timeout.
func pickPorts(ports ...int) ([]int, error) {
	names := []string{"OTLP port", "query port"}
	out := make([]int, len(ports))
	for i, p := range ports {
		l, err := net.Listen("tcp", hostPort(p))
		if err != nil {
			return nil, fmt.Errorf("jaeger: %s: %w", names[i], err)
		}
		defer l.Close()
		out[i] = l.Addr().(*net.TCPAddr).Port
	}
	return out, nil
}

func fileContains(path, s string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return bytes.Contains(b, []byte(s)), nil
}

// httpClient is shared by all Clients: short-lived loopback requests, no proxies (a developer's
// HTTP_PROXY must not capture 127.0.0.1 traffic).
var httpClient = &http.Client{Transport: &http.Transport{
	Proxy:               nil,
	MaxIdleConnsPerHost: 4,
	IdleConnTimeout:     30 * time.Second,
}}
