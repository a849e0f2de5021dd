package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ferrygw/ferry/services/testenv/devpki"
)

const pidFile = "ferrystack.pid"

// Stack is a running set of child processes. Start returns it ready; Stop ends it.
type Stack struct {
	cfg  Config
	dir  string
	log  *slog.Logger
	keep bool // keep the run directory (Config.Keep, or a failure worth reading)

	// mu guards procs and specs: fault tests kill and restart services while others read.
	mu    sync.Mutex
	procs []*Process             // start order (a restarted service keeps its place)
	specs map[string]ServiceSpec // by ServiceSpec.Name: how to start each service again
	fluss map[string]flussStep   // by process name ("tablet"…): how to start it again
}

// flussStep is how one Fluss process (ZooKeeper, coordinator, tablet server) is started.
type flussStep struct {
	name string
	argv []string
	addr string
}

// Start validates cfg, starts Fluss (and the services unless cfg.FlussOnly) and returns once
// everything is ready, or stops what it started and returns an error naming the culprit.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Stack, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkInstalled(cfg); err != nil {
		return nil, err
	}
	if err := checkPortsFree(cfg); err != nil {
		return nil, err
	}
	runRoot := filepath.Join(cfg.CacheDir(), "run")
	if err := os.MkdirAll(runRoot, 0o755); err != nil {
		return nil, err
	}
	removeStaleRuns(runRoot, log)
	dir, err := os.MkdirTemp(runRoot, cfg.Name+"-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return nil, err
	}
	s := &Stack{cfg: cfg, dir: dir, log: log, keep: cfg.Keep, specs: map[string]ServiceSpec{}, fluss: map[string]flussStep{}}
	readyCtx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	if err := s.start(readyCtx); err != nil {
		interrupted := ctx.Err() != nil
		// Keep the logs that explain a failure, but not after a deliberate interrupt.
		s.keep = s.keep || !interrupted
		if stopErr := s.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		if s.keep {
			err = fmt.Errorf("%w\n(run directory kept: %s)", err, dir)
		}
		return nil, err
	}
	return s, nil
}

func (s *Stack) start(ctx context.Context) error {
	c := s.cfg
	specs := c.ServiceSpecs()
	// Build first: a compile error should not cost a Fluss start-up.
	if len(specs) > 0 {
		s.log.Info("building services")
		if err := buildServices(ctx, c, specs); err != nil {
			return err
		}
	}
	logs := filepath.Join(s.dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	if len(specs) > 0 && !c.GRPCPlaintext {
		// One certificate per service package (instances of a package share
		// it, as replicas of one Deployment would) and one for the stack.
		names := append([]string{ClientCertName, Single}, ServiceNames...)
		if err := devpki.Generate(s.PKIDir(), names, c.Host); err != nil {
			return fmt.Errorf("issue internal gRPC certificates: %w", err)
		}
		s.log.Info("internal gRPC uses mutual TLS", "pki", s.PKIDir())
	}
	if c.ExternalFluss == "" {
		if err := s.startFluss(ctx, logs); err != nil {
			return err
		}
	} else {
		// Someone else's cluster: only make sure it is usable before the services need it.
		start := time.Now()
		if err := waitFlussReady(ctx, c); err != nil {
			return err
		}
		s.log.Info("external Fluss ready", "bootstrap", c.FlussBootstrap(), "elapsed", time.Since(start).Round(time.Millisecond))
	}
	for _, spec := range specs {
		if err := s.startService(ctx, spec); err != nil {
			return err
		}
	}
	return nil
}

// startFluss starts ZooKeeper, the coordinator and the tablet server and waits until a tablet
// server has registered.
func (s *Stack) startFluss(ctx context.Context, logs string) error {
	c := s.cfg
	l := flussLayout{dir: filepath.Join(s.dir, "fluss")}
	if err := writeFlussConfig(c, l); err != nil {
		return fmt.Errorf("write Fluss config: %w", err)
	}
	steps := []flussStep{
		{"zookeeper", javaCommand(c, l, "256m", zooKeeperMain, l.path("zookeeper", "zookeeper.properties")), c.ZooKeeperAddr()},
		{"coordinator", javaCommand(c, l, c.ServerHeap, coordinatorMain, "--configDir", l.path("coordinator", "conf")), c.FlussBootstrap()},
		{"tablet", javaCommand(c, l, c.ServerHeap, tabletMain, "--configDir", l.path("tablet", "conf")), c.TabletAddr()},
	}
	for i, port := range c.ExtraTabletPorts {
		name := extraTablet(i)
		steps = append(steps, flussStep{name, javaCommand(c, l, c.ServerHeap, tabletMain, "--configDir", l.path(name, "conf")), c.addr(port)})
	}
	start := time.Now()
	var started []*Process
	for _, st := range steps {
		s.mu.Lock()
		s.fluss[st.name] = st
		s.mu.Unlock()
		p, err := s.startFlussProcess(ctx, st)
		if err != nil {
			return err
		}
		started = append(started, p)
		s.log.Info("listening", "process", st.name, "addr", st.addr, "pid", p.Pid(), "elapsed", time.Since(start).Round(time.Millisecond))
	}
	if err := waitFlussReady(ctx, c); err != nil {
		return fmt.Errorf("%w\ncoordinator log:\n%s\ntablet log:\n%s", err,
			indent(started[1].LogTail(15)), indent(started[2].LogTail(15)))
	}
	s.log.Info("Fluss ready", "bootstrap", c.FlussBootstrap(), "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

// startFlussProcess starts one Fluss process (replacing an earlier one of its name in the
// process list) and waits until its port accepts connections. Its log is appended to, so a
// restarted server's log follows the one before.
func (s *Stack) startFlussProcess(ctx context.Context, st flussStep) (*Process, error) {
	logPath := filepath.Join(s.dir, "logs", st.name+".log")
	p, err := StartProcess(st.name, st.argv, os.Environ(), s.dir, logPath)
	if err != nil {
		return nil, err
	}
	s.replaceProcess(p)
	return p, waitPort(ctx, p, st.addr)
}

// replaceProcess puts p in the process list in the place of the process of the same name, or
// at the end.
func (s *Stack) replaceProcess(p *Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, old := range s.procs {
		if old.Name == p.Name {
			s.procs[i] = p
			return
		}
	}
	s.procs = append(s.procs, p)
}

// startService starts one service process from spec (its binary must be built) and waits until
// it serves: gRPC health SERVING and, for a spec with a "kafka" port, that port accepting.
// A service of the same name that already ran is replaced in the process list.
func (s *Stack) startService(ctx context.Context, spec ServiceSpec) error {
	c := s.cfg
	bin := filepath.Join(c.ServiceBinDir(), spec.BinaryName())
	logPath := filepath.Join(s.dir, "logs", spec.Name+".log")
	env := ServiceEnv(spec)
	if _, set := spec.Env[EnvStateDir]; spec.Runs(Frontdoor) && !set {
		// Each frontdoor keeps its idempotence anchors in a directory of
		// its own that outlives the process, so Restart (or a kill and a
		// restart) finds them again.
		env = append(env, EnvStateDir+"="+filepath.Join(s.dir, "state", spec.Name))
	}
	if _, set := spec.Env[EnvTxnLogTable]; spec.Runs(Frontdoor) && !set {
		env = append(env, EnvTxnLogTable+"=ferry_system."+s.txnLogTable())
	}
	if _, set := spec.Env[EnvFlussSASLUsername]; c.FlussSASL != nil && !set && (spec.Runs(Catalog) || spec.Runs(Append) || spec.Runs(Fetch) || spec.Runs(Frontdoor) || spec.Runs(Schema)) {
		file, err := s.writeSecret("fluss-sasl-password", c.FlussSASL.Password)
		if err != nil {
			return err
		}
		env = append(env, EnvFlussSASLUsername+"="+c.FlussSASL.User, EnvFlussSASLPasswordFile+"="+file)
	}
	env = append(env, s.grpcSecurityEnv(spec)...)
	p, err := StartProcess(spec.Name, []string{bin}, env, c.Root, logPath)
	if err != nil {
		return err
	}
	s.replaceProcess(p)
	s.mu.Lock()
	s.specs[spec.Name] = spec
	s.mu.Unlock()
	// Port first: a gRPC client that dials too early backs off for a second or more.
	if err := waitPort(ctx, p, spec.GRPCAddr); err != nil {
		return err
	}
	creds, err := s.Credentials(spec.BinaryName())
	if err != nil {
		return err
	}
	if err := waitHealthy(ctx, p, spec.GRPCAddr, creds); err != nil {
		return err
	}
	// frontdoor is only useful once Kafka clients can connect.
	if kafka, ok := spec.Ports["kafka"]; ok {
		if err := waitPort(ctx, p, c.addr(kafka)); err != nil {
			return fmt.Errorf("%s is SERVING but its Kafka listener is not up: %w", spec.Name, err)
		}
	}
	s.log.Info("serving", "service", spec.Name, "grpc", spec.GRPCAddr, "pid", p.Pid())
	return nil
}

// writeSecret writes value into a file only the owner can read, in the run directory, and
// returns its path: services read passwords from files, never from their environment.
func (s *Stack) writeSecret(name, value string) (string, error) {
	dir := filepath.Join(s.dir, "secrets")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, []byte(value+"\n"), 0o600)
}

// txnLogTable names the stack's transaction journal table after its run
// directory, unique per stack.
func (s *Stack) txnLogTable() string {
	var b strings.Builder
	b.WriteString("transactions_")
	for _, r := range strings.ToLower(filepath.Base(s.dir)) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// PKIDir is where the stack's CA and certificates are (devpki layout); empty files when the
// stack runs plaintext.
func (s *Stack) PKIDir() string { return filepath.Join(s.dir, "pki") }

// grpcSecurityEnv is the internal gRPC security of a service process, unless its spec chose
// its own: the certificate of its package, or plaintext.
func (s *Stack) grpcSecurityEnv(spec ServiceSpec) []string {
	for _, k := range []string{EnvGRPCTLSCA, EnvGRPCTLSCert, EnvGRPCTLSKey, EnvGRPCPlaintext} {
		if _, set := spec.Env[k]; set {
			return nil
		}
	}
	if s.cfg.GRPCPlaintext {
		return []string{EnvGRPCPlaintext + "=true"}
	}
	dir := s.PKIDir()
	return []string{
		EnvGRPCTLSCA + "=" + filepath.Join(dir, devpki.CAFile),
		EnvGRPCTLSCert + "=" + devpki.CertFile(dir, spec.BinaryName()),
		EnvGRPCTLSKey + "=" + devpki.KeyFile(dir, spec.BinaryName()),
	}
}

// Credentials are what a test or tool uses to call the stack's service of the given package
// over gRPC: the stack's own client certificate, checking that the server is that service
// (plaintext when the stack runs without TLS).
func (s *Stack) Credentials(pkg string) (credentials.TransportCredentials, error) {
	if s.cfg.GRPCPlaintext {
		return insecure.NewCredentials(), nil
	}
	cfg, err := devpki.ClientTLS(s.PKIDir(), ClientCertName, pkg)
	if err != nil {
		return nil, fmt.Errorf("stack: client certificate for %s: %w", pkg, err)
	}
	return credentials.NewTLS(cfg), nil
}

// StartService starts an extra service process next to the configured ones — e.g. a second
// frontdoor with SASL on other ports — and returns once it serves. spec.Name must be new and
// spec.Package one of ServiceNames; its binary is (re)built first. Stop ends it with the rest.
func (s *Stack) StartService(ctx context.Context, spec ServiceSpec) error {
	if !contains(ServiceNames, spec.Package) {
		return fmt.Errorf("stack: StartService %s: unknown package %q (known: %s)", spec.Name, spec.Package, strings.Join(ServiceNames, ", "))
	}
	if !namePattern.MatchString(spec.Name) {
		return fmt.Errorf("stack: StartService: bad name %q", spec.Name)
	}
	if s.Service(spec.Name) != nil {
		return fmt.Errorf("stack: StartService: a process named %s already exists", spec.Name)
	}
	if err := buildServices(ctx, s.cfg, []ServiceSpec{spec}); err != nil {
		return err
	}
	return s.startService(ctx, spec)
}

// Service returns the current process of the named service (ServiceSpec.Name, e.g.
// "transcodesvc-2") or Fluss process ("tablet"), or nil if there is none.
func (s *Stack) Service(name string) *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Spec returns how the named service was started.
func (s *Stack) Spec(name string) (ServiceSpec, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	spec, ok := s.specs[name]
	return spec, ok
}

// Kill SIGKILLs the named service's process group without any grace (a crash, for fault tests)
// and waits until it has exited. Restart brings it back.
func (s *Stack) Kill(name string) error {
	p := s.Service(name)
	if p == nil {
		return fmt.Errorf("stack: Kill: no process named %s", name)
	}
	signalGroup(p.Pid(), syscall.SIGKILL)
	select {
	case <-p.Done():
		s.log.Info("killed", "process", name, "pid", p.Pid())
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("stack: Kill %s (pid %d): still running 10s after SIGKILL", name, p.Pid())
	}
}

// StopService stops the named service (SIGTERM, then SIGKILL after the configured grace) and
// forgets it: Restart can no longer start it, StartService can start a new one of that name.
func (s *Stack) StopService(name string) error {
	p := s.Service(name)
	if p == nil {
		return fmt.Errorf("stack: StopService: no process named %s", name)
	}
	if _, ok := s.Spec(name); !ok {
		return fmt.Errorf("stack: StopService: %s is not a service (Fluss stops with the stack)", name)
	}
	err := p.Stop(s.cfg.StopGrace)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.procs {
		if q == p {
			s.procs = append(s.procs[:i], s.procs[i+1:]...)
			break
		}
	}
	delete(s.specs, name)
	return err
}

// Restart stops the named service or Fluss process (SIGTERM with the configured grace; nothing
// to do if it is already dead) and starts it again the same way, returning once it serves again:
// a service once healthy, a Fluss process once its port accepts and Fluss is ready again (the
// restarted tablet server keeps its id and data directory).
func (s *Stack) Restart(ctx context.Context, name string) error {
	spec, isService := s.Spec(name)
	s.mu.Lock()
	st, isFluss := s.fluss[name]
	s.mu.Unlock()
	if !isService && !isFluss {
		return fmt.Errorf("stack: Restart: no service or Fluss process named %s", name)
	}
	if p := s.Service(name); p != nil {
		if err := p.Stop(s.cfg.StopGrace); err != nil {
			return err
		}
	}
	if isService {
		return s.startService(ctx, spec)
	}
	p, err := s.startFlussProcess(ctx, st)
	if err != nil {
		return err
	}
	if err := waitFlussReady(ctx, s.cfg); err != nil {
		return fmt.Errorf("after restarting %s: %w", name, err)
	}
	s.log.Info("restarted", "process", name, "pid", p.Pid())
	return nil
}

// Dir is the run directory (data, configuration, logs/).
func (s *Stack) Dir() string { return s.dir }

// Config is the configuration the stack runs with.
func (s *Stack) Config() Config { return s.cfg }

// Processes lists the running children in start order.
func (s *Stack) Processes() []*Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Process(nil), s.procs...)
}

// Wait blocks until ctx ends (nil) or a child exits on its own (an error naming it, with its log
// tail). Either way the caller should Stop.
func (s *Stack) Wait(ctx context.Context) error {
	// One watcher per child, all owned by this call: they end when ctx or the first exit does.
	procs := s.Processes()
	exited := make(chan *Process, len(procs))
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, p := range procs {
		go func(p *Process) {
			select {
			case <-p.Done():
				exited <- p
			case <-watchCtx.Done():
			}
		}(p)
	}
	select {
	case <-ctx.Done():
		return nil
	case p := <-exited:
		s.keep = true
		return fmt.Errorf("%s exited unexpectedly (%v); log %s:\n%s", p.Name, p.ExitErr(), p.LogPath, indent(p.LogTail(30)))
	}
}

// Stop ends every child, newest first (services, then tablet, coordinator, ZooKeeper), and
// removes the run directory unless it is kept.
func (s *Stack) Stop() error {
	var errs []error
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		if err := p.Stop(s.cfg.StopGrace); err != nil {
			errs = append(errs, err)
		} else {
			s.log.Debug("stopped", "process", p.Name)
		}
	}
	if s.keep {
		// Without the pid file no later stack treats the directory as stale and deletes it.
		_ = os.Remove(filepath.Join(s.dir, pidFile))
	} else if len(errs) == 0 {
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// KeepDir makes Stop leave the run directory in place, e.g. because a test failed and its logs
// explain why.
func (s *Stack) KeepDir() { s.keep = true }

// Kept reports whether Stop leaves the run directory in place.
func (s *Stack) Kept() bool { return s.keep }

// EnvLines renders TestEnv as sorted `export K=V` shell lines.
func EnvLines(env map[string]string) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(env[k]))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,=@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// removeStaleRuns deletes run directories whose ferrystack is gone (killed before it could clean
// up; its children died with it through Pdeathsig).
func removeStaleRuns(runRoot string, log *slog.Logger) {
	entries, err := os.ReadDir(runRoot)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(runRoot, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, pidFile))
		if err != nil {
			continue // not ours, or kept on purpose after a failure: leave it
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			log.Info("removing stale run directory", "dir", dir, "pid", pid)
			_ = os.RemoveAll(dir)
		}
	}
}
